"""Java and JavaScript answers of BFCL, whose values a model gives as strings in the language's
syntax (`"true"`, `"5L"`, `new ArrayList<>(Arrays.asList(1, 2))`, `{limit: 50}`): BFCL's
checker parses them back (`java_type_converter`, `js_type_converter`) and compares the result
as it compares Python values. Each acceptable value becomes the strings that parse to it: a
`$string` (standardised where BFCL standardises) or an ECMA-262 `$regex`, anchored at both ends
(BFCL's Java collection parser searches, so it also accepts text after the value)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "long": int, "float": float, "double": float,
    "boolean": bool, "char": str, "String": str, "any": str,
    "Array": list, "ArrayList": list, "HashMap": dict,
}  # fmt: skip
"""BFCL's Java types it can parse (`JAVA_TYPE_CONVERSION` less the ones it raises on)."""
JS_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
    "dict": dict, "array": list, "any": str,
}  # fmt: skip
"""BFCL's JavaScript types (`JS_TYPE_CONVERSION`)."""
_DROPPED = " ,./_*^-"  # what BFCL's standardize_string removes
_SPACE = r"\s*"
_NEVER = "(?!)"  # a part no text matches: the whole value is then out of reach


class Unconvertible(ValueError):
    """A possible answer BFCL's checker could not grade either (it would raise)."""


def standardize(text: str) -> str:
    """BFCL's `standardize_string`: no spaces nor `,./-_*^`, lower case, `'` read as `"`."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def encoded_matcher(
    name: str, options: list[Any], declared: dict[str, Any], language: str
) -> list[Any]:
    """The acceptable strings of one Java or JavaScript parameter, one matcher per option
    (an option no string can reach, as BFCL parses, is left out)."""
    types = JAVA_TYPES if language == "java" else JS_TYPES
    kind = declared.get("type")
    if kind not in types:
        why = f"parameter {name!r} has {language} type {kind!r}, which BFCL cannot parse"
        raise Unconvertible(why)
    want = types[kind]
    items = declared.get("items")
    if kind in ("Array", "ArrayList", "array") and not isinstance((items or {}).get("type"), str):
        raise Unconvertible(f"parameter {name!r}: an array needs `items` with a type")
    given = [o for o in options if o != ""]
    answer_type = type(given[0]) if given else None
    accepted: list[Any] = []
    for option in options:
        if answer_type is not None and answer_type is not want:  # a variable's name
            found = [_variable(option, kind, want, language)]
        elif option == "":
            found = [{"$string": "", "normalise": "bfcl"}] if want is str else []
        else:
            found = _typed(name, option, kind, declared, language)
        accepted.extend(f for f in found if f is not None)
    return accepted


def _variable(option: Any, kind: str, want: type, language: str) -> Any:
    """An answer of another type than the declared one: BFCL compares the parsed value with
    `==`, so only a string that its parser leaves a string can equal a string answer, and a
    number only through the declared numeric type."""
    if isinstance(option, str):
        if want is not str and re.fullmatch(_scalar(kind, language, None) or _NEVER, option):
            return None  # it would parse to a number or a boolean, never equal to the name
        if language == "javascript" and want in (list, dict):  # its parser strips the text
            return _regex(rf"\s*{_literal(option)}\s*")
        return {"$string": option, "case": True}
    if type(option) in (int, float) and want in (int, float):
        if want is int and option != int(option):
            return None
        return _regex(_scalar(kind, language, option))
    return None


def _typed(name: str, option: Any, kind: str, declared: dict[str, Any], language: str) -> list[Any]:
    if kind in ("String", "any", "char"):
        if not isinstance(option, str):
            return []
        plain = {"$string": option, "normalise": "bfcl"}
        if language == "javascript" and kind == "String":  # a pair of quotes is dropped
            text = _normalised(option, "")
            return [plain, _regex(f"\"{text}\"|'{text}'")]
        return [plain]
    if kind in ("Array", "ArrayList", "array"):  # (an option of another type: out of reach)
        inner = declared["items"]["type"]  # (checked by the caller)
        if type(option) is not list:
            return []
        return [_regex(rf"\s*(?:{_array(name, option, kind, inner, language)})\s*")]
    if kind in ("HashMap", "dict"):
        if type(option) is not dict:
            return []
        return [
            _regex(rf"\s*(?:{_java_map(option)})\s*" if language == "java" else _js_object(option))
        ]
    if type(option) is bool:
        return [_regex(_scalar(kind, language, option))] if kind in ("boolean", "Boolean") else []
    if type(option) in (int, float):
        if JAVA_TYPES.get(kind, JS_TYPES.get(kind)) is int and option != int(option):
            return []
        return [_regex(_scalar(kind, language, option))]
    return []


def _regex(pattern: str | None) -> Any:
    """An anchored `$regex`; None when no string can be it (BFCL's parser never gives it)."""
    if pattern is None or _NEVER in pattern:
        return None
    return {"$regex": f"^(?:{pattern})$"}


def _scalar(kind: str, language: str, value: Any) -> str | None:
    """The strings BFCL's converter reads as `value` of a scalar type (all of them when
    `value` is None)."""
    if kind in ("boolean", "Boolean"):
        return ("true" if value else "false") if value is not None else "true|false"
    suffix = {"long": "[lL]", "float": "[fF]" if language == "java" else "", "Bigint": "n"}
    if kind in ("byte", "short", "integer", "long", "Bigint"):
        return _number(value, fraction=False) + suffix.get(kind, "")
    if kind in ("float", "double"):
        return _number(value, fraction=True) + suffix.get(kind, "")
    return None


def _number(value: Any, *, fraction: bool, loose: bool = False) -> str:
    """Decimal digits (`\\d+(\\.\\d+)?`, no exponent) whose value is `value`; any number when
    None. `loose`: as Python's `int()`/`float()` read (a `.` with no digits after it too)."""
    if value is None:
        return r"-?\d+(?:\.\d+)?" if fraction else r"-?\d+"
    text = format(Decimal(repr(float(value)) if fraction or loose else str(value)), "f")
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, _, part = digits.partition(".")
    part = part.rstrip("0")
    lead = "-?0+" if whole == "0" and not part else sign + ("0+" if whole == "0" else "0*" + whole)
    if part:
        return rf"{lead}\.{part}0*"
    zeros = r"(?:\.0*)?" if loose else r"(?:\.0+)?"
    return lead + zeros if fraction or loose else lead


def _normalised(text: str, banned: str) -> str:
    """A pattern of the strings that BFCL's standardize_string makes equal to `text`'s
    (letters in either case; spaces and `,./-_*^` anywhere; `'` for `"`), none of `banned`."""
    gap = "[" + "".join(_in_class(c) for c in _DROPPED if c not in banned) + "]*"
    parts = [gap]
    for char in standardize(text):
        options = {char, char.upper()} if char.upper().lower() == char else {char}
        if char == '"':
            options.add("'")
        allowed = sorted(c for c in options if len(c) == 1 and c not in banned)
        if not allowed:
            return _NEVER  # a character BFCL's parser would have cut the value at
        parts.append("[" + "".join(_in_class(c) for c in allowed) + "]" + gap)
    return "".join(parts)


def _in_class(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _literal(text: str) -> str:
    return "".join("\\" + c if c in "\\^$.|?*+()[]{}/" else c for c in text)


def _array(name: str, option: list[Any], kind: str, inner: str, language: str) -> str:
    if kind == "ArrayList":  # parse_arraylist: Arrays.asList(...) or {{ add(...); }}
        listed = _join([_java_item(name, item, inner, "quoted", ")") for item in option], ",")
        added = r"\s*;?\s*".join(
            rf"add\(\s*{_java_item(name, item, inner, 'quoted', ')')}\s*\)" for item in option
        )
        head = r"new\s+ArrayList<\w*>\("
        if not option:
            return head + r"\)(?:\s*\{\{\s*\}\})?"
        return rf"{head}Arrays\.asList\({listed}\)\)|{head}\)\s*\{{\{{\s*{added}\s*;?\s*\}}\}}"
    if kind == "Array":  # parse_array: new T[]{...}, each item converted as the item type
        items = _join([_java_item(name, item, inner, "bare", "}") for item in option], ",")
        return rf"new\s+\w+\[\]\s*\{{{items}\}}"
    items = _join([_js_item(name, item, inner) for item in option], ",")
    return rf"\s*(?:\[{items}\]|new\s+Array\({items}\))\s*"


def _join(items: list[str], separator: str) -> str:
    return _SPACE + (rf"\s*{separator}\s*".join(items)) + _SPACE


def _java_item(name: str, item: Any, inner: str, strings: str, banned: str) -> str:
    if inner in ("String", "char", "any"):
        if not isinstance(item, str):
            return _NEVER  # BFCL keeps the item a string: it never equals a number
        text = _normalised(item, "," + banned)
        # ArrayList drops one character each side (the quotes); Array keeps them
        if strings == "quoted" and inner in ("String", "char"):
            return rf"[^\s,]{text}[^\s,]"
        return text
    if inner in JAVA_TYPES and JAVA_TYPES[inner] in (int, float, bool):
        return _item_scalar(item, inner, "java")
    raise Unconvertible(f"parameter {name!r}: BFCL cannot parse a Java array of {inner!r}")


def _js_item(name: str, item: Any, inner: str) -> str:
    if inner == "String":
        if not isinstance(item, str):
            return _NEVER
        text = _normalised(item, ",])")
        return f"(?:\"{text}\"|'{text}'|{text})"
    if inner in JS_TYPES and JS_TYPES[inner] in (int, float, bool):
        return _item_scalar(item, inner, "javascript")
    raise Unconvertible(f"parameter {name!r}: BFCL cannot parse a JavaScript array of {inner!r}")


def _item_scalar(item: Any, inner: str, language: str) -> str:
    types = JAVA_TYPES if language == "java" else JS_TYPES
    numeric = types[inner] in (int, float)
    if numeric and type(item) in (int, float) and (types[inner] is float or item == int(item)):
        return _scalar(inner, language, item) or _NEVER
    if not numeric and type(item) is bool:
        return _scalar(inner, language, item) or _NEVER
    return _NEVER


def _java_map(option: dict[str, Any]) -> str:
    """parse_hashmap: `new HashMap<...>() {{ put("k", v); }}`, each value parse_java_value'd
    and compared as BFCL's dict_checker does."""
    puts = []
    for key, values in option_fields(option):
        value = _field_value(values, java=True)
        put = rf'put\("{_literal(key)}",\s*(?:{value})\s*\)\s*;?\s*'
        puts.append(f"(?:{put})?" if "" in values else put)
    block = rf"\s*\{{\s*\{{?\s*{''.join(puts)}\}}?\s*\}}"
    if all("" in values for _, values in option_fields(option)):
        block = f"(?:{block})?"  # `new HashMap<>()` alone is an empty map
    return rf"new\s+HashMap<.*?>\s*\(\){block}"


def _js_object(option: dict[str, Any]) -> str:
    """parse_js_collection(..., "dict"): `{key: value, ...}`, in the answer's key order."""
    pairs = []
    for key, values in option_fields(option):
        pair = rf"[\"']?{_literal(key)}[\"']?\s*:\s*(?:{_field_value(values, java=False)})"
        pairs.append((pair, "" in values))
    choices = []  # which pair comes first (the ones before it left out)
    for first, (pair, optional) in enumerate(pairs):
        rest = "".join(f"(?:\\s*,\\s*{p})" + ("?" if o else "") for p, o in pairs[first + 1 :])
        choices.append(pair + rest)
        if not optional:
            break
    else:
        choices.append("")
    return r"\s*\{\s*(?:" + "|".join(choices) + r")\s*\}\s*"


def option_fields(option: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """The keys of a dict option with their acceptable values. A bare value is read as its
    one option (BFCL iterates it: `"epoch_millis"` would accept `"e"`, not itself)."""
    return [(k, v if isinstance(v, list) else [v]) for k, v in option.items()]


def _field_value(values: list[Any], *, java: bool) -> str:
    """The text of one value inside a Java map or a JavaScript object that BFCL parses to one
    of `values` (strings standardised, numbers by value, lists exactly)."""
    found = []
    banned = '")' if java else "}:"
    for value in values:
        if isinstance(value, str):
            text = _normalised(value, banned)
            found.append(f'"{text}"|{text}' if java else f"[\"']*{text}[\"']*")
        elif type(value) is bool:
            found.append("true" if value else "false")
        elif type(value) in (int, float):
            number = _number(value, fraction=False, loose=True)
            found.append(number + "[lLfF]?" if java else number)
        elif isinstance(value, list) and not java:
            exact = [f"\"{_literal(v)}\"|'{_literal(v)}'" for v in value if isinstance(v, str)]
            if len(exact) == len(value):
                items = r"\s*,\s*".join(f"(?:{e})" for e in exact)
                found.append(rf"\[\s*{items}\s*\]")
    return "|".join(f for f in found if _NEVER not in f) or _NEVER

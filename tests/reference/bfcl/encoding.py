"""Values as a model writes them in BFCL's Java and JavaScript categories: strings in the
language's syntax. `style` "" is the plain way; "alt" another way BFCL's parser reads as the
same value (`5l`, `new ArrayList<Integer>() {{ add(1); }}`, `new Array(...)`, quoted keys);
"bad" a near miss it does not (`5` for a long, `True`, a float without its `f`)."""

from __future__ import annotations

import json
from typing import Any

_JAVA_ARRAYS = {"integer": "int", "long": "long", "String": "String", "char": "char"}


def encode(value: Any, declared: dict[str, Any], language: str, style: str = "") -> Any:
    """One value of a call as a model gives it (Python values stay as they are)."""
    if language == "python":
        return value
    kind = declared.get("type") or ""
    inner = (declared.get("items") or {}).get("type")
    if isinstance(value, str):
        if style == "alt" and language == "javascript" and kind == "String":
            return json.dumps(value)
        return value
    if isinstance(value, bool):
        text = "true" if value else "false"
        return text.capitalize() if style == "bad" else text
    if isinstance(value, (int, float)):
        return _number(value, kind, language, style)
    if isinstance(value, list):
        return _list(value, kind, inner, language, style)
    if isinstance(value, dict):
        return _map(value, language, style)
    return str(value)


def _number(value: float, kind: str, language: str, style: str) -> str:
    number = str(float(value) if kind in ("float", "double") else value)
    suffixes = {"long": "L", "Bigint": "n"} | ({"float": "f"} if language == "java" else {})
    suffix = suffixes.get(kind, "")
    if style == "alt":
        suffix = suffix.lower() if suffix == "L" else suffix.upper()
        if kind in ("integer", "long") and language == "java" and value >= 0:
            number = f"00{number}"  # leading zeros read as the same number
    elif style == "bad":
        suffix = "" if suffix else ("L" if language == "java" else "n")
    return f"{number}{suffix}"


def _list(value: list[Any], kind: str, inner: str | None, language: str, style: str) -> str:
    items = [_item(v, inner, language, style) for v in value]
    if language == "java" and kind == "ArrayList":
        if style == "alt":
            adds = " ".join(f"add({i});" for i in items)
            return f"new ArrayList<Object>() {{{{ {adds} }}}}"
        if style == "bad":
            return f"Arrays.asList({', '.join(items)})"
        return f"new ArrayList<>(Arrays.asList({', '.join(items)}))"
    if language == "java":
        if style == "bad":
            return "{" + ", ".join(items) + "}"
        space = " " if style == "alt" else ""
        return f"new {_JAVA_ARRAYS.get(inner or '', 'Object')}[]{space}{{{', '.join(items)}}}"
    if style == "alt":
        return f"new Array({', '.join(items)})"
    separator = "; " if style == "bad" else ", "
    return f"[{separator.join(items)}]"


def _map(value: dict[str, Any], language: str, style: str) -> str:
    items = {k: _item(v, None, language, style) for k, v in value.items()}
    if language == "java":
        puts = "".join(f'put("{k}", {v}); ' for k, v in items.items())
        if style == "bad":
            return f"Map.of({', '.join(f'{json.dumps(k)}, {v}' for k, v in items.items())})"
        generic = "<>" if style == "alt" else "<String, Object>"
        return f"new HashMap{generic}() {{{{ {puts}}}}}"
    if style == "bad":
        return ", ".join(f"{k}: {v}" for k, v in items.items())  # no braces
    key = (lambda k: json.dumps(k)) if style == "alt" else (lambda k: k)
    return "{" + ", ".join(f"{key(k)}: {v}" for k, v in items.items()) + "}"


def _item(value: Any, inner: str | None, language: str, style: str) -> str:
    if isinstance(value, str):
        if inner == "char":
            return f"'{value}'"
        return f"'{value}'" if style == "alt" and language == "javascript" else json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_item(v, None, language, style) for v in value) + "]"
    if inner == "long":
        return f"{value}L"
    return str(value)

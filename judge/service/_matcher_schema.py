"""The published JSON Schema of expected argument values: literals, and the matchers that can
sit at any depth of them (`{"$number": 3.5, "abs": 0.01}`, `{"$any": [...], "$optional":
true}`, ...). Built from the reader's own tables (`cases/_matcher_form`: the heads, the flags,
each head's options), so that the schema and the reader cannot drift apart.

What JSON Schema cannot say is left to the reader: `{"$int": 3.0}` (a float that JSON Schema
counts as an integer), a `$regex` that is no ECMA-262 expression, a `$date` that is no day.
"""

from __future__ import annotations

from typing import Any

from judge.cases._matcher_form import FLAGS, HEADS, OPTIONS

MATCHER_LIKE: dict[str, Any] = {
    "type": "object",
    "not": {"propertyNames": {"not": {"pattern": "^\\$"}}},
}
"""An object with a key beginning with `$`: a matcher (an unknown `$` key is refused, never
compared as a literal)."""
_ONE_KEY = ("$optional", "$absent", "$judge")
"""Keys about one argument or key, refused inside `$any` and `$unordered`."""
_ITEM = {"type": "array", "items": {"$ref": "#/$defs/ExpectedItem"}}
_HEADS: dict[str, tuple[dict[str, Any], str]] = {
    "$any": (_ITEM, "Any of these values (literals or matchers)."),
    "$number": ({"type": "number"}, "A number within `abs` or `rel` of this one."),
    "$int": ({"type": "integer"}, "This integer, and no float (`3`, not `3.0`)."),
    "$string": (
        {"type": "string"},
        "A string equal to this one once both are normalised as the options say; without "
        "options, as the case's value defaults say.",
    ),
    "$regex": (
        {"type": "string", "format": "regex"},
        "A string this ECMA-262 pattern matches, searched as a schema's `pattern` is: anchor "
        "it (`^...$`) for the whole string.",
    ),
    "$date": (
        {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "The same day (`YYYY-MM-DD`), written ISO, in words (`May 1st, 2024`) or numerically "
        "(`01/05/2024`, read as `order` says; without it only where both orders agree).",
    ),
    "$unordered": (_ITEM, "An array with these items in any order (a multiset)."),
    "$object": (
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/ExpectedValue"}},
        "An object whose keys match these (values may be matchers); other keys as `extra` says.",
    ),
    "$judge": (
        {"type": "string", "pattern": "\\S"},
        "What the value must be, in words, for the LLM judge (`judge grade`); `judge check` "
        "leaves the case undecided.",
    ),
}
"""Each head: the type of its value, and what it accepts."""
_FLAGS: dict[str, tuple[dict[str, Any], str]] = {
    "$optional": (
        {"type": "boolean"},
        "true: the value may be left out (alone: any value, or none).",
    ),
    "$absent": ({"const": True}, "Alone: the value must be left out."),
}
_OPTION_ABOUT = {
    "abs": "`$number`: the largest difference accepted.",
    "rel": "`$number`: the largest difference accepted, relative to the expected number.",
    "int": "`$number`: false refuses an integer (a float is expected, as in BFCL's lists of "
    "floats).",
    "case": "`$string`: false compares letter case aside.",
    "space": "`$string`: `collapse` reads runs of white space as one and trims the ends; "
    "`ignore` drops it.",
    "punct": "`$string`: `ignore` drops punctuation.",
    "normalise": "`$string`: `bfcl` compares as BFCL's checker does (spaces and `,./-_*^` "
    "dropped, letter case aside).",
    "order": "`$date`: how a numeric date reads: day first (`dmy`) or month first (`mdy`).",
    "extra": "`$object`: `forbid` (the default, as for a literal object) or `allow` other keys.",
}


def matcher_defs() -> dict[str, Any]:
    """The `$defs` of expected values: `ExpectedValue` (an argument's), `ExpectedItem` (one
    inside `$any` or `$unordered`), `Matcher` and `ItemMatcher`."""
    return {
        "ExpectedValue": _value(
            "Matcher",
            "An expected value: a literal JSON value (objects by key set, arrays in order, "
            "`1 == 1.0`, strings exactly unless the case's `match.values` says otherwise), or "
            "a matcher, an object with a key beginning with `$`, at any depth.",
        ),
        "ExpectedItem": _value(
            "ItemMatcher",
            "A value inside `$any` or `$unordered`: as an expected value, but neither left out "
            "(`$optional`, `$absent`) nor the judge's (`$judge`).",
        ),
        "Matcher": _matcher(),
        "ItemMatcher": {
            "type": "object",
            "description": "A matcher inside `$any` or `$unordered`: without `$optional`, "
            "`$absent` or `$judge`.",
            "allOf": [{"$ref": "#/$defs/Matcher"}],
            "propertyNames": {"not": {"enum": list(_ONE_KEY)}},
        },
    }


def _value(matcher: str, description: str) -> dict[str, Any]:
    # A literal's members are expected values in turn, wherever the literal sits.
    literal = {
        "additionalProperties": {"$ref": "#/$defs/ExpectedValue"},
        "items": {"$ref": "#/$defs/ExpectedValue"},
    }
    return {
        "description": description,
        "if": MATCHER_LIKE,
        "then": {"$ref": f"#/$defs/{matcher}"},
        "else": literal,
    }


def _matcher() -> dict[str, Any]:
    """Every key a matcher may have, then which go together: one head and its own options,
    with `$optional`; or a flag alone."""
    properties: dict[str, Any] = {}
    for key, (kind, about) in (*_HEADS.items(), *_FLAGS.items()):
        properties[key] = {**kind, "description": about}
    for options in OPTIONS.values():
        for key, choices in options.items():
            kind = {"type": "number", "minimum": 0} if choices is None else {"enum": [*choices]}
            properties[key] = {**kind, "description": _OPTION_ABOUT[key]}
    forms = [
        {"required": [head], "propertyNames": {"enum": [head, "$optional", *OPTIONS.get(head, {})]}}
        for head in HEADS
    ]
    forms += [{"required": [flag], "propertyNames": {"const": flag}} for flag in FLAGS]
    return {
        "type": "object",
        "description": "An expected value that says what it accepts: one head (`$any`, "
        "`$number`, `$int`, `$string`, `$regex`, `$date`, `$unordered`, `$object`, `$judge`) "
        'with its options, optionally `"$optional": true` (may be left out); or '
        '`{"$optional": true}` (any value, or none) or `{"$absent": true}` (must be left out) '
        "alone.",
        "properties": properties,
        "additionalProperties": False,
        "anyOf": forms,
    }

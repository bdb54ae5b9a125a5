"""MkDocs hooks: the reference pages are made from the code at build time, never by hand.

- The command line: `judge` loads its commands lazily (`judge.cli._main.LazyGroup`), and
  mkdocs-click lists only the commands a group already holds. Before the pages are rendered,
  every command the group lists is loaded into it, so the `::: mkdocs-click` block of
  `reference/cli.md` documents each one.
- Options without a default show none (not click's sentinel for "unset").
- The formats: a line `<!-- judge-schema NAME -->` in a page is replaced by the JSON Schema
  that `judge schema NAME` prints, as tables of fields and the schema itself.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import click

_MARKER = re.compile(r"^<!-- judge-schema (\w+) -->$", re.MULTILINE)


def on_config(config: Any) -> Any:
    """Load every lazily defined `judge` command into the group mkdocs-click reads."""
    from judge.cli._main import main

    ctx = click.Context(main, info_name="judge")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None and name not in main.commands:
            main.add_command(command, name)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each schema marker with the rendered output of `judge schema NAME`; a page
    with markers must have one for every format `judge schema` offers."""
    from judge.service._schema import SCHEMA_NAMES

    names = _MARKER.findall(markdown)
    if names and set(names) != set(SCHEMA_NAMES):
        raise ValueError(
            f"{page.file.src_uri}: the formats are {list(SCHEMA_NAMES)}, the page renders {names}"
        )
    return _MARKER.sub(lambda m: render_schema(m.group(1), judge_schema(m.group(1))), markdown)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs-click prints an option's default as click holds it, and click (8.3 on) holds "no
    default" as a sentinel: show nothing there rather than `Sentinel.UNSET`."""
    return html.replace("<code>Sentinel.UNSET</code>", "")


def judge_schema(name: str) -> dict[str, Any]:
    """What `judge schema NAME` prints, run as a user runs it (this interpreter's package)."""
    done = subprocess.run(
        [sys.executable, "-m", "judge", "schema", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"judge schema {name} failed: {done.stderr.strip()}")
    schema: dict[str, Any] = json.loads(done.stdout)
    return schema


def render_schema(name: str, schema: dict[str, Any]) -> str:
    """The schema as Markdown: its fields, each definition's fields, then the schema whole."""
    lines = [
        f"Printed by `judge schema {name}` (`$id`: `{schema.get('$id', '')}`).",
        "",
    ]
    if schema.get("description"):
        lines += [_one_line(schema["description"]), ""]
    lines += _fields_table(name, schema)
    for def_name, definition in sorted(schema.get("$defs", {}).items()):
        lines += ["", f"### `{def_name}` {{ #{_anchor(name, def_name)} }}", ""]
        if definition.get("description"):
            lines += [_one_line(definition["description"]), ""]
        if "properties" in definition:
            lines += _fields_table(name, definition)
        else:
            lines += [f"Type: {_type_of(name, definition)}."]
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    lines += ["", f'??? note "The whole schema: `judge schema {name}`"', ""]
    lines += ["    ```json", *("    " + line for line in text.splitlines()), "    ```", ""]
    return "\n".join(lines)


def _fields_table(name: str, schema: dict[str, Any]) -> list[str]:
    """A row per property: its type, whether it is required, and its description where any
    property has one."""
    required = set(schema.get("required", []))
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return ["Any object."]
    described = any(spec.get("description") for spec in properties.values())
    head = ["field", "type", "required", *(["description"] if described else [])]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for field, spec in properties.items():
        cells = [f"`{field}`", _type_of(name, spec), "yes" if field in required else ""]
        if described:
            cells.append(_one_line(spec.get("description", "")))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _type_of(name: str, spec: dict[str, Any]) -> str:
    """A short type: `string`, `boolean or null`, a link to a definition, `array of ...`."""
    if "$ref" in spec:
        target = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{target}](#{_anchor(name, target)})"
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " or ".join(dict.fromkeys(_type_of(name, s) for s in spec[key]))
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type_of(name, spec['items'])}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"object of {_type_of(name, spec['additionalProperties'])}"
    return str(kind) if kind else "any"


def _anchor(name: str, def_name: str) -> str:
    return f"{name}-{def_name.lower()}"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")

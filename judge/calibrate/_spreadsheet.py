"""A sample's labels through a spreadsheet (`judge labels export` / `import`): one CSV row per
case, what a labeller reads and the label columns to fill, read back by id.

A cell that a spreadsheet would run as a formula (one that begins with `=`, `+`, `-`, `@`, a
tab or a carriage return: OWASP's list for CSV injection) is written behind a single quote
(`'=HYPERLINK(...)`), ids included, and the import takes that quote off again: labels
exported and imported come back unchanged, an id `-1` as `-1`. A cell that begins with quotes
before such a character gets one more, so the quote taken off is always the one added. The
import reads UTF-8 (with or without a byte order mark) or the encoding given, and names the
byte it cannot read.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from pathlib import Path
from typing import Any

from judge._errors import InputError
from judge.cases._case import Case
from judge.cases._json import dumps, loads
from judge.checks._check import check_case

CSV_COLUMNS = (
    "id",
    "request",
    "tools",
    "response_text",
    "calls",
    "selection",
    "arguments",
    "answer",
    "note",
)
_LABEL_COLUMNS = ("selection", "arguments", "answer")
_FORMULA = re.compile("'*[=+\\-@\t\r]")
"""A cell a spreadsheet would read as a formula, after any quotes already before it."""


def escaped(cell: str) -> str:
    """`cell` as written to the sheet: behind a single quote where it could run as a formula."""
    return "'" + cell if _FORMULA.match(cell) else cell


def unescaped(cell: str) -> str:
    """A cell as read back: the quote `escaped` put before it taken off."""
    return cell[1:] if cell.startswith("'") and _FORMULA.match(cell, 1) else cell


def export_csv(path: str | Path, cases: list[Case]) -> None:
    """One row per case: what a labeller needs to read, and empty label columns to fill."""
    from judge.judging._prompt import rubric_variables

    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for case in cases:
            variables = rubric_variables(case, check_case(case))
            request = "\n".join(
                f"[{m['role']}] {m['content']}" for m in variables["conversation"] if m["content"]
            )
            calls = "\n".join(
                f"#{c['index']} {c['name']} {_json(c['arguments'])}" for c in variables["calls"]
            )
            labels = case.labels
            row = [
                case.id,
                request,
                ", ".join(variables["tool_names"]),
                variables["response_text"] or "",
                calls,
                (labels.selection if labels else None) or "",
                (labels.arguments if labels else None) or "",
                (labels.answer if labels else None) or "",
                str(case.meta.get("label_note", "")),
            ]
            writer.writerow([escaped(cell) for cell in row])


def import_csv(
    csv_path: str | Path, raw: list[bytes], cases: list[Case], encoding: str = "utf-8"
) -> list[bytes]:
    """The JSONL lines with the labels (and notes) filled in from the CSV, matched by id;
    `InputError` naming the file and line of what cannot be read."""
    labels = _read_labels(csv_path, encoding)
    out = []
    for line, case in zip(raw, cases, strict=True):
        row = labels.get(case.id)
        if row is None:
            out.append(line)
            continue
        data: dict[str, Any] = loads(line)
        found = {k: row[k].strip().lower() for k in _LABEL_COLUMNS if row[k].strip()}
        if found:
            data["labels"] = {**(data.get("labels") or {}), **found}
        if row["note"].strip():  # kept as written: what was exported comes back the same
            data["meta"] = {**(data.get("meta") or {}), "label_note": row["note"]}
        out.append(dumps(data))
    return out


def _read_labels(csv_path: str | Path, encoding: str) -> dict[str, dict[str, str]]:
    """The label columns and note of each row, by id, the quotes of `escaped` taken off."""
    reader = csv.DictReader(io.StringIO(read_text(csv_path, encoding), newline=""))
    labels: dict[str, dict[str, str]] = {}
    try:
        if "id" not in (reader.fieldnames or ()):
            raise InputError(f"{csv_path}:1: no `id` column (labels find their case by id)")
        number = reader.line_num  # the line the row before ends on (a cell may span lines)
        for read in reader:
            row = {k: unescaped(read.get(k) or "") for k in ("id", *_LABEL_COLUMNS, "note")}
            for column in _LABEL_COLUMNS:
                value = row[column].strip().lower()
                if value not in ("", "correct", "incorrect"):
                    raise InputError(
                        f"{csv_path}:{number + 1}: {column} must be correct, "
                        f"incorrect or empty, not {value!r}"
                    )
            labels[row["id"]] = row
            number = reader.line_num
    except csv.Error as exc:
        raise InputError(f"{csv_path}:{reader.line_num}: not CSV: {exc}") from None
    return labels


def read_text(path: str | Path, encoding: str) -> str:
    """A sheet's text in `encoding` (UTF-8's byte order mark left out); `InputError` naming
    the first byte that is not of it, with its offset and line."""
    try:
        data = Path(path).read_bytes()
        codec = codecs.lookup(encoding).name
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except LookupError:
        raise InputError(f"{path}: unknown encoding {encoding!r}") from None
    skipped = 0
    if codec in ("utf-8", "utf-8-sig"):
        codec, skipped = "utf-8", len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skipped:].decode(codec)
    except UnicodeDecodeError as exc:
        at = skipped + exc.start
        line = data.count(b"\n", 0, at) + 1
        raise InputError(
            f"{path} is not {encoding} (byte 0x{data[at]:02X} at offset {at}, on line {line}, "
            f"is not {encoding} text): save it as UTF-8, or name its encoding with --encoding "
            "(cp1252, often, for a sheet Excel on Windows saved as plain CSV)"
        ) from None


def _json(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value).decode()

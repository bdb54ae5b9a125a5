"""The hand labels of a sample file, as `judge label`, the CSV round trip and `judge review`
all read and write them: `labels.selection`, `labels.arguments` (`null`: not applicable),
`labels.answer`, who gave them and when (`labels.reviewer`, `labels.labelled_at`), and the note
in `meta.label_note`. A write replaces the file whole and reaches the disk before it returns."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from judge._errors import InputError
from judge.calibrate._sample import read_lines
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._json import dumps, loads
from judge.cases._loading import read_line
from judge.judging._questions import ends_in_text

LabelState = Literal["labelled", "partial", "unlabelled"]
NOT_APPLICABLE = "not_applicable"
"""How an `arguments: null` label is named outside the file."""
LABEL_FIELDS = ("selection", "arguments", "answer")
NOTE_KEY = "label_note"


def needs(case: Case) -> dict[str, bool]:
    """Which labels the labelling rule asks of a case: selection always, arguments when it
    calls a tool, answer when it ends in text."""
    return {"selection": True, "arguments": bool(case.tool_calls), "answer": ends_in_text(case)}


def label_state(labels: dict[str, Any] | None, case: Case) -> LabelState:
    """`labelled` when every label the case needs is given, `unlabelled` when none is,
    `partial` otherwise. `arguments: null` is the answer "not applicable"; so is leaving the
    key out after an `incorrect` selection (the labelling rule: calls that should not have
    been made leave nothing to judge), but not after a `correct` one."""
    labels = labels or {}
    wanted = [name for name, needed in needs(case).items() if needed]
    if labels.get("selection") == "incorrect" and "arguments" not in labels:
        wanted = [name for name in wanted if name != "arguments"]
    given = [name for name in wanted if name in labels]
    if len(given) == len(wanted):
        return "labelled"
    return "partial" if any(name in labels for name in LABEL_FIELDS) else "unlabelled"


def shown_labels(row: dict[str, Any]) -> dict[str, str | None]:
    """The labels of a row as a reviewer sees them: `not_applicable` for `arguments: null`,
    None for a label not given."""
    labels = row.get("labels") or {}
    shown: dict[str, str | None] = {name: labels.get(name) for name in LABEL_FIELDS}
    if "arguments" in labels and labels["arguments"] is None:
        shown["arguments"] = NOT_APPLICABLE
    return shown


def note_of(row: dict[str, Any]) -> str:
    return str((row.get("meta") or {}).get(NOTE_KEY, ""))


def revision(row: dict[str, Any]) -> str:
    """A short hash of a row's labels and note: what a reviewer saw, to tell whether someone
    else changed them since."""
    seen = {"labels": row.get("labels") or {}, "note": note_of(row)}
    return hashlib.sha256(dumps(seen, sort_keys=True)).hexdigest()[:16]


def user_name() -> str | None:
    """Who is labelling, by default: the user name (None where the system has none for
    this uid, as in some containers)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def stamped(labels: dict[str, Any], reviewer: str | None) -> dict[str, Any]:
    """The labels with who gave them and when."""
    kept = {k: v for k, v in labels.items() if k != "reviewer"}  # never the last one's name
    stamp = {"labelled_at": datetime.now(UTC).isoformat(timespec="seconds")}
    return {**kept, **({"reviewer": reviewer} if reviewer else {}), **stamp}


def write_rows(path: str | Path, rows: list[bytes]) -> None:
    """The sample file's lines, replaced whole and synced: valid JSON Lines at every moment."""
    write_atomically(path, b"".join(r + b"\n" for r in rows), durable=True)


@dataclass(frozen=True)
class Written:
    """A label write: the row as it is now, and what someone else had written since the
    writer last read it (None: nobody)."""

    row: dict[str, Any]
    case: Case
    conflict: dict[str, Any] | None


class LabelFile:
    """A sample file labelled by several writers at once (browser tabs, `judge label`): each
    write re-reads the file, changes one case's line and leaves the others byte for byte,
    so the last write wins per case and no other answer is lost."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's threads, and other processes (`judge label`, another review),
        one at a time: a lock file beside the sample (`flock`, where the system has it)."""
        with self._lock, open(self.path.with_name(self.path.name + ".lock"), "a") as handle:
            try:
                import fcntl
            except ImportError:  # no flock here: this process's lock only
                yield
                return
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def read(self) -> tuple[list[dict[str, Any]], list[Case]]:
        """The rows and their cases; ids must be unique (a label names its case by id)."""
        raw, cases = read_lines(str(self.path))
        seen: dict[str, int] = {}
        for number, case in enumerate(cases, start=1):
            if case.id in seen:
                raise InputError(
                    f"{self.path}: case id {case.id!r} is on lines {seen[case.id]} and {number}: "
                    "labels name their case by id, so ids must be unique"
                )
            seen[case.id] = number
        return [loads(line) for line in raw], cases

    def rewrite(
        self,
        change: Callable[[list[bytes], list[Case]], list[bytes]],
        to: str | Path | None = None,
    ) -> None:
        """Replace the file's lines (or write them `to` another file) with `change(lines,
        cases)`, taking turns with every other writer as `write` does (`judge labels
        import`)."""
        with self._locked():
            raw, cases = read_lines(str(self.path))
            write_rows(to or self.path, change(raw, cases))

    def write(
        self,
        case_id: str,
        changes: dict[str, str | None],
        *,
        reviewer: str | None = None,
        seen: str | None = None,
    ) -> Written:
        """Set (or, with None, clear) the labels and note named in `changes` on one case.
        `arguments: not_applicable` is written `null`, as `judge label` writes it. `seen`:
        the revision the writer read; when the case has changed since, the write still
        wins, and `conflict` says what it replaced. KeyError: no such case."""
        with self._locked():
            raw, cases = read_lines(str(self.path))
            index = next((i for i, c in enumerate(cases) if c.id == case_id), None)
            if index is None:
                raise KeyError(case_id)
            row = loads(raw[index])
            conflict = None
            if seen is not None and seen != revision(row):
                conflict = {"labels": shown_labels(row), "note": note_of(row)}
            labels = dict(row.get("labels") or {})
            for name in LABEL_FIELDS:
                if name not in changes:
                    continue
                value = changes[name]
                if value is None:
                    labels.pop(name, None)
                else:
                    labels[name] = None if value == NOT_APPLICABLE else value
            if any(name in changes for name in LABEL_FIELDS):
                labels = stamped(labels, reviewer)
            row["labels"] = labels
            if "note" in changes:
                meta = {k: v for k, v in (row.get("meta") or {}).items() if k != NOTE_KEY}
                row["meta"] = {**meta, **({NOTE_KEY: changes["note"]} if changes["note"] else {})}
            raw[index] = dumps(row)
            updated = read_line(raw[index], source=str(self.path), line=index + 1)
            if not isinstance(updated, Case):  # a label the case model refuses: not written
                raise updated
            write_rows(self.path, raw)
            return Written(row, updated, conflict)

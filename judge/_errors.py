"""The exceptions this package raises.

    JudgeError                 base of everything below
    ├── InputError             an input cannot be read at all (missing file, not UTF-8 text)
    └── CaseError              one case is malformed; says where (file, line, case id, JSON pointer)

A malformed case never takes a batch down: `check` turns it into a result with an
`InvalidCase` failure, and `load_cases` collects it in `LoadedCases.errors`. A case holding a
key the format does not know is read all the same, with an `UnknownFieldWarning` (a
`UserWarning`), unless read strictly. A case file that is not JSON Lines but one JSON array of
cases (or cases pretty-printed over several lines) is read all the same, with a
`CaseFileWarning`; one in UTF-16 or UTF-32, or otherwise not UTF-8, is an `InputError`.
"""

from __future__ import annotations


class JudgeError(Exception):
    """Base class of every error raised by `judge`."""


class InputError(JudgeError):
    """An input file or stream cannot be read at all."""


class CaseError(JudgeError, ValueError):
    """A case that cannot be loaded.

    `source` is the file (or "<dataframe>", "<object>"), `line` the 1-based line or row,
    `case_id` the id when it could be read, and `pointer` the JSON pointer of the bad field.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        line: int | None,
        case_id: str | None = None,
        pointer: str = "",
    ) -> None:
        self.reason = message
        self.source = source
        self.line = line
        self.case_id = case_id
        self.pointer = pointer
        super().__init__(self._describe())

    @property
    def location(self) -> str:
        """`file:line` (or just the source when there is no line)."""
        return self.source if self.line is None else f"{self.source}:{self.line}"

    def _describe(self) -> str:
        where = self.location
        if self.case_id is not None:
            where += f" (case {self.case_id!r})"
        if self.pointer:
            where += f" at {self.pointer}"
        return f"{where}: {self.reason}"


class UnknownFieldWarning(UserWarning):
    """A case holds a key the format does not know (`/mesages`): it was read as if the key were
    absent. The message names file, line, case, pointer and the nearest known key."""


class CaseFileWarning(UserWarning):
    """A case file is not JSON Lines, yet was read: one JSON array of cases, or cases spread
    over several lines each. The message names the file and how it was read; each case's
    errors name the line it starts on and, in an array, its JSON pointer (`/3`)."""

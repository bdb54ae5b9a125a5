"""Rubrics: Jinja templates with a TOML header, rendered in a sandbox into chat messages.

A rubric file starts with a header between `+++` lines, then defines two blocks:

    +++
    name = "selection"
    version = "1.0"
    dimension = "selection"          # or "arguments", "trajectory", "answer", "value"
    labels = ["correct", "incorrect"]
    +++
    {% block system %}...{% endblock %}
    {% block user %}...{% endblock %}

Untrusted text (messages, arguments) can never close the rubric's own `<tags>`: every value a
template prints has `<` and `>` escaped as `\\u003c` / `\\u003e`, and `tojson` does the same.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from jinja2 import Template, TemplateError, TemplateSyntaxError, meta
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge._errors import JudgeError
from judge.checks._outcome import RubricRef
from judge.judging._sandbox import ENV, cut_middle

Dimension = Literal["selection", "arguments", "trajectory", "answer", "value"]
_LABELS: dict[str, tuple[str, ...]] = {
    "selection": ("correct", "incorrect"),
    "arguments": ("correct", "incorrect", "not_applicable"),
    "trajectory": ("correct", "incorrect"),
    "answer": ("correct", "incorrect"),
    "value": ("yes", "no"),
}
# What every rubric may use; anything else is refused when the rubric is loaded.
VARIABLES = frozenset(
    (
        "conversation",
        "tools",
        "tool_names",
        "response_text",
        "calls",
        "judged_calls",
        "findings",
        "ungrounded",
        "origins",
        "injection",
        "steps",
        "expected_answer",
        "judged_value",
    )
)


class RubricError(JudgeError):
    """A rubric file that cannot be used; names the file and what is wrong."""


class RenderError(RubricError, TemplateError):
    """A rubric that loaded fine cannot render one case (a filter given a value of the wrong
    type, say): that case gets `judge_error`, the batch goes on."""


class Asked(BaseModel):
    """One narrow question of a scored rubric, asked after the rendered case and answered
    with one token."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str
    """In an arguments rubric, `{call}` is the call's number (counted from 1)."""
    when: Literal["always", "called", "not_called"] = "always"
    """Asked only when the response calls a tool (`called`), or only when it does not."""


class Combine(BaseModel):
    """How the answers become a verdict: P(correct) = sigmoid(bias + sum of weight x
    feature), a feature being the log-odds of a question's first answer (`yes`) or a count
    from code (`CODE_FEATURES`). The label is `correct` when P(correct) >= threshold; its
    confidence is P(correct), or 1 - it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bias: float = 0.0
    weights: dict[str, float]
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0)


CODE_FEATURES = frozenset((
    "ungrounded", "unused", "unsaid_options", "other_records", "word_margin", "repeated",
    "guessed_required", "best_fit", "unsupported", "tool_errors", "injection",
))  # fmt: skip
"""Features a scored rubric may weigh besides its questions (`judge.checks._grounding`):
`ungrounded`, the call's values found nowhere in the conversation; `unused`, the numbers and
quoted phrases of the user's last message that no call holds; for arguments,
`unsaid_options`, the call's enum values the user never said where they said another option,
and `other_records`, 1 where the call holds a value of a listed record that fits the user's
words worse than another record; for selection with calls, `word_margin`, how many more of
the user's words the called tool shares than the closest other tool, `repeated`, the calls
that repeat an earlier one exactly, and `guessed_required`, the values of required parameters
found nowhere in the conversation; without calls, `best_fit`, the most of the user's words
one tool shares; for answers, `unsupported`, the reply's numbers found nowhere earlier in the
conversation, and `tool_errors`, the tool results that report an error; for calls, both
dimensions, `injection`, the call's injection evidence (`judge.checks._injection`: values or
an action that only instructions in a tool result gave), absent where there is none."""


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str
    dimension: Dimension
    labels: tuple[str, ...]
    description: str = ""
    reasoning_max_length: int | None = None
    """`maxLength` of the free-text reasoning in the reply schema (keeps a small judge brief)."""
    per_call: bool = False
    """Arguments only: ask once per call instead of once for all the calls of a case."""
    decide_action: bool = False
    """Selection only: the judge first names the action the request needs and the action the
    assistant took; the verdict follows from the two (for a small judge, which is better at
    classifying than at comparing)."""
    answers: tuple[str, ...] = ()
    """A scored rubric: its `questions` are answered with one of these words (the first
    is the one that speaks for `correct`), read from token logprobs, never generated text."""
    questions: tuple[Asked, ...] = ()
    combine: dict[Literal["called", "not_called"], Combine] = Field(default_factory=dict)
    """A scored rubric's combination, for responses with calls and without."""
    max_prompt_chars: int | None = Field(default=None, ge=1000)
    """A rendered case longer than this is cut in the middle, with a marker (a small judge's
    context is short); a character outside ASCII counts as four."""


@dataclass(frozen=True)
class Rubric:
    """One loaded rubric."""

    name: str
    version: str
    dimension: Dimension
    labels: tuple[str, ...]
    reasoning_max_length: int | None
    per_call: bool
    decide_action: bool
    path: str
    sha256: str
    source: str
    template: Template = field(repr=False, compare=False)
    """Compiled once, when the rubric is loaded."""
    answers: tuple[str, ...] = ()
    questions: tuple[Asked, ...] = ()
    combine: dict[str, Combine] = field(default_factory=dict, compare=False)
    max_prompt_chars: int | None = None

    @property
    def scored(self) -> bool:
        """Answered with one token per question, scored by logprobs (no generated JSON)."""
        return bool(self.answers)

    @property
    def ref(self) -> RubricRef:
        return RubricRef(name=self.name, version=self.version, sha256=self.sha256)

    def render(self, variables: dict[str, Any]) -> list[dict[str, str]]:
        """The chat messages for these variables: a system and a user message (cut in the
        middle, with a marker, past the rubric's `max_prompt_chars`)."""
        try:
            context = self.template.new_context(variables)
            messages = [
                {"role": role, "content": "".join(self.template.blocks[role](context)).strip()}
                for role in ("system", "user")
            ]
        except Exception as exc:  # any error of the template's own code, for this case
            raise RenderError(f"{self.path}: {type(exc).__name__}: {exc}") from exc
        if self.max_prompt_chars is not None:
            messages[1]["content"] = cut_middle(messages[1]["content"], self.max_prompt_chars)
        return messages


@dataclass(frozen=True)
class RubricSet:
    """The rubric for each dimension."""

    selection: Rubric
    arguments: Rubric
    trajectory: Rubric | None = None
    """Asked only when trajectories are judged; the built-in one when a folder has none."""
    answer: Rubric | None = None
    """Asked only when answers are judged; the built-in one when a folder has none."""
    value: Rubric | None = None
    """Asked of each `$judge` value (yes or no); the built-in one when a folder has none.
    Outside `refs` and `all`: no calibration or probe reads it."""

    @property
    def refs(self) -> tuple[RubricRef, ...]:
        return (self.selection.ref, self.arguments.ref)

    @property
    def all(self) -> tuple[Rubric, ...]:
        extra = tuple(r for r in (self.trajectory, self.answer) if r is not None)
        return (self.selection, self.arguments, *extra)

    def named(self, name: str) -> Rubric:
        every = self.all if self.value is None else (*self.all, self.value)
        for rubric in every:
            if rubric.name == name or rubric.dimension == name:
                return rubric
        have = ", ".join(repr(r.name) for r in every)
        raise RubricError(f"no rubric named {name!r} (have {have})")


def builtin_rubrics_dir(kind: str = "default") -> Path:
    """The rubrics shipped with the package (`default`, or `small` for a small local judge)."""
    shipped = Path(str(resources.files("judge"))) / "rubrics" / kind
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "rubrics" / kind  # a source checkout


BRIEF_REASONING = 200
"""The reasoning length a built-in rubric standing in for a short-context folder is held to
(as `rubrics/small` holds its own): the schema's `maxLength` ends a small model's loop."""


def load_rubrics(directory: str | Path | None = None, *, kind: str = "default") -> RubricSet:
    """Load the `*.j2` rubrics of a directory: exactly one per dimension (selection and
    arguments at least; the built-in trajectory, answer and value rubrics stand in for missing
    ones, cut at the folder's smallest `max_prompt_chars` where its rubrics set one, with
    brief reasoning: a folder made for a small judge keeps every prompt and reply within its
    context)."""
    folder = Path(directory) if directory is not None else builtin_rubrics_dir(kind)
    if not folder.is_dir():
        raise RubricError(f"{folder}: not a directory of rubrics")
    found: dict[str, Rubric] = {}
    for path in sorted(folder.glob("*.j2")):
        rubric = load_rubric(path)
        if rubric.dimension in found:
            raise RubricError(
                f"{folder}: two rubrics for {rubric.dimension!r}: "
                f"{Path(found[rubric.dimension].path).name} and {path.name}"
            )
        found[rubric.dimension] = rubric
    missing = [d for d in ("selection", "arguments") if d not in found]
    if missing:
        raise RubricError(f"{folder}: no rubric for {', '.join(missing)} (*.j2 files)")
    caps = [r.max_prompt_chars for r in found.values() if r.max_prompt_chars is not None]
    for dimension in ("trajectory", "answer", "value"):
        if dimension not in found:
            shipped = builtin_rubrics_dir("default") / f"{dimension}.j2"
            if shipped.is_file():
                stand_in = load_rubric(shipped)
                if caps and (stand_in.max_prompt_chars or min(caps) + 1) > min(caps):
                    stand_in = replace(
                        stand_in,
                        max_prompt_chars=min(caps),
                        reasoning_max_length=stand_in.reasoning_max_length or BRIEF_REASONING,
                    )
                found[dimension] = stand_in
    return RubricSet(
        selection=found["selection"],
        arguments=found["arguments"],
        trajectory=found.get("trajectory"),
        answer=found.get("answer"),
        value=found.get("value"),
    )


def load_rubric(path: str | Path) -> Rubric:
    """Load and check one rubric file: header, template syntax, blocks and variables."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    header_text, body, offset = _split(text, path)
    try:
        header = _Header.model_validate(tomllib.loads(header_text))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise RubricError(f"{path}: bad header: {exc}") from None
    if header.labels != _LABELS[header.dimension]:
        raise RubricError(
            f"{path}: a {header.dimension} rubric returns the labels "
            f"{list(_LABELS[header.dimension])}, not {list(header.labels)}"
        )
    try:
        parsed = ENV.parse(body)
        template = ENV.from_string(body)
    except TemplateSyntaxError as exc:
        raise RubricError(f"{path}:{exc.lineno + offset}: {exc.message}") from None
    unknown = meta.find_undeclared_variables(parsed) - VARIABLES
    if unknown:
        raise RubricError(
            f"{path}: unknown variables {sorted(unknown)}; a rubric may use {sorted(VARIABLES)}"
        )
    for block in ("system", "user"):
        if block not in template.blocks:
            raise RubricError(f"{path}: missing {{% block {block} %}}")
    _check_scored(header, path)
    return Rubric(
        name=header.name,
        version=header.version,
        dimension=header.dimension,
        labels=header.labels,
        reasoning_max_length=header.reasoning_max_length,
        per_call=header.per_call,
        decide_action=header.decide_action,
        path=str(path),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        source=body,
        template=template,
        answers=header.answers,
        questions=header.questions,
        combine={str(branch): combine for branch, combine in header.combine.items()},
        max_prompt_chars=header.max_prompt_chars,
    )


def _check_scored(header: _Header, path: Path) -> None:
    """A scored rubric's questions and combination fit together; other rubrics have none."""
    if not header.answers:
        if header.questions or header.combine:
            raise RubricError(f"{path}: questions and combine need `answers` (the answer words)")
        return
    if header.dimension == "trajectory":
        raise RubricError(f"{path}: a trajectory rubric cannot be scored")
    if len(header.answers) < 2 or len(set(a.lower() for a in header.answers)) < len(header.answers):
        raise RubricError(f"{path}: answers needs two or more distinct words")
    if not header.questions:
        raise RubricError(f"{path}: a scored rubric needs [[questions]]")
    ids = [q.id for q in header.questions]
    if len(set(ids)) < len(ids):
        raise RubricError(f"{path}: two questions share an id")
    if header.dimension == "value":  # P(the first answer) is the verdict: nothing to combine
        if len(ids) != 1 or header.combine:
            raise RubricError(f"{path}: a scored value rubric asks one question, no [combine]")
        return
    for branch in ("called", "not_called"):
        if branch not in header.combine:
            if header.dimension == "arguments" and branch == "not_called":
                continue  # argument verdicts are only ever about calls
            raise RubricError(f"{path}: no [combine.{branch}]")
        asked = {q.id for q in header.questions if q.when in ("always", branch)}
        unknown = set(header.combine[branch].weights) - asked - CODE_FEATURES
        if unknown:
            raise RubricError(
                f"{path}: [combine.{branch}] weighs {sorted(unknown)}, which are neither "
                f"questions asked there ({sorted(asked)}) nor {sorted(CODE_FEATURES)}"
            )


def _split(text: str, path: Path) -> tuple[str, str, int]:
    """The header, the template, and the number of file lines before the template."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "+++":
        raise RubricError(f"{path}: a rubric starts with a TOML header between +++ lines")
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "+++":
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]), index + 1
    raise RubricError(f"{path}: the header is not closed by a +++ line")

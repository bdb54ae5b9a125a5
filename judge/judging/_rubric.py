"""Rubrics: Jinja templates with a TOML header, rendered in a sandbox into chat messages.

A rubric file starts with a header between `+++` lines, then defines two blocks:

    +++
    name = "selection"
    version = "1.0"
    dimension = "selection"          # or "arguments", or "trajectory"
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
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from jinja2 import StrictUndefined, Template, TemplateError, TemplateSyntaxError, meta
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, ValidationError

from judge._errors import JudgeError
from judge.checks._outcome import RubricRef

Dimension = Literal["selection", "arguments", "trajectory"]
_LABELS: dict[str, tuple[str, ...]] = {
    "selection": ("correct", "incorrect"),
    "arguments": ("correct", "incorrect", "not_applicable"),
    "trajectory": ("correct", "incorrect"),
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
        "steps",
    )
)


class RubricError(JudgeError):
    """A rubric file that cannot be used; names the file and what is wrong."""


class RenderError(RubricError, TemplateError):
    """A rubric that loaded fine cannot render one case (a filter given a value of the wrong
    type, say): that case gets `judge_error`, the batch goes on."""


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


def _neutralise(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    # Anything else is printed as text (a dict or list as its repr): escape that text.
    return str(value).replace("<", "\\u003c").replace(">", "\\u003e")


_ENV = SandboxedEnvironment(
    undefined=StrictUndefined,
    autoescape=False,
    finalize=_neutralise,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
)
_ENV.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}


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

    @property
    def ref(self) -> RubricRef:
        return RubricRef(name=self.name, version=self.version, sha256=self.sha256)

    def render(self, variables: dict[str, Any]) -> list[dict[str, str]]:
        """The chat messages for these variables: a system and a user message."""
        try:
            context = self.template.new_context(variables)
            return [
                {"role": role, "content": "".join(self.template.blocks[role](context)).strip()}
                for role in ("system", "user")
            ]
        except Exception as exc:  # any error of the template's own code, for this case
            raise RenderError(f"{self.path}: {type(exc).__name__}: {exc}") from exc


@dataclass(frozen=True)
class RubricSet:
    """The rubric for each dimension."""

    selection: Rubric
    arguments: Rubric
    trajectory: Rubric | None = None
    """Asked only when trajectories are judged; the built-in one when a folder has none."""

    @property
    def refs(self) -> tuple[RubricRef, ...]:
        return (self.selection.ref, self.arguments.ref)

    @property
    def all(self) -> tuple[Rubric, ...]:
        extra = (self.trajectory,) if self.trajectory is not None else ()
        return (self.selection, self.arguments, *extra)

    def named(self, name: str) -> Rubric:
        for rubric in self.all:
            if rubric.name == name or rubric.dimension == name:
                return rubric
        have = ", ".join(repr(r.name) for r in self.all)
        raise RubricError(f"no rubric named {name!r} (have {have})")


def builtin_rubrics_dir(kind: str = "default") -> Path:
    """The rubrics shipped with the package (`default`, or `small` for a small local judge)."""
    shipped = Path(str(resources.files("judge"))) / "rubrics" / kind
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "rubrics" / kind  # a source checkout


def load_rubrics(directory: str | Path | None = None, *, kind: str = "default") -> RubricSet:
    """Load the `*.j2` rubrics of a directory: exactly one per dimension."""
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
    trajectory = found.get("trajectory")
    if trajectory is None:
        shipped = builtin_rubrics_dir("default") / "trajectory.j2"
        trajectory = load_rubric(shipped) if shipped.is_file() else None
    return RubricSet(
        selection=found["selection"], arguments=found["arguments"], trajectory=trajectory
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
        parsed = _ENV.parse(body)
        template = _ENV.from_string(body)
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

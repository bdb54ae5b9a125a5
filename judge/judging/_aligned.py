"""An aligned judge's spec (`aligned.json`, written by `judge align`): per dimension, what
the user's own labels add to the judge's prompt (their labelling policy, labelled examples
of their own cases, or nothing), and the text it adds.

The policy and the examples go at the end of the rubric's system message, after its own
definition of what is correct: a fixed prefix that a server's prompt cache serves after
the first case. Or, with `nearest` k, the k examples nearest the graded case (TF-IDF cosine
of its `example_text` against each example's text): a prompt of its own for each case, which
no cache serves. A case is never its own example: an example whose id or content hash is the
graded case's is left out of that case's prompt. Or, for a scored rubric (the embedded
judge's), `weights` refitted on the labels: the prompt unchanged, its answers weighed anew
(as a calibration's fit does). Or, for the embedded judge, a `probe` trained on the labels:
heads on its hidden state that decide the dimension in place of its shipped probe's."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from judge._errors import InputError, JudgeError
from judge.cases._case import Case
from judge.cases._hash import content_hash
from judge.judging._linear_probe import Head
from judge.judging._rubric import Combine, RubricSet
from judge.judging._sandbox import shorten
from judge.judging._scored import PROBE_FEATURE, Fit

AlignedDimension = Literal["selection", "arguments", "answer"]
ALIGNED_DIMENSIONS: tuple[AlignedDimension, ...] = ("selection", "arguments", "answer")
MAX_SPEC_BYTES = 64 * 1024 * 1024
"""The largest spec read: a fixed set is a few examples, but a `nearest` dimension holds every
labelled case (about 2 KB each), once per such dimension."""
NOTE_CHARS = 300
"""The most characters of a labeller's note shown with an example."""
EXAMPLE_CHARS = 1500
"""The most characters of one example's text shown to the judge (longer text is cut)."""
_POLICY = "The user's labelling policy, which decides what counts as correct:"
_EXAMPLES = "Labelled examples from the user's own data (their labels decide; follow them):"


class LabelledExample(BaseModel):
    """One labelled case of the user's, as the judge is shown it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """The labelled case's id."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """`case_content_sha256` of the labelled case: what it is recognised by under another id."""
    label: Literal["correct", "incorrect"]
    note: str | None = None
    """The labeller's note, shown with the label."""
    text: str = Field(min_length=1)
    """The case as shown to the judge (`example_text`): request, tools named, the calls."""


class AlignedWeights(BaseModel):
    """A scored rubric's decision refitted on the user's labels: per branch (`called`,
    `not_called`) the weights of its answers (and of the probe's P(correct) where a probe
    decides), and the cut on P(correct)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    combine: dict[Literal["called", "not_called"], Combine] = Field(min_length=1)
    threshold: float = Field(gt=0.0, lt=1.0)


class DimensionAlignment(BaseModel):
    """What one dimension's prompt gets: nothing (`base`), the policy, examples, or both;
    or, its prompt unchanged, its answers weighed anew (`weights`) or decided by probe heads
    trained on the labels (`probe`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    choice: Literal["base", "weights", "probe", "policy", "examples", "examples+policy"]
    why: str
    """Why this choice (held-out kappa before and after, or why the base was kept)."""
    policy: str | None = None
    """The user's labelling rule in their own words (needed by a choice with `policy`)."""
    examples: tuple[LabelledExample, ...] = ()
    """Needed by a choice with `examples`: the fixed set shown, or the pool `nearest` draws on."""
    nearest: int | None = Field(default=None, ge=1)
    """None: every case is shown all the examples; k: each case is shown the k examples
    nearest it (TF-IDF cosine over the example text; ties to the earlier example)."""
    weights: AlignedWeights | None = None
    """Needed by the choice `weights` (and only there): the refitted decision."""
    heads: tuple[Head, ...] = ()
    """Needed by the choice `probe` (and only there): its heads, per branch, of this
    dimension (a branch without one keeps the judge's own decision)."""
    probe_rubrics: dict[str, str] = Field(default_factory=dict)
    """`probe`: the scored rubrics (name: version) whose questions its heads read."""
    measured: dict[str, Any] = Field(default_factory=dict)
    """What the fitting measured (kappas, intervals): not part of the spec's hash."""
    _index: Any = PrivateAttr(default=None)
    """The TF-IDF vectorizer fitted on the examples' texts and their vectors (lazily)."""

    @model_validator(mode="after")
    def _complete(self) -> DimensionAlignment:
        if "policy" in self.choice and not (self.policy or "").strip():
            raise ValueError(f"choice {self.choice!r} needs a non-empty policy")
        if "examples" in self.choice and not self.examples:
            raise ValueError(f"choice {self.choice!r} needs at least one example")
        if self.nearest is not None and "examples" not in self.choice:
            raise ValueError(f"nearest needs a choice with examples, not {self.choice!r}")
        if (self.choice == "weights") != (self.weights is not None):
            raise ValueError("weights go with the choice 'weights', and it needs them")
        if (self.choice == "probe") != bool(self.heads):
            raise ValueError("heads go with the choice 'probe', and it needs them")
        for head in self.heads:
            try:
                head.check()
            except ValueError as exc:
                raise ValueError(f"heads: {exc}") from None
        return self

    def shown_to(self, case: Case) -> list[LabelledExample]:
        """The examples the case's prompt shows: never its own (by id or content hash); all
        of them, or with `nearest` the k nearest the case, nearest first."""
        own = case_content_sha256(case)
        kept = [i for i, e in enumerate(self.examples) if e.id != case.id and e.sha256 != own]
        if self.nearest is None or len(kept) <= self.nearest:
            return [self.examples[i] for i in kept]
        if self._index is None:  # fitted once, on the first case graded
            from sklearn.feature_extraction.text import TfidfVectorizer

            vectorizer = TfidfVectorizer(sublinear_tf=True)
            self._index = (vectorizer, vectorizer.fit_transform([e.text for e in self.examples]))
        vectorizer, vectors = self._index
        scores = (vectors[kept] @ vectorizer.transform([example_text(case)]).T).toarray()[:, 0]
        order = sorted(range(len(kept)), key=lambda j: -float(scores[j]))  # stable: ties by order
        return [self.examples[kept[j]] for j in order[: self.nearest]]

    @property
    def uses_policy(self) -> bool:
        return "policy" in self.choice

    @property
    def uses_examples(self) -> bool:
        return "examples" in self.choice


class FittedCase(BaseModel):
    """A labelled case a spec was fitted on: `judge calibrate --aligned` refuses to measure
    the spec on it (calibration needs labels the fitting never saw)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """`case_content_sha256` of the case."""


class AlignedSpec(BaseModel):
    """An aligned judge: per dimension (selection, arguments, answer), what its prompt gets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1]
    dimensions: dict[AlignedDimension, DimensionAlignment] = Field(default_factory=dict)
    fitted_on: tuple[FittedCase, ...] = ()
    """The labelled cases `judge align` fitted the spec on (not part of the spec's hash)."""

    def fitted_among(self, cases: Iterable[Case]) -> list[str]:
        """The ids of `cases` the spec was fitted on (by id or by content hash)."""
        ids = {f.id for f in self.fitted_on}
        hashes = {f.sha256 for f in self.fitted_on}
        return [c.id for c in cases if c.id in ids or case_content_sha256(c) in hashes]

    @model_validator(mode="after")
    def _heads_of_their_dimension(self) -> AlignedSpec:
        for name, found in self.dimensions.items():
            if any(head.dimension != name for head in found.heads):
                raise ValueError(f"{name}: a head of another dimension")
        return self

    def alignment(self, dimension: str) -> DimensionAlignment | None:
        """The dimension's alignment, or None where its prompt is the base judge's."""
        for name, found in self.dimensions.items():
            if name == dimension and found.choice != "base":
                return found
        return None


def load_aligned(path: str | Path) -> AlignedSpec:
    """Read a spec file; `InputError` naming the file (and the JSON pointer of a bad field)
    for one that is too large, not JSON, or not a spec."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the aligned spec: {exc.strerror or exc}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise InputError(f"{path}: the aligned spec is over {MAX_SPEC_BYTES:,} bytes")
    try:
        parsed = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: the aligned spec is not JSON: {exc}") from None
    try:
        return AlignedSpec.model_validate(parsed)
    except ValidationError as exc:
        first = exc.errors()[0]
        pointer = "".join(f"/{part}" for part in first["loc"])
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(f"{path}: {pointer or '/'}: {first['msg']}{more}") from None


def as_aligned(aligned: str | Path | AlignedSpec | None) -> AlignedSpec | None:
    """A spec given as a file or as itself."""
    return aligned if isinstance(aligned, AlignedSpec) or aligned is None else load_aligned(aligned)


def prompts_only(aligned: str | Path | AlignedSpec | None) -> AlignedSpec | None:
    """The spec as another judge (an escalation judge) takes it: what reaches the prompts,
    not the weights or probe heads fitted on this judge's own answers and hidden states."""
    spec = as_aligned(aligned)
    if spec is None:
        return None
    kept = {n: f for n, f in spec.dimensions.items() if f.weights is None and not f.heads}
    return spec.model_copy(update={"dimensions": kept})


def spec_sha256(spec: AlignedSpec) -> str | None:
    """The spec's hash: its canonical JSON of what reaches the prompts (not the figures the
    fitting measured or wrote in `why`, nor the dimensions left base); None for a spec that
    changes no prompt, which is the base judge."""
    dumped = spec.model_dump(mode="json")
    dumped.pop("fitted_on", None)
    dumped["dimensions"] = {
        name: dimension
        for name, dimension in dumped["dimensions"].items()
        if dimension["choice"] != "base"
    }
    if not dumped["dimensions"]:
        return None
    for dimension in dumped["dimensions"].values():
        dimension.pop("measured", None)
        dimension.pop("why", None)
        for added in ("nearest", "weights", "heads", "probe_rubrics"):  # older specs' hashes
            if not dimension.get(added):
                dimension.pop(added, None)
    return content_hash(dumped)


def aligned_fits(aligned: AlignedSpec | None, rubrics: RubricSet, probing: object | None
                 ) -> dict[str, Fit]:  # fmt: skip
    """The decisions an aligned spec refitted (choice `weights`), by dimension, for a judge
    with these rubrics, and a probe (`probing`) or None (`check_weights`): the judge's own
    refitted decisions until a calibration record of it gives its own (`Judge.calibrate`)."""
    if aligned is None:
        return {}
    check_weights(aligned, {r.dimension for r in rubrics.all if r.scored}, probing is not None)
    return {
        name: Fit({str(b): c for b, c in found.weights.combine.items()}, found.weights.threshold)
        for name, found in aligned.dimensions.items()
        if found.weights is not None
    }


def aligned_defaults(
    defaults: dict[str, dict[str, Combine]], aligned: AlignedSpec | None
) -> dict[str, dict[str, Combine]]:
    """A judge's decision defaults (per scored dimension, per branch) with the spec's refitted
    weights in place of those it refitted: what a calibration of the aligned judge starts from
    (the spec was checked against the judge when it was given)."""
    fits = {n: f.weights for n, f in (aligned.dimensions if aligned else {}).items() if f.weights}
    return defaults | {n: {**defaults[n], **w.combine} for n, w in fits.items() if n in defaults}


def check_weights(aligned: AlignedSpec | None, scored: Collection[str], probing: bool) -> None:
    """`JudgeError` where the spec's `weights` would weigh answers this judge does not give:
    a dimension whose rubric is not scored, or the probe's P(correct) with no probe."""
    for name, found in (aligned.dimensions if aligned else {}).items():
        if found.weights is None:
            continue
        if name not in scored:
            raise JudgeError(
                f"the aligned spec's {name} weights weigh a scored rubric's answers, and this "
                f"judge's {name} rubric is not scored (the embedded judge's rubrics are)"
            )
        if not probing and any(PROBE_FEATURE in c.weights for c in found.weights.combine.values()):
            raise JudgeError(
                f"the aligned spec's {name} weights weigh the probe's P(correct), and this "
                "judge has no probe (the embedded judge with its own rubrics has)"
            )


def case_content_sha256(case: Case) -> str:
    """A case's content hash as an example records it: what the judge sees of it (the
    conversation, the tools, the response), never its id, labels or metadata."""
    return content_hash(case.model_dump(include={"messages", "tools", "response"}, mode="json"))


def example_text(case: Case, limit: int = EXAMPLE_CHARS) -> str:
    """A labelled case as an example shows it, compact: the last user request, the tools by
    name, the response's calls with their arguments (or its text), cut to `limit` (a long
    request to half of it, so that the calls are still shown)."""
    users = [m for m in case.messages if m.get("role") == "user"]
    request = users[-1].get("content") if users else None
    lines = [f"Request: {shorten(request if request is not None else '(none)', limit // 2)}"]
    lines.append(f"Tools: {shorten(', '.join(t.name for t in case.tools) or '(none)', limit // 4)}")
    calls = case.tool_calls
    if calls:
        lines.extend(f"Call: {c.name}({shorten(c.arguments, limit // 4)})" for c in calls)
    elif case.response is not None:
        lines.append(f"Reply (no call): {shorten(case.response.content or '', limit // 2)}")
    return shorten("\n".join(lines), limit)


def aligned_messages(
    messages: list[dict[str, str]], alignment: DimensionAlignment, case: Case
) -> list[dict[str, str]]:
    """The rendered messages with the policy and the examples (all but the case's own) at
    the end of the system message."""
    parts = []
    if alignment.uses_policy and alignment.policy:
        parts.append(f"{_POLICY}\n<policy>\n{_plain(alignment.policy.strip())}\n</policy>")
    if alignment.uses_examples:
        shown = alignment.shown_to(case)
        if shown:
            parts.append("\n".join([_EXAMPLES, *(_example(e) for e in shown)]))
    if not parts:
        return messages
    if not messages or messages[0].get("role") != "system":  # a rubric without a system part
        return [{"role": "system", "content": "\n\n".join(parts)}, *messages]
    system, *rest = messages
    content = "\n\n".join([system["content"], *parts])
    return [{**system, "content": content}, *rest]


def _example(example: LabelledExample) -> str:
    note = f"\nNote: {_plain(shorten(example.note, NOTE_CHARS))}" if example.note else ""
    text = _plain(shorten(example.text, EXAMPLE_CHARS))
    return f'<example label="{example.label}">\n{text}{note}\n</example>'


def _plain(text: str) -> str:
    # As the rubric sandbox prints untrusted text: it can never close a rubric's own tags.
    return text.replace("<", "\\u003c").replace(">", "\\u003e")

"""What a judge is, as recorded with every verdict: its provenance, the cache keys of what it
asks (derived from the provenance and exactly what is sent), and the bodies it sends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.checks._outcome import Provenance, RubricRef
from judge.endpoints._client import ResponseFormat, answer_body, complete_body
from judge.endpoints._endpoint import Endpoint
from judge.judging._cache import cache_key
from judge.judging._questions import Question
from judge.judging._rubric import Rubric
from judge.judging._scored import ANSWER_LOGPROBS, Ask

LOCAL_MAX_TOKENS = 768
"""The most a generated verdict of the embedded model may run to: a verdict takes a few
hundred tokens; a small model that loops stops there (cut off, so asked again) instead of
writing to the end of its context at a few tokens a second."""
_ANSWER_KEY_OMITS = frozenset(
    {"rubrics", "response_format", "temperature", "logprobs", "probe", "aligned"}
)  # an aligned spec's text is in the messages: keyed by what each question holds of it


@dataclass
class Identity:
    """The judge's recorded settings (never a key), and what follows from them alone."""

    endpoint: Endpoint | None
    temperature: float
    seed: int | None
    reasoning_effort: str | None
    extra_body: dict[str, Any]
    rubrics: tuple[RubricRef, ...]
    """Every rubric the judge asks with (trajectory and answer rubrics included when on)."""
    probe: str | None
    aligned: str | None = None
    """The aligned spec's sha256 (its text is in the messages each question sends)."""
    _memo: dict[tuple[ResponseFormat, int | None], Provenance] = field(
        default_factory=dict, repr=False
    )
    _answer_judge: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def model(self) -> str:
        if self.endpoint is None:
            from judge.endpoints._local import LOCAL_MODEL_NAME

            return LOCAL_MODEL_NAME
        return self.endpoint.model

    @property
    def label(self) -> str:
        """The endpoint as recorded in provenance: its URL, or `embedded` for the local model."""
        return "embedded" if self.endpoint is None else self.endpoint.base_url

    def provenance(self, mode: ResponseFormat, logprobs: int | None) -> Provenance:
        """The judge with this structured-output format and these logprobs. Built once per
        pair: it goes with every case and into every cache key."""
        if (mode, logprobs) not in self._memo:
            self._memo[mode, logprobs] = Provenance(
                model=self.model,
                endpoint=self.label,
                temperature=self.temperature,
                seed=self.seed,
                reasoning_effort=self.reasoning_effort,
                response_format=mode,
                extra=self.extra_body,
                rubrics=self.rubrics,
                logprobs=logprobs,
                probe=self.probe,
                aligned=self.aligned,
            )
        return self._memo[mode, logprobs]

    def verdict_key(
        self, question: Question, sample: int, mode: ResponseFormat, logprobs: int | None
    ) -> str:
        """A verdict's key. The judge without its rubric list, and the one rubric asked:
        turning the trajectory rubric on, or editing another dimension's rubric, keeps this
        question's answers."""
        judge = judge_fields(
            self.provenance(mode, logprobs), exclude={"rubrics", "probe", "aligned"}
        )
        return cache_key(
            {
                "judge": judge,
                "rubric": question.rubric.ref.model_dump(mode="json"),
                "messages": question.messages,
                "schema": question.schema,
                "sample": sample,
            }
        )

    def answer_key(self, rubric: Rubric, ask: Ask) -> str:
        """An answer's key: the judge (model, endpoint, seed, provider fields) and exactly
        what was sent. Not the rubric's hash: editing its weights re-asks nothing."""
        if self._answer_judge is None:  # the same for every answer: built once
            fields = judge_fields(self.provenance("json_schema", None), _ANSWER_KEY_OMITS)
            self._answer_judge = fields
        return cache_key(
            {
                "judge": self._answer_judge,
                "messages": ask.messages,
                "answers": list(rubric.answers),
                "top_logprobs": ANSWER_LOGPROBS,
            }
        )

    def answer_body(self, model: str, ask: Ask) -> dict[str, Any]:
        """What a scored rubric's one-token question sends (online, or in a batch)."""
        return answer_body(
            model,
            ask.messages,
            logprobs=ANSWER_LOGPROBS,
            seed=self.seed,
            extra_body=self.extra_body,
        )

    def verdict_body(
        self,
        model: str,
        conversation: list[dict[str, str]],
        question: Question,
        sample: int,
        mode: ResponseFormat,
        logprobs: int | None,
    ) -> dict[str, Any]:
        """What asking for a verdict sends (online, or in a batch)."""
        body = complete_body(
            model,
            conversation,
            schema=question.schema,
            mode=mode,
            temperature=self.temperature,
            seed=None if self.seed is None else self.seed + sample,
            reasoning_effort=self.reasoning_effort,
            extra_body=self.extra_body,
            logprobs=logprobs,
        )
        if self.endpoint is None:
            body.setdefault("max_tokens", LOCAL_MAX_TOKENS)
        return body


def judge_fields(
    provenance: Provenance, exclude: set[str] | frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The provenance as a key or a fingerprint holds it: without `logprobs` when they are not
    asked, nor `probe` when none decides, nor `aligned` without a spec, so the keys and
    fingerprints of a judge without them are those it always had."""
    found = provenance.model_dump(mode="json", exclude=set(exclude))
    for name in ("logprobs", "probe", "aligned"):
        if found.get(name) is None:
            found.pop(name, None)
    return found


def differences(
    mine: tuple[Provenance, int], theirs: tuple[Provenance | None, int], *, any_format: bool
) -> list[str]:
    """The settings in which a verdict was judged (`theirs`: provenance and samples) otherwise
    than `mine` would judge it (empty: the same judge). With `any_format`, the structured-output
    format is not compared; logprobs never are: they change a confidence, not a label."""
    if theirs[0] is None:
        return ["provenance"]
    fields = [{**mine[0].model_dump(mode="json"), "samples": mine[1]}]
    fields.append({**theirs[0].model_dump(mode="json"), "samples": theirs[1]})
    for found in fields:
        found.pop("logprobs", None)
        if any_format:
            found.pop("response_format")
    a, b = fields
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))

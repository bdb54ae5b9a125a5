"""A trained probe: per dimension and branch, a regularised logistic regression on the embedded
judge's hidden state where it answers (optionally reduced by PCA), together with its answers'
log-odds and the counts from code. Its probability is the verdict's confidence
(`confidence_source: "probe"`).

The file is JSON: the weights as base64 float32 arrays, and a manifest saying what it was
fitted on (sources, case counts, hashes) and what it scored on data it was not fitted on."""

from __future__ import annotations

import base64
import hashlib
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge._errors import JudgeError
from judge.judging._hidden import HIDDEN_SIZE
from judge.judging._scored import feature

PROBE_FORMAT = "tool-call-judge-probe"
PROBE_VERSION = 1
MAX_PROBE_BYTES = 64 << 20
"""The largest probe file read (a shipped one is well under 1 MB)."""
_MAX_DEPTH = 12

Dimension = Literal["selection", "arguments", "answer"]
Branch = Literal["called", "not_called"]


class ProbeError(JudgeError):
    """A probe file that cannot be used; the message names the file and what is wrong."""


class Array(BaseModel):
    """A float32 array, base64 (little-endian), with its shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shape: tuple[int, ...]
    data: str

    @classmethod
    def of(cls, values: Any) -> Array:
        array = np.asarray(values, dtype="<f4")
        return cls(shape=array.shape, data=base64.b64encode(array.tobytes()).decode())

    def array(self) -> np.ndarray:
        raw = base64.b64decode(self.data, validate=True)
        found = np.frombuffer(raw, dtype="<f4")
        if found.size != int(np.prod(self.shape)) or not np.all(np.isfinite(found)):
            raise ValueError(f"array of shape {list(self.shape)} holds {found.size} values")
        return found.reshape(self.shape).astype(np.float64)


class Head(BaseModel):
    """One dimension and branch: standardise the hidden state, project it (PCA, optional),
    append the standardised extra features, then a logistic regression."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dimension: Dimension
    branch: Branch
    mean: Array
    scale: Array
    components: Array | None = None
    """PCA directions (k x HIDDEN_SIZE) over the standardised hidden state; None: all of it."""
    extras: tuple[str, ...] = ()
    """The other features, by name: question ids (as log-odds) and code counts."""
    extras_mean: Array
    extras_scale: Array
    coef: Array
    intercept: float
    C: float
    """The regularisation chosen (inverse strength), for the record."""
    method: Literal["joint", "anchored"] = "joint"
    """How it was fitted, for the record: one regression on everything, or the hidden state
    as corrections to the answers and counts' own regression (folded into the same weights)."""
    cases: int
    """Training rows."""

    @cached_property
    def _weights(
        self,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
        """The decoded arrays, checked once: shapes that fit together, scales above 0."""
        mean, scale = self.mean.array(), self.scale.array()
        components = None if self.components is None else self.components.array()
        extras_mean, extras_scale = self.extras_mean.array(), self.extras_scale.array()
        coef = self.coef.array()
        reduced = HIDDEN_SIZE if components is None else components.shape[0]
        if (
            mean.shape != (HIDDEN_SIZE,)
            or scale.shape != (HIDDEN_SIZE,)
            or (components is not None and components.shape[1:] != (HIDDEN_SIZE,))
            or extras_mean.shape != (len(self.extras),)
            or extras_scale.shape != (len(self.extras),)
            or coef.shape != (reduced + len(self.extras),)
        ):
            raise ValueError(
                f"the {self.dimension}/{self.branch} head's arrays do not fit together"
            )
        if np.any(scale <= 0) or np.any(extras_scale <= 0):
            raise ValueError(f"the {self.dimension}/{self.branch} head has a scale of 0 or less")
        return mean, scale, components, extras_mean, extras_scale, coef

    def check(self) -> None:
        self._weights  # noqa: B018 - decoded and checked once

    def scores(self, hidden: np.ndarray, extras: np.ndarray) -> np.ndarray:
        """P(correct) of each row: hidden states (n x HIDDEN_SIZE) and their extras as
        `feature` reads them (n x len(extras))."""
        mean, scale, components, extras_mean, extras_scale, coef = self._weights
        z = (np.asarray(hidden, dtype=np.float64) - mean) / scale
        if components is not None:
            z = z @ components.T
        x = np.hstack([z, (np.asarray(extras, dtype=np.float64) - extras_mean) / extras_scale])
        margin = np.clip(x @ coef + self.intercept, -50.0, 50.0)
        found: np.ndarray = 1 / (1 + np.exp(-margin))
        return found

    def probability(self, hidden: np.ndarray, features: dict[str, float]) -> float:
        """P(correct) for one verdict, from its hidden state and its answers and counts."""
        extra = [[feature(features, name) for name in self.extras]]
        return float(self.scores(np.asarray(hidden)[None, :], np.array(extra).reshape(1, -1))[0])


class Manifest(BaseModel):
    """What a probe was fitted on and how it scored on data it was not fitted on."""

    model_config = ConfigDict(frozen=True)

    created: str
    model_sha256: str
    """The embedded model file whose hidden states it reads."""
    rubrics: dict[str, str] = Field(default_factory=dict)
    """The scored rubrics whose questions it was fitted on, by name: version."""
    sources: list[dict[str, Any]] = Field(default_factory=list)
    """Each labelled file: name, path as given, sha256, cases, labels per dimension, and the
    cases it was fitted on (`used`: those with a usable labelled verdict)."""
    left_out: int = 0
    """Cases left out because the cache did not hold them (`judge local train --only-cached`)."""
    held_out: dict[str, Any] = Field(default_factory=dict)
    """Per dimension: each source's kappa when the probe was fitted without it, and today's
    decision's on the same cases; or the cross-validated figure where there was one source."""
    kept: dict[str, str] = Field(default_factory=dict)
    """Per dimension: `probe`, or why its head was left out (the dimension keeps its rubric's
    decision)."""


class ProbeFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["tool-call-judge-probe"]
    version: int
    manifest: Manifest
    heads: tuple[Head, ...]


class Probe:
    """A loaded probe: its heads by (dimension, branch), its manifest and the file's hash."""

    def __init__(self, file: ProbeFile, sha256: str, path: str | None = None) -> None:
        self.file = file
        self.sha256 = sha256
        self.path = path
        self.heads = {(h.dimension, h.branch): h for h in file.heads}

    @property
    def manifest(self) -> Manifest:
        return self.file.manifest

    @property
    def ref(self) -> str:
        """What provenance records: the file's sha256."""
        return self.sha256

    def head(self, dimension: str, branch: str) -> Head | None:
        return self.heads.get((dimension, branch))  # type: ignore[arg-type]

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.file.model_dump(mode="json"), option=orjson.OPT_INDENT_2)


def build_probe(manifest: Manifest, heads: list[Head]) -> Probe:
    file = ProbeFile(
        format="tool-call-judge-probe", version=PROBE_VERSION, manifest=manifest, heads=tuple(heads)
    )
    data = orjson.dumps(file.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    return Probe(file, hashlib.sha256(data).hexdigest())


def load_probe(path: str | Path, *, model_sha256: str | None = None) -> Probe:
    """Read and check a probe file: bounded in size and nesting, every head's arrays decoded
    and fitting together, made for this model file when `model_sha256` is given."""
    where = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PROBE_BYTES + 1)
    except OSError as exc:
        hint = ""
        if not Path(path).exists() and all(n.strip().isidentifier() for n in where.split(",")):
            hint = " (--probes, with an s, names the invariance probes)"
        raise ProbeError(f"{where}: cannot read the probe: {exc.strerror or exc}{hint}") from None
    if len(data) > MAX_PROBE_BYTES:
        raise ProbeError(f"{where}: larger than {MAX_PROBE_BYTES >> 20} MB: not a probe file")
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProbeError(f"{where}: not JSON ({exc})") from None
    if _depth(raw) > _MAX_DEPTH:
        raise ProbeError(f"{where}: nested deeper than {_MAX_DEPTH}: not a probe file")
    if not isinstance(raw, dict) or raw.get("format") != PROBE_FORMAT:
        raise ProbeError(f'{where}: not a probe file (no "format": "{PROBE_FORMAT}")')
    if raw.get("version") != PROBE_VERSION:
        raise ProbeError(
            f"{where}: probe format version {raw.get('version')!r}, this judge reads "
            f"{PROBE_VERSION}: train it again with `judge local train`"
        )
    try:
        file = ProbeFile.model_validate(raw)
        for head in file.heads:
            head.check()
    except (ValidationError, ValueError) as exc:
        raise ProbeError(f"{where}: {_first_error(exc)}") from None
    if model_sha256 is not None and file.manifest.model_sha256 != model_sha256:
        raise ProbeError(
            f"{where}: fitted on the hidden states of model {file.manifest.model_sha256[:16]}..., "
            f"the embedded judge is {model_sha256[:16]}...: train it again with `judge local train`"
        )
    return Probe(file, hashlib.sha256(data).hexdigest(), where)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        pointer = "/" + "/".join(str(p) for p in error["loc"])
        return f"at {pointer}: {error['msg']}"
    return str(exc)


def _depth(value: Any, level: int = 0) -> int:
    if level > _MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


SHIPPED_PROBE = Path(__file__).resolve().parent.parent / "probes" / "embedded.json"
"""The probe the embedded judge decides with by default (`judge local train` made it; its
manifest says on what, and how it scored held out)."""

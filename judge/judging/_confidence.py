"""How sure the judge is of a label: read from the token logprobs of its reply, or from the
agreement of several samples.

A label's probability is that of the token where the label starts, renormalised over the
labels allowed there: the endpoint reports probabilities before any grammar, so tokens that
start no allowed label are dropped."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from judge.endpoints._client import Token


def label_distributions(
    text: str, tokens: Sequence[Token], key: str, labels: Sequence[str]
) -> list[dict[str, float] | None]:
    """For each `"key": "<label>"` of a JSON reply, in order, the probability of each allowed
    label where that value starts (None where the tokens do not cover it)."""
    if "".join(token.text for token in tokens) != text:
        return []  # the tokens do not spell the reply: nothing can be located in it
    starts = _offsets(tokens)
    found: list[dict[str, float] | None] = []
    for match in re.finditer(rf'"{re.escape(key)}"\s*:\s*"', text):
        found.append(_at(match.end(), tokens, starts, labels))
    return found


def answer_distribution(tokens: Sequence[Token], answers: Sequence[str]) -> dict[str, float] | None:
    """The probability of each one-word answer (`yes`, `no`, `A`...) as the reply's first
    token, renormalised over the answers; None when no alternative is an answer."""
    if not tokens:
        return None
    mass = dict.fromkeys(answers, 0.0)
    lowered = {a.lower(): a for a in answers}
    for token, logprob in tokens[0].alternatives:
        answer = lowered.get(token.strip().lower())
        if answer is not None:
            mass[answer] += math.exp(logprob)
    return _normalised(mass)


def sample_agreement(labels: Sequence[str], chosen: str) -> float:
    """The share of samples that gave the chosen label."""
    return sum(label == chosen for label in labels) / len(labels)


def _offsets(tokens: Sequence[Token]) -> list[int]:
    starts, at = [], 0
    for token in tokens:
        starts.append(at)
        at += len(token.text)
    return starts


def _at(
    offset: int, tokens: Sequence[Token], starts: list[int], labels: Sequence[str]
) -> dict[str, float] | None:
    index = next((i for i, s in enumerate(starts) if s + len(tokens[i].text) > offset), None)
    if index is None:
        return None
    token = tokens[index]
    before = token.text[: offset - starts[index]]  # what the token spells before the label
    mass = dict.fromkeys(labels, 0.0)
    for alternative, logprob in token.alternatives:
        if not alternative.startswith(before):
            continue
        rest = alternative[len(before) :]
        if not rest:
            continue
        fits = [
            label
            for label in labels
            if (label + '"').startswith(rest) or rest.startswith(label + '"')
        ]
        if len(fits) == 1:  # a token shared by two labels ("in") says nothing between them
            mass[fits[0]] += math.exp(logprob)
    return _normalised(mass)


def _normalised(mass: dict[str, float]) -> dict[str, float] | None:
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in mass.items()}

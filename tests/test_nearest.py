"""The nearest examples (`judge align`'s `nearest` candidate, a spec dimension's `nearest`
k): each case is shown the k labelled cases nearest it by TF-IDF over the request, the tools
and the calls, never itself; where the judge is helped only by an example about the same
request, the nearest beat one fixed set held out. The judge is a scripted server on
127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from judge.cases._hash import content_hash
from judge.cases._loading import load_cases
from judge.judging._aligned import (
    AlignedSpec,
    DimensionAlignment,
    LabelledExample,
    aligned_messages,
    case_content_sha256,
    example_text,
    load_aligned,
    spec_sha256,
)
from tests.chat_server import ChatServer, Reply, answer, serving
from tests.helpers import call, case
from tests.test_align import align, asked, coin, truth

TOPICS = ("zanzibar", "quokka", "fjord", "marimba", "tundra", "origami", "kumquat", "sherpa",
          "lagoon", "vortex")  # fmt: skip
TOPIC = re.compile("|".join(TOPICS))


def on_topic(body: dict[str, Any]) -> Reply:
    """A judge that follows the user's labels only when an example is about the request it
    grades (its topic word among the examples), and is a coin flip otherwise."""
    system = body["messages"][0]["content"]
    topic = TOPIC.search(asked(body))
    told = topic is not None and "<example " in system and topic.group() in system
    return answer(body, truth(body) if told else coin(body))


def topical(n: int = 40) -> list[dict[str, Any]]:
    """`n` labelled cases (selection), four of each topic, each a conversation of its own."""
    rows = []
    for i in range(n):
        good = i % 2 == 0
        topic = TOPICS[(i // 2) % len(TOPICS)]
        request = f"{topic} weather please, ticket {i}"
        rows.append(
            case([call("get_weather", {"city": f"Place{i}-{'good' if good else 'bad'}"})])
            | {"id": f"t{i}", "messages": [{"role": "user", "content": request}],
               "labels": {"selection": "correct" if good else "incorrect"}}
        )  # fmt: skip
    return rows


def test_the_nearest_examples_beat_a_fixed_set_held_out(tmp_path: Path) -> None:
    with serving(on_topic) as server:
        done, out = align(server, tmp_path, topical())
    assert done.exit_code == 0, done.output
    found = load_aligned(out).dimensions["selection"]
    assert found.choice == "examples" and found.nearest == 4, found.why
    assert found.why.startswith("nearest: ")
    assert len(found.examples) == 40  # the pool: every label
    held = found.measured["candidates"]
    assert set(held) == {"base", "examples", "nearest"}
    assert held["nearest"]["kappa"] > held["examples"]["kappa"] + 0.3
    assert found.measured["after"]["kappa"] > found.measured["before"]["kappa"] + 0.5
    assert "nearest" in done.output


def test_candidates_restricts_what_is_measured(tmp_path: Path) -> None:
    with serving(on_topic) as server:
        done, out = align(server, tmp_path, topical(), "--candidates", "examples")
    assert done.exit_code == 0, done.output
    found = load_aligned(out).dimensions["selection"]
    assert set(found.measured["candidates"]) == {"base", "examples"}
    assert found.nearest is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        pytest.param("examples,closest", "--candidates: 'closest': choose among base, ",
                     id="unknown"),
        pytest.param("nearest+policy", "--candidates: nearest+policy needs --policy",
                     id="policy-without-a-policy"),
        pytest.param(",", "--candidates: none given", id="empty"),
    ],
)  # fmt: skip
def test_bad_candidates_are_refused_before_any_request(
    server: ChatServer, tmp_path: Path, given: str, said: str
) -> None:
    done, _ = align(server, tmp_path, topical(), "--candidates", given)
    assert done.exit_code == 2, done.output
    assert said in done.output
    assert not server.chat_requests


def loaded(row: dict[str, Any]) -> Any:
    [found] = list(load_cases([row]))
    return found


def graded(request: str, name: str = "graded", asked_for: str | None = None) -> Any:
    """A case with this request, calling `lookup` for `asked_for` (else its own name)."""
    return loaded(case([call("lookup", {"q": asked_for or name})]) | {"id": name, "messages": [
        {"role": "user", "content": request}]})  # fmt: skip


def labelled(request: str, name: str) -> LabelledExample:
    found = graded(request, name)
    return LabelledExample(
        id=name, sha256=case_content_sha256(found), label="correct", text=example_text(found)
    )


POOL = (
    labelled("cherry date harvest", "e0"),
    labelled("apple banana bread", "e1"),
    labelled("elderberry fig jam", "e2"),
    labelled("apple orchard banana grove", "e3"),
    labelled("grape honeydew", "e4"),
)


def test_the_nearest_examples_of_a_case_are_those_sharing_its_words() -> None:
    alignment = DimensionAlignment(choice="examples", why="w", examples=POOL, nearest=2)
    shown = alignment.shown_to(graded("an apple and banana smoothie"))
    assert [e.id for e in shown] == ["e1", "e3"]
    index = alignment._index
    assert index is not None  # fitted on the first case, then kept
    assert [e.id for e in alignment.shown_to(graded("fig and elderberry"))][0] == "e2"
    assert alignment._index is index
    # Two examples alike (the same text under two ids): a tie, broken by the examples' order.
    twin = POOL[2].model_copy(update={"id": "twin", "sha256": "0" * 64})
    for examples, first in (((POOL[0], POOL[2], twin), "e2"), ((POOL[0], twin, POOL[2]), "twin")):
        tied = DimensionAlignment(choice="examples", why="w", examples=examples, nearest=1)
        assert [e.id for e in tied.shown_to(graded("elderberry"))] == [first]
    # What the prompt shows: those two examples only, after the rubric's own system text.
    messages = [{"role": "system", "content": "RUBRIC"}, {"role": "user", "content": "case"}]
    system = aligned_messages(messages, alignment, graded("apple banana"))[0]["content"]
    assert system.startswith("RUBRIC") and system.count("<example ") == 2
    assert "apple banana bread" in system and "apple orchard" in system
    assert "cherry" not in system and "elderberry" not in system


def test_a_case_never_gets_itself_as_its_nearest_example() -> None:
    own = graded("apple banana bread", "e1")  # the case of example e1, by id and content
    renamed = graded("apple orchard banana grove", "e3-again", "e3")  # e3's content
    alignment = DimensionAlignment(choice="examples", why="w", examples=POOL, nearest=2)
    shown = [e.id for e in alignment.shown_to(own)]
    assert shown[0] == "e3" and len(shown) == 2 and "e1" not in shown  # the next nearest
    assert case_content_sha256(renamed) == POOL[3].sha256
    shown = [e.id for e in alignment.shown_to(renamed)]
    assert shown[0] == "e1" and len(shown) == 2 and "e3" not in shown


def test_the_spec_hash_is_what_reaches_the_prompts() -> None:
    fixed = {"choice": "examples", "why": "w", "examples": [e.model_dump() for e in POOL]}
    old = AlignedSpec.model_validate({"version": 1, "dimensions": {"selection": fixed}})
    near = AlignedSpec.model_validate(
        {"version": 1, "dimensions": {"selection": fixed | {"nearest": 2}}}
    )
    hashed = old.model_dump(mode="json", exclude={"fitted_on"})  # a fixed set: no `nearest`
    for dimension in hashed["dimensions"].values():  # nor what later specs added, unused here
        del dimension["measured"], dimension["nearest"], dimension["why"]
        del dimension["weights"], dimension["heads"], dimension["probe_rubrics"]
    assert spec_sha256(old) == content_hash(hashed)
    assert spec_sha256(near) != spec_sha256(old)
    # the figures in `why`, and a dimension left base, change no prompt: nor the hash
    other = {"choice": "base", "why": "base kept: 0.41 against 0.44"}
    again = AlignedSpec.model_validate(
        {
            "version": 1,
            "dimensions": {"selection": fixed | {"why": "other figures"}, "arguments": other},
        }  # fmt: skip
    )
    assert spec_sha256(again) == spec_sha256(old)
    only_base = AlignedSpec.model_validate({"version": 1, "dimensions": {"arguments": other}})
    assert spec_sha256(only_base) is None  # the base judge, fingerprint and all
    with pytest.raises(ValueError, match="nearest needs a choice with examples"):
        DimensionAlignment(choice="policy", why="w", policy="p", nearest=2)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        DimensionAlignment(choice="examples", why="w", examples=POOL, nearest=0)

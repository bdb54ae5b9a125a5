"""What users keep between releases: the verdict cache's keys and the calibration fingerprint.

The values below were computed by the package before it was split into layers (commit 4bd43e1);
a cache filled or a calibration record written then still answers. A change to how a question's
key or a judge's fingerprint is built makes every user's cache miss and every record refuse the
judge: when that is meant, say so in the change and update these values.

Verdicts read their confidence from token logprobs since issue 14: a judge that asks for them
(the default) has keys of its own, since its cached replies also hold the confidences. A judge
told not to ask (`logprobs=False`) keeps the keys and the fingerprint it always had.
"""

from __future__ import annotations

from pathlib import Path

from judge import Judge, load_cases
from judge.calibrate._record import fingerprint_sha256

HEADER = '+++\nname = "{0}"\nversion = "1"\ndimension = "{0}"\nlabels = [{1}]\n{2}+++\n'
BLOCKS = (
    "{% block system %}Grade.{% endblock %}"
    "{% block user %}{{ tool_names }} {{ calls }} {{ conversation }}{% endblock %}"
)
CASE = {
    "id": "k",
    "messages": [{"role": "user", "content": "weather in Paris"}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
    "response": {
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
}


def fixed_judge(folder: Path, *, logprobs: bool = False) -> Judge:
    """A judge whose every input is fixed here: endpoint, settings and rubric text."""
    labels = '"correct", "incorrect"'
    (folder / "selection.j2").write_text(HEADER.format("selection", labels, "") + BLOCKS)
    labels += ', "not_applicable"'
    (folder / "arguments.j2").write_text(
        HEADER.format("arguments", labels, "per_call = true\n") + BLOCKS
    )
    return Judge(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        rubrics=folder,
        cache=False,
        logprobs=logprobs,
    )


def keys_of(judge: Judge) -> dict[str, str]:
    [case] = load_cases([CASE])
    return {
        q.dimension: judge._identity.verdict_key(q, 0, "json_schema", judge._asker.logprobs)
        for q in judge.questions(case, judge.check(case)).questions
    }


def test_cache_keys_are_those_written_before(tmp_path: Path) -> None:
    assert keys_of(fixed_judge(tmp_path)) == {
        "selection": "aca3cc773455e7e5cc3d28ea7eefe17553178ef794b971e6159e3f536ba4fdc0",
        "arguments": "788ec25ff3cb1177a1a96decf70a300369653750f5c47e50218d85dc870ef815",
    }


def test_the_calibration_fingerprint_is_that_written_before(tmp_path: Path) -> None:
    fingerprint = fingerprint_sha256(fixed_judge(tmp_path).fingerprint())
    assert fingerprint == "f7309fde5d620230c6789ec528bb0a18cef25779b7ae572929a504f63752ec32"


def test_a_judge_asking_for_logprobs_has_keys_of_its_own(tmp_path: Path) -> None:
    judge = fixed_judge(tmp_path, logprobs=True)
    assert keys_of(judge) == {
        "selection": "81dd38ced86c5bca9bc3823931b6c40a41f0ff42cb9bc480e3b60e307a94c47e",
        "arguments": "4158780892cb0e2590b413e6ec12fe47d94732ff6539ae625688c5938f0aa344",
    }
    assert fingerprint_sha256(judge.fingerprint()) != fingerprint_sha256(
        fixed_judge(tmp_path).fingerprint()
    )

"""Build judge cases from AgentDojo's own suites, offline (ground truth only, no LLM).

Benign cases: each step k of a user task's ground truth, with the earlier calls and their
results as prior turns. Attacked cases: for each (user task, injection task) pair, the user
task's ground truth runs in an environment injected by an AgentDojo attack until the first
result that carries the injection; the expected-bad response is then each call of the
injection task's ground truth in turn (one case per call, earlier injection calls as turns).

Tool results are AgentDojo's default `tool_result_to_str` (YAML), i.e. what its own tool
executor feeds the model.

    python bench/_agentdojo_cases.py OUT_DIR [--force] [--version v1.2.2] [--suite banking ...]
"""

# mypy: disable-error-code="import-untyped"
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdojo.agent_pipeline.agent_pipeline import load_system_message
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.attacks.base_attacks import BaseAttack
from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
from agentdojo.functions_runtime import Function, FunctionCall, FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suites
from agentdojo.task_suite.task_suite import TaskSuite

# The version AgentDojo's own `benchmark` script defaults to (the latest in 0.1.35).
DEFAULT_VERSION = "v1.2.2"
SUITES = ("workspace", "travel", "banking", "slack")
# Pipeline name the attack reads the victim's name from: AgentDojo maps "local" to "Local model".
FAKE_PIPELINE_NAME = "local"

Case = dict[str, Any]
Message = dict[str, Any]


class _FakePipeline(BasePipelineElement):  # type: ignore[misc]
    """Never queried: attacks only read `name` to address the victim model."""

    def __init__(self, name: str) -> None:
        self.name = name

    def query(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("offline case builder: no model runs")


@dataclass
class SuiteCases:
    benign: list[Case] = field(default_factory=list)
    attacked: list[Case] = field(default_factory=list)
    resisted: list[Case] = field(default_factory=list)
    """The user task's own calls after the injection was read: what a model that resisted it
    goes on with (benign calls made with planted instructions in view)."""
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


# ---- tools -------------------------------------------------------------------------------


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """Replace every {"$ref": "#/$defs/X"} by a copy of X (AgentDojo's schemas are acyclic)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
            extra = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def tool_schema(function: Function) -> dict[str, Any]:
    """One AgentDojo Function as an OpenAI chat tool, with `$defs` inlined."""
    schema = function.parameters.model_json_schema()
    parameters = _inline_refs(schema, schema.get("$defs", {}))
    return {
        "type": "function",
        "function": {
            "name": function.name,
            "description": function.description,
            "parameters": parameters,
        },
    }


# ---- messages ----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Ground-truth arguments as JSON values (a nested FunctionCall becomes its name and args)."""
    if isinstance(value, FunctionCall):
        return {"function": value.function, "args": _plain(dict(value.args))}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def tool_call(call: FunctionCall, index: int) -> dict[str, Any]:
    arguments = json.dumps(_plain(dict(call.args)), ensure_ascii=False)
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": call.function, "arguments": arguments},
    }


def _turn(call: FunctionCall, result: str, index: int) -> list[Message]:
    """An assistant message making one call, then the tool message with its result."""
    return [
        {"role": "assistant", "content": None, "tool_calls": [tool_call(call, index)]},
        {"role": "tool", "tool_call_id": f"call_{index}", "content": result},
    ]


def _opening(prompt: str, system: str | None) -> list[Message]:
    head: list[Message] = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": prompt}]


def _run(runtime: FunctionsRuntime, env: Any, call: FunctionCall) -> str:
    """Run one call on `env` (mutating it); raises if the call fails."""
    result, _ = runtime.run_function(env, call.function, call.args, raise_on_error=True)
    return str(tool_result_to_str(result))


def _case(
    case_id: str,
    history: list[Message],
    call: FunctionCall,
    index: int,
    tools: list[dict[str, Any]],
    meta: dict[str, Any],
) -> Case:
    return {
        "id": case_id,
        "messages": history,
        "tools": tools,
        "response": {"content": None, "tool_calls": [tool_call(call, index)]},
        "meta": meta,
    }


def _task_key(task_id: str) -> tuple[str, int]:
    """Sort user_task_2 before user_task_10."""
    match = re.fullmatch(r"(.*?)(\d+)", task_id)
    return (match.group(1), int(match.group(2))) if match else (task_id, -1)


# ---- benign ------------------------------------------------------------------------------


def benign_cases(
    suite: TaskSuite, task: BaseUserTask, tools: list[dict[str, Any]], system: str | None
) -> list[Case]:
    """One case per ground-truth step of `task`, run on the injection-free default environment."""
    env = task.init_environment(suite.load_and_inject_default_environment({}))
    calls = task.ground_truth(env.model_copy(deep=True))
    runtime = FunctionsRuntime(suite.tools)
    history = _opening(task.PROMPT, system)
    cases = []
    for k, call in enumerate(calls):
        meta = {"suite": suite.name, "user_task": task.ID, "kind": "benign", "step": k}
        case_id = f"{suite.name}/{task.ID}/benign/{k}"
        cases.append(_case(case_id, list(history), call, k, tools, meta))
        history += _turn(call, _run(runtime, env, call), k)
    return cases


# ---- attacked ----------------------------------------------------------------------------


def injection_step(
    suite: TaskSuite, task: BaseUserTask, canaries: dict[str, str]
) -> tuple[int, list[str]]:
    """The first ground-truth step whose result shows a canary, and the vectors it shows.

    Canaries, not the attack text: YAML re-quotes multi-line text, so it is no substring.
    Raises LookupError if no result shows one.
    """
    env = task.init_environment(suite.load_and_inject_default_environment(canaries))
    runtime = FunctionsRuntime(suite.tools)
    for k, call in enumerate(task.ground_truth(env.model_copy(deep=True))):
        result = _run(runtime, env, call)
        seen = sorted(v for v, canary in canaries.items() if canary in result)
        if seen:
            return k, seen
    raise LookupError("injection not seen")


@dataclass(frozen=True)
class Pair:
    """A user task attacked with an injection task's goal: what both kinds of cases read."""

    suite: TaskSuite
    task: BaseUserTask
    injection_task: BaseInjectionTask
    attack: BaseAttack
    step: tuple[int, list[str]]
    tools: list[dict[str, Any]]
    system: str | None

    def environment(self) -> tuple[Any, FunctionsRuntime]:
        """The user task's environment with the attack's text placed, and a runtime for it."""
        injections = dict(sorted(self.attack.attack(self.task, self.injection_task).items()))
        default = self.suite.load_and_inject_default_environment(injections)
        return self.task.init_environment(default), FunctionsRuntime(self.suite.tools)

    @property
    def base(self) -> str:
        """The ids' stem: suite, user task, injection task, attack."""
        return f"{self.suite.name}/{self.task.ID}/{self.injection_task.ID}/{self.attack.name}"

    def meta(self, kind: str, step: int, **more: Any) -> dict[str, Any]:
        """A case's `meta`: where it comes from, its kind and step, and what else it says."""
        meta: dict[str, Any] = {
            "suite": self.suite.name,
            "user_task": self.task.ID,
            "injection_task": self.injection_task.ID,
            "attack": self.attack.name,
            "vector": self.step[1][0],
        }
        if "vectors" in more:
            meta["vectors"] = more.pop("vectors")
        meta |= {"kind": kind, "step": step, **more, "injected_at": self.step[0]}
        if kind == "attacked":
            meta["goal"] = self.injection_task.GOAL
        return meta


def attacked_cases(pair: Pair) -> list[Case]:
    """Cases whose response is each ground-truth call of `injection_task`, in turn, once the
    user task's ground truth has read the injection (at `step`: index, vectors).

    Raises LookupError if the injection task has no ground-truth calls.
    """
    task, injection_task, tools = pair.task, pair.injection_task, pair.tools
    env, runtime = pair.environment()
    pre_env = env.model_copy(deep=True)
    bad_calls = injection_task.ground_truth(pre_env.model_copy(deep=True))
    if not bad_calls:
        raise LookupError("injection task has no ground truth")
    history = _opening(task.PROMPT, pair.system)
    at, vectors = pair.step
    for k, call in enumerate(task.ground_truth(pre_env.model_copy(deep=True))[: at + 1]):
        history += _turn(call, _run(runtime, env, call), k)
    cases = []
    for j, call in enumerate(bad_calls):
        index = at + 1 + j
        meta = pair.meta("attacked", j, vectors=vectors, steps=len(bad_calls))
        cases.append(_case(f"{pair.base}/{j}", list(history), call, index, tools, meta))
        if j + 1 < len(bad_calls):
            history += _turn(call, _run(runtime, env, call), index)
    return cases


def resisted_cases(pair: Pair) -> list[Case]:
    """Cases whose response is each ground-truth call of the user task after the step that
    read the injection: the injection in view, the user's task carried on."""
    env, runtime = pair.environment()
    calls = pair.task.ground_truth(env.model_copy(deep=True))
    history = _opening(pair.task.PROMPT, pair.system)
    cases = []
    for k, call in enumerate(calls):
        if k > pair.step[0]:
            meta = pair.meta("resisted", k)
            cases.append(
                _case(f"{pair.base}/resisted/{k}", list(history), call, k, pair.tools, meta)
            )
        history += _turn(call, _run(runtime, env, call), k)
    return cases


# ---- suites ------------------------------------------------------------------------------


def build_suite(
    suite: TaskSuite, attacks: Sequence[str], system: str | None, pipeline_name: str
) -> SuiteCases:
    out = SuiteCases()
    tools = [tool_schema(f) for f in sorted(suite.tools, key=lambda f: f.name)]
    pipeline = _FakePipeline(pipeline_name)
    loaded = [load_attack(name, suite, pipeline) for name in attacks]
    user_tasks = sorted(suite.user_tasks.items(), key=lambda kv: _task_key(kv[0]))
    injection_tasks = sorted(suite.injection_tasks.items(), key=lambda kv: _task_key(kv[0]))
    for _, task in user_tasks:
        try:
            out.benign += benign_cases(suite, task, tools, system)
        except Exception:  # noqa: BLE001 - a broken ground truth skips the task, counted
            out.skip("user_task_ground_truth_failed")
            continue
        for attack in loaded:
            try:  # the step the canaries show up at, as AgentDojo's candidate search sees them
                step = injection_step(suite, task, attack.canary_injections)
            except LookupError:
                out.skip(f"not_injectable ({attack.name}, user tasks)")
                continue
            for _, injection_task in injection_tasks:
                try:
                    pair = Pair(suite, task, injection_task, attack, step, tools, system)
                    out.attacked += attacked_cases(pair)
                    out.resisted += resisted_cases(pair)
                except LookupError as e:
                    out.skip(f"{e} (pairs)")
                except Exception:  # noqa: BLE001
                    out.skip("attacked_ground_truth_failed (pairs)")
    return out


def build_cases(
    suites: Sequence[str] = SUITES,
    attacks: Sequence[str] = ("important_instructions",),
    version: str = DEFAULT_VERSION,
    *,
    system_message: bool = True,
    pipeline_name: str = FAKE_PIPELINE_NAME,
) -> dict[str, dict[str, list[Case]]]:
    """{suite: {"benign": [...], "attacked": [...], "resisted": [...]}} in our case format."""
    return {
        name: {"benign": built.benign, "attacked": built.attacked, "resisted": built.resisted}
        for name, built in build_all(suites, attacks, version, system_message, pipeline_name)
    }


def build_all(
    suites: Sequence[str],
    attacks: Sequence[str],
    version: str,
    system_message: bool = True,
    pipeline_name: str = FAKE_PIPELINE_NAME,
) -> list[tuple[str, SuiteCases]]:
    """Like build_cases, keeping the skip counts."""
    available = get_suites(version)
    missing = [s for s in suites if s not in available]
    if missing:
        raise KeyError(f"no suite {missing} in AgentDojo {version}: {sorted(available)}")
    system = load_system_message(None) if system_message else None
    return [(name, build_suite(available[name], attacks, system, pipeline_name)) for name in suites]


# ---- command line ------------------------------------------------------------------------


def _write(path: Path, cases: list[Case]) -> int:
    with path.open("w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    return path.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--force", action="store_true", help="write into a non-empty folder")
    parser.add_argument("--version", default=DEFAULT_VERSION)
    parser.add_argument("--suite", action="append", choices=SUITES, help="repeatable")
    parser.add_argument("--attack", action="append", help="repeatable")
    parser.add_argument("--no-system", action="store_true", help="omit the system message")
    args = parser.parse_args(argv)
    out: Path = args.out_dir
    if out.exists() and any(out.iterdir()) and not args.force:
        print(f"{out} is not empty (use --force)", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    built = build_all(
        args.suite or SUITES,
        args.attack or ("important_instructions",),
        args.version,
        not args.no_system,
    )
    print(f"{'suite':10} {'benign':>7} {'attacked':>9} {'resisted':>9} {'bytes':>11}  skipped")
    for name, cases in built:
        size = _write(out / f"{name}.benign.jsonl", cases.benign)
        size += _write(out / f"{name}.attacked.jsonl", cases.attacked)
        size += _write(out / f"{name}.resisted.jsonl", cases.resisted)
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(cases.skipped.items())) or "-"
        counts = f"{len(cases.benign):7d} {len(cases.attacked):9d} {len(cases.resisted):9d}"
        print(f"{name:10} {counts} {size:11,d}  {skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

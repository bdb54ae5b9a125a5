"""The package's layering: every import in `judge/` goes down the layers (or stays in its
layer), and no import cycle exists; and its rooms stay small (no module over 450 lines, no
class over 300, no function over 80). Sources are read with `ast`: nothing is imported or
run."""

from __future__ import annotations

import ast
import importlib.util
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import judge

PACKAGE = Path(judge.__file__).parent
REPO = Path(__file__).resolve().parents[1]

# Bottom to top: a module may import its own layer and the layers before it.
LAYERS = (
    "judge._core",  # which copy of the comparison core runs (standard library only)
    "judge._errors",
    "judge.cases",
    "judge.endpoints",
    "judge.traces",
    "judge.checks",
    "judge.adapters",
    "judge.judging",
    "judge.calibrate",
    "judge.runs",
    "judge.service",
    "judge.ray",  # the checks and the judge on a Ray cluster (the `ray` extra)
    "judge",  # the public API: judge/__init__.py
    "judge.cli",  # and judge/__main__.py
)

# The names of `judge.__all__` before the package was layered: each must stay importable.
PUBLIC_NAMES = (
    "Summary",
    "UnknownFieldWarning",
    "summarize",
    "Agreement",
    "ArgumentRule",
    "ArgumentVerdict",
    "Case",
    "CaseError",
    "CaseFileWarning",
    "CaseResult",
    "CheckResults",
    "Comparison",
    "Environment",
    "ExpectedCall",
    "Failure",
    "FailureKind",
    "InputError",
    "Judge",
    "JudgeEndpointError",
    "JudgeError",
    "JudgeOutcome",
    "Labels",
    "Limits",
    "LoadedCases",
    "Match",
    "ModelStats",
    "PairedDifference",
    "Provenance",
    "RepeatStats",
    "ReplyError",
    "Response",
    "RetryPolicy",
    "Rubric",
    "RubricError",
    "RubricRef",
    "RubricSet",
    "Rules",
    "RunRecord",
    "SelectionVerdict",
    "StateDiff",
    "StateEnvironment",
    "StateReport",
    "Tool",
    "ToolCall",
    "ToolFailed",
    "TrajectoryReport",
    "UngroundedValue",
    "Usage",
    "check",
    "check_case",
    "compare_runs",
    "create_app",
    "grade",
    "iter_cases",
    "iter_check",
    "json_equal",
    "json_schema",
    "load_cases",
    "load_rubrics",
    "pass_at_k",
    "pass_hat_k",
    "read_runs",
    "repeat_stats",
    "replay",
    "Estimate",  # added with `judge estimate`
    "estimate",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    if module == "judge.__main__":
        return LAYERS.index("judge.cli")
    # The longest layer name that is the module or a package above it.
    found = [i for i, name in enumerate(LAYERS) if module == name or module.startswith(name + ".")]
    return max(found, key=lambda i: len(LAYERS[i]))


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """The modules a module of `judge/` imports (anywhere in it, TYPE_CHECKING blocks and
    function bodies included), with the line of each import."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text(), package)


def imports_in(source: str, package: str) -> Iterator[tuple[str, int]]:
    """The modules Python source in `package` imports, with the line of each import."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                # `from judge.checks import _result` names a module; `from x import name` does not
                target = f"{base}.{alias.name}"
                yield (target if target in MODULES else base), node.lineno


def graph() -> dict[str, dict[str, int]]:
    """Each module's imports of other `judge` modules, with the line of the first."""
    edges: dict[str, dict[str, int]] = {}
    for module in MODULES:
        found = edges.setdefault(module, {})
        for target, line in imports_of(module):
            if target in MODULES and target != module:
                found.setdefault(target, line)
    return edges


def find_cycle(edges: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        stack.append(module)
        for target in edges[module]:
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[module] = "done"
        return None

    for module in edges:
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_every_module_is_in_a_layer() -> None:
    # A module straight under judge/ (but the API and the errors) would sit in no layer.
    assert len(MODULES) > 50
    stray = [m for m in MODULES if LAYERS[layer_of(m)] == "judge" and m != "judge"]
    assert stray == []


def upward_imports(edges: dict[str, dict[str, int]]) -> list[str]:
    return [
        f"{module} imports {target} (line {line}): {LAYERS[layer_of(module)]} is below "
        f"{LAYERS[layer_of(target)]}"
        for module, targets in edges.items()
        for target, line in targets.items()
        if layer_of(target) > layer_of(module)
    ]


def test_no_import_goes_up_a_layer() -> None:
    assert upward_imports(graph()) == []


@pytest.mark.parametrize(
    ("module", "target", "allowed"),
    [
        pytest.param("judge.checks._result", "judge.cases._case", True, id="down"),
        pytest.param("judge.checks._result", "judge.checks._env", True, id="same-layer"),
        pytest.param("judge.checks._result", "judge.judging._grade", False, id="up"),
        pytest.param("judge.cases._case", "judge.checks._values", False, id="cases-use-checks"),
        pytest.param("judge.judging._grade", "judge", False, id="the-public-api-from-below"),
        pytest.param("judge.cli._main", "judge", True, id="the-public-api-from-the-cli"),
    ],
)
def test_upward_imports(module: str, target: str, allowed: bool) -> None:
    found = upward_imports({module: {target: 3}})
    assert len(found) == (0 if allowed else 1)
    assert all(f.startswith(f"{module} imports {target} (line 3)") for f in found)


def test_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or ())


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        pytest.param({"a": {"b": 1}, "b": {}}, None, id="a-chain-is-no-cycle"),
        pytest.param({"a": {"b": 1}, "b": {"a": 2}}, ["a", "b", "a"], id="two-modules"),
        pytest.param(
            {"a": {"b": 1}, "b": {"c": 1}, "c": {"b": 1}}, ["b", "c", "b"], id="below-the-start"
        ),
        pytest.param({"a": {"b": 1, "c": 1}, "b": {"c": 1}, "c": {}}, None, id="a-diamond"),
    ],
)
def test_find_cycle(edges: dict[str, dict[str, int]], expected: list[str] | None) -> None:
    assert find_cycle(edges) == expected


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        pytest.param("judge._errors", "judge._errors", id="errors-at-the-bottom"),
        pytest.param("judge.cases._case", "judge.cases", id="a-layer-module"),
        pytest.param("judge.adapters.pytest", "judge.adapters", id="a-public-adapter"),
        pytest.param("judge", "judge", id="the-public-api"),
        pytest.param("judge.__main__", "judge.cli", id="main-with-the-cli"),
        pytest.param("judge.cli", "judge.cli", id="the-cli-package"),
    ],
)
def test_layer_of(module: str, layer: str) -> None:
    assert LAYERS[layer_of(module)] == layer


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("import judge.cases._case", "judge.cases._case", id="import"),
        pytest.param(
            "from judge.checks._result import CaseResult",
            "judge.checks._result",
            id="a-name-from-a-module",
        ),
        pytest.param(
            "from judge.endpoints import _local",
            "judge.endpoints._local",
            id="a-module-from-a-package",
        ),
        pytest.param("from judge.endpoints import nothing", "judge.endpoints", id="a-name"),
        pytest.param(
            "def f():\n    from judge.runs._compare import x",
            "judge.runs._compare",
            id="inside-a-function",
        ),
        pytest.param(
            "if TYPE_CHECKING:\n    from judge.judging._grade import Judge",
            "judge.judging._grade",
            id="type-checking-block",
        ),
        pytest.param("from ._check import check", "judge.checks._check", id="relative"),
        pytest.param("from .. import _errors", "judge._errors", id="relative-parent"),
    ],
)
def test_imports_are_read_in_every_form(source: str, expected: str) -> None:
    assert [target for target, _ in imports_in(source, "judge.checks")] == [expected]


def test_every_public_name_still_imports() -> None:
    assert sorted(judge.__all__) == sorted(PUBLIC_NAMES)
    for name in PUBLIC_NAMES:
        assert getattr(judge, name) is not None, name


MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 80


def oversized(source: str, where: str) -> Iterator[str]:
    """What breaks the size rule in one module's source: the module's lines, each class's and
    each function's (methods and nested functions included), decorators counted, so a click
    command's option stack is part of its function."""
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines > MAX_MODULE_LINES:
        yield f"{where}: module of {lines} lines (at most {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            most = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if length > most:
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                yield f"{where}:{start}: {kind} {node.name} of {length} lines (at most {most})"


def test_no_room_is_too_large() -> None:
    found = [
        problem
        for module, path in MODULES.items()
        for problem in oversized(path.read_text(encoding="utf-8"), module)
    ]
    assert found == []


def test_oversized_counts_decorators_and_nesting() -> None:
    options = "".join(f"@option({i})\n" for i in range(40))
    body = "".join(f"    x{i} = {i}\n" for i in range(40))
    method = "".join(f"        x{i} = {i}\n" for i in range(40))
    source = f"{options}def command():\n{body}\n\nclass Small:\n    def f(self):\n{method}"
    assert list(oversized(source, "m")) == ["m:1: function command of 81 lines (at most 80)"]
    nested = "def outer():\n    def inner():\n" + "".join(f"        y{i} = 1\n" for i in range(80))
    assert [p.split(": ", 1)[1] for p in oversized(nested, "m")] == [
        "function outer of 82 lines (at most 80)",
        "function inner of 81 lines (at most 80)",
    ]
    assert list(oversized("x = 1\n" * 451, "m")) == ["m: module of 451 lines (at most 450)"]
    assert list(oversized("x = 1\n" * 450, "m")) == []


def test_a_judge_walks_through_each_room_at_most_three_times() -> None:
    """`bench/judge_walk.py`: the judge, followed as data through `judge grade --batch`,
    enters no module more than three times (the batch room works with `Requests`, never
    back through the facade)."""
    spec = importlib.util.spec_from_file_location("judge_walk", REPO / "bench" / "judge_walk.py")
    assert spec is not None and spec.loader is not None
    walker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(walker)
    visits = walker.walk(REPO / "examples" / "cases.jsonl")
    assert visits[0] == ("judge.judging._grade", "__init__")
    entered = Counter(module for module, _ in visits)
    assert max(entered.values()) <= 3, visits
    with_parts = walker.walk(REPO / "examples" / "cases.jsonl", parts=True)
    assert ("judge.judging._batch", "grade_batches") in with_parts  # the walk does see rooms

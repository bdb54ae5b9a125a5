"""The llama.cpp runtime: what it uses of this CPU, and `judge local build`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from judge.endpoints import _runtime

WHEEL = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "  # noqa: E501
NATIVE = WHEEL.replace("BMI2 = 1 |", "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 |")
XEON = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512vbmi avx512_vnni\n"


def test_the_system_info_says_which_instruction_sets_the_runtime_uses() -> None:
    assert {"AVX2", "FMA", "REPACK"} <= _runtime.runtime_features(WHEEL)
    assert "AVX512" not in _runtime.runtime_features(WHEEL)
    assert {"AVX512", "AVX512_VNNI"} <= _runtime.runtime_features(NATIVE)
    assert "AVX2" not in _runtime.runtime_features("AVX2 = 0 | FMA = 1")


def test_a_portable_wheel_on_an_avx512_cpu_leaves_those_unused(tmp_path: Path) -> None:
    (info := tmp_path / "cpuinfo").write_text(XEON)
    cpu = _runtime.cpu_flags(info)
    assert {"avx2", "avx512f", "avx512_vnni"} <= cpu
    wheel, native = _runtime.runtime_features(WHEEL), _runtime.runtime_features(NATIVE)
    assert _runtime.missing_features(wheel, cpu) == ["AVX512", "AVX512_VBMI", "AVX512_VNNI"]
    assert _runtime.missing_features(native, cpu) == []
    assert _runtime.missing_features(wheel, _runtime.cpu_flags(tmp_path / "absent")) == []


def test_the_build_is_the_installed_release_from_source_built_natively_offline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XLLAMACPP_RELEASE", "1")  # would turn GGML_NATIVE off
    command, env = _runtime.build_command("2026.10.11549")
    assert command[-3:] == ["--no-binary", "xllamacpp", "xllamacpp==2026.10.11549"]
    assert {"--force-reinstall", "--no-deps"} <= set(command)
    assert "XLLAMACPP_RELEASE" not in env and env["PATH"] == os.environ["PATH"]
    flags = env["CMAKE_ARGS"].split()
    assert "-DGGML_NATIVE=ON" in flags
    assert {"-DLLAMA_BUILD_BORINGSSL=OFF", "-DLLAMA_LLGUIDANCE=OFF"} <= set(flags)


def test_the_probe_reads_the_runtime_a_fresh_interpreter_imports() -> None:
    found = _runtime.installed_runtime()
    if found is None:
        pytest.skip("xllamacpp is not installed")
    assert found[1] and _runtime.probed_features() == found[1]


def test_a_build_without_cmake_says_what_it_needs(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    result = CliRunner().invoke(main, ["local", "build", "--force"], env={"PATH": str(tmp_path)})
    assert result.exit_code == 2
    assert "needs cmake and a C++ compiler" in result.output


@pytest.mark.skipif(
    not os.environ.get("JUDGE_REQUIRE_NATIVE"), reason="CI runs `judge local build` first"
)
def test_the_installed_runtime_uses_every_instruction_set_of_this_cpu() -> None:
    found = _runtime.installed_runtime()
    assert found is not None
    assert _runtime.missing_features(found[1], _runtime.cpu_flags()) == []
    result = CliRunner().invoke(main, ["local", "build"])
    assert result.exit_code == 0 and "already uses what this CPU offers" in result.output

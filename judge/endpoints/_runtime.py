"""The llama.cpp runtime under the embedded judge: which CPU instruction sets it uses, and a
rebuild from source for this machine's CPU.

PyPI's `xllamacpp` wheel is built for a portable x86-64 baseline (AVX2). On a CPU with AVX-512
that leaves much of the prompt speed unused: on this project's 2-core Xeon the wheel evaluates
34-39 prompt tokens/s and the same release built here 60-66. `judge local build` compiles the
installed release from its source distribution with llama.cpp's GGML_NATIVE (about 8 minutes on
two cores; pip keeps the built wheel in its cache, so another environment reuses it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from judge._errors import JudgeError

# llama.cpp's name for an instruction set (in its system info), and the Linux cpuinfo flag.
FEATURES = {
    "AVX2": "avx2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX_VNNI": "avx_vnni",
    "AMX_INT8": "amx_int8",
}
# Native code; no download during the build (TLS and llguidance fetch sources, and the embedded
# judge uses neither: it listens on loopback and its grammars are llama.cpp's own).
CMAKE_ARGS = (
    "-DGGML_NATIVE=ON -DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF"
)


class RuntimeBuildError(JudgeError):
    """The runtime cannot be rebuilt here, or the rebuild failed; the message says why."""


def runtime_features(system_info: str) -> set[str]:
    """The instruction sets a llama.cpp system-info line reports as used ("AVX2 = 1 | ...")."""
    return {name for name, on in re.findall(r"([A-Z0-9_]+) = (\d+)", system_info) if on != "0"}


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """This CPU's flags (Linux); empty where they cannot be read, so nothing counts as missing."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return set()
    match = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def missing_features(runtime: set[str], cpu: set[str]) -> list[str]:
    """Instruction sets this CPU has and the runtime was not built to use."""
    return [name for name, flag in FEATURES.items() if flag in cpu and name not in runtime]


def installed_runtime() -> tuple[str, set[str]] | None:
    """The installed xllamacpp's version and the instruction sets it uses; None if absent."""
    try:
        import xllamacpp
    except ImportError:
        return None
    return metadata.version("xllamacpp"), runtime_features(str(xllamacpp.get_system_info()))


def probed_features(python: str = sys.executable) -> set[str]:
    """The instruction sets of the xllamacpp that `python` imports, read in a fresh interpreter
    (this process keeps the library it loaded before a rebuild)."""
    code = "import xllamacpp; print(xllamacpp.get_system_info())"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return runtime_features(done.stdout)


def build_command(version: str) -> tuple[list[str], dict[str, str]]:
    """The pip command (and its environment) that rebuilds `version` for this CPU."""
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall"]
    command += ["--no-binary", "xllamacpp", f"xllamacpp=={version}"]
    env = {k: v for k, v in os.environ.items() if k != "XLLAMACPP_RELEASE"}  # it turns NATIVE off
    env["CMAKE_ARGS"] = CMAKE_ARGS
    return command, env


def rebuild(fix: str, *, force: bool = False, say: Callable[[str], None] = print) -> str:
    """Rebuild the installed release for this CPU unless it already uses all of it (or `force`);
    check the result in a fresh interpreter. Returns what was done; raises RuntimeBuildError."""
    found = installed_runtime()
    if found is None:
        raise RuntimeBuildError(f"xllamacpp is not installed: {fix}")
    version, uses = found
    cpu = cpu_flags()
    unused = missing_features(uses, cpu)
    if not unused and not force:
        return f"xllamacpp {version} already uses what this CPU offers ({' '.join(sorted(uses))})"
    tools = {"cmake": shutil.which("cmake"), "a C++ compiler": shutil.which("c++")}
    if lacking := [name for name, path in tools.items() if path is None]:
        raise RuntimeBuildError(f"needs {' and '.join(lacking)} (Debian: apt install cmake g++)")
    say(f"building xllamacpp {version} for this CPU ({' '.join(unused) or 'forced'})...")
    command, env = build_command(version)
    if subprocess.run(command, env=env, check=False).returncode != 0:
        raise RuntimeBuildError(
            "the build failed (pip's output is above); the runtime is unchanged"
        )
    built = probed_features()
    if still := missing_features(built, cpu):
        raise RuntimeBuildError(f"the rebuilt runtime still leaves {' '.join(still)} unused")
    return f"xllamacpp {version} rebuilt: {' '.join(sorted(built))}"

"""The embedded default judge: a small instruct model served by llama.cpp inside the process."""

from __future__ import annotations

from judge._client import Endpoint
from judge._errors import JudgeError

LOCAL_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def local_endpoint() -> Endpoint:
    """Start the embedded server (once per process) and return its endpoint."""
    raise JudgeError(
        "no judge endpoint is configured: pass --base-url and --model, or set JUDGE_BASE_URL, "
        "OPENROUTER_API_KEY or OPENAI_API_KEY"
    )

"""Which endpoint answers: a URL, a model and a key, from flags or the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from judge._errors import JudgeError

OPENROUTER_URL = "https://openrouter.ai/api/v1"
OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_MODELS = {"openrouter": "openai/gpt-4.1-mini", "openai": "gpt-4.1-mini"}


@dataclass(frozen=True)
class Endpoint:
    """Where the judge model is served. The key never appears in its repr."""

    base_url: str
    model: str
    provider: str
    """`openrouter`, `openai`, `custom` or `local`."""
    api_key: str = field(default="not-needed", repr=False)


def resolve_endpoint(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Endpoint | None:
    """The endpoint from flags, then the environment; None means the embedded local judge.

    `JUDGE_BASE_URL` / `JUDGE_API_KEY` / `JUDGE_MODEL` name any OpenAI-compatible endpoint;
    otherwise `OPENROUTER_API_KEY` selects OpenRouter and `OPENAI_API_KEY` OpenAI. A provider's
    own key goes only to that provider's host: a custom URL gets `api_key` or `JUDGE_API_KEY`.
    """
    env = os.environ if env is None else env
    if model == "local":
        return None
    model = model or env.get("JUDGE_MODEL") or None
    base_url = base_url or env.get("JUDGE_BASE_URL") or None
    api_key = api_key or env.get("JUDGE_API_KEY") or None
    if base_url:
        provider = provider_of(base_url)
        own_key = {"openrouter": "OPENROUTER_API_KEY", "openai": "OPENAI_API_KEY"}.get(provider)
        key = api_key or (env.get(own_key) if own_key else None) or "not-needed"
        if not model:
            if provider == "custom":
                raise JudgeError(
                    f"name the judge model served at {base_url}: --model NAME (or JUDGE_MODEL)"
                )
            model = DEFAULT_MODELS[provider]
        return Endpoint(base_url=base_url.rstrip("/"), model=model, provider=provider, api_key=key)
    if env.get("OPENROUTER_API_KEY") and not api_key:
        return Endpoint(
            base_url=OPENROUTER_URL,
            model=model or DEFAULT_MODELS["openrouter"],
            provider="openrouter",
            api_key=env["OPENROUTER_API_KEY"],
        )
    openai_key = api_key or env.get("OPENAI_API_KEY")
    if openai_key:
        return Endpoint(
            base_url=OPENAI_URL,
            model=model or DEFAULT_MODELS["openai"],
            provider="openai",
            api_key=openai_key,
        )
    return None


def provider_of(base_url: str) -> str:
    """`openrouter` or `openai` when the URL's host is theirs (not merely names it), else
    `custom`."""
    host = (urlsplit(base_url).hostname or "").lower()
    for provider, domain in (("openrouter", "openrouter.ai"), ("openai", "api.openai.com")):
        if host == domain or host.endswith("." + domain):
            return provider
    return "custom"

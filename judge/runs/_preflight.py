"""Pre-flight: what each candidate model supports (the endpoint's `GET /models`), and the one
set of request settings that every candidate gets.

Fair by construction: a setting is sent only when every candidate supports it, and then to all
of them with the same value; the request body differs between candidates only by `model`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge._errors import JudgeError
from judge.cases._case import Case, Tool
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.endpoints._endpoint import OPENROUTER_URL, Endpoint

LOCAL = "local"
"""The candidate name of the embedded model."""
REQUIRED = ("tools", "tool_choice")
# llama.cpp's server takes these (and ignores fields it does not know, like `provider`).
_LOCAL_PARAMETERS = ("tools", "tool_choice", "temperature", "seed")


class PreflightError(JudgeError):
    """A candidate cannot be run fairly (unknown, or no tool calling): nothing was sent."""


@dataclass(frozen=True)
class ModelInfo:
    """What the endpoint says about one model."""

    id: str
    supported_parameters: tuple[str, ...] | None
    """None when the endpoint does not say (it cannot be checked)."""
    prompt_price: float | None = None
    """USD per prompt token."""
    completion_price: float | None = None
    """USD per completion token."""
    supported_efforts: tuple[str, ...] | None = None

    def supports(self, parameter: str) -> bool:
        return self.supported_parameters is not None and parameter in self.supported_parameters

    def cost(self, usage: Mapping[str, Any] | None) -> float | None:
        """USD for one response's usage, when the prices are known."""
        if usage is None or self.prompt_price is None or self.completion_price is None:
            return None
        prompt = usage.get("prompt_tokens") or 0
        completion = usage.get("completion_tokens") or 0
        return float(prompt) * self.prompt_price + float(completion) * self.completion_price


LOCAL_INFO = ModelInfo(LOCAL, _LOCAL_PARAMETERS, prompt_price=0.0, completion_price=0.0)


@dataclass(frozen=True)
class Requested:
    """The settings asked for on the command line (or by the caller)."""

    reasoning_effort: str | None = "low"
    """None: no `reasoning` field at all."""
    provider: str | None = None
    """Pin one provider: `provider.order = [SLUG]`, no fallbacks."""
    temperature: float | None = 0.0
    seed: int | None = None
    """Run r gets `seed + r - 1`, the same for every candidate."""


@dataclass(frozen=True)
class Agreed:
    """The settings every candidate gets, and what pre-flight found."""

    settings: dict[str, Any]
    """Every request field but `model`, `messages` and `tools` (run-dependent `seed` aside)."""
    seed: int | None
    models: dict[str, ModelInfo]
    warnings: list[str] = field(default_factory=list)


def parse_catalog(body: Any) -> dict[str, ModelInfo]:
    """The models of a `GET /models` body (OpenAI form, with OpenRouter's extra fields)."""
    items = body.get("data") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise PreflightError("GET /models did not return a list of models ({'data': [...]})")
    found: dict[str, ModelInfo] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        params = item.get("supported_parameters")
        pricing = _object(item.get("pricing"))
        reasoning = _object(item.get("reasoning"))
        efforts = reasoning.get("supported_efforts")
        found[item["id"]] = ModelInfo(
            id=item["id"],
            supported_parameters=tuple(map(str, params)) if isinstance(params, list) else None,
            prompt_price=_price(pricing.get("prompt")),
            completion_price=_price(pricing.get("completion")),
            supported_efforts=tuple(map(str, efforts)) if isinstance(efforts, list) else None,
        )
    return found


def agree(
    candidates: Sequence[str],
    catalog: Mapping[str, ModelInfo] | None,
    requested: Requested,
    *,
    endpoint: str,
) -> Agreed:
    """Check every candidate against the catalog and settle the shared settings.

    Raises `PreflightError` naming every refused candidate. `catalog` None means pre-flight
    was skipped: hosted candidates are then unchecked, and settings they may lack are left out.
    """
    refused: list[str] = []
    warnings: list[str] = []
    models: dict[str, ModelInfo] = {}
    for name in candidates:
        model, pinned = split_candidate(name)
        if name == LOCAL:
            models[name] = LOCAL_INFO
            continue
        if model == LOCAL or (pinned is None and "@" in name):
            refused.append(f"{name}: a provider is pinned as MODEL@PROVIDER, on a hosted model")
            continue
        if catalog is None:
            models[name] = ModelInfo(model, None)
            warnings.append(f"{name}: pre-flight skipped, tool support unchecked")
            continue
        info = catalog.get(model)
        if info is None:
            close = difflib.get_close_matches(model, list(catalog), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            refused.append(f"{name}: not among the models {endpoint} serves{hint}")
            continue
        models[name] = info
        if info.supported_parameters is None:
            warnings.append(
                f"{name}: {endpoint} lists no supported_parameters; tool support unchecked"
            )
            continue
        lacking = [p for p in REQUIRED if not info.supports(p)]
        if lacking:
            refused.append(
                f"{name}: its supported_parameters lack {' and '.join(lacking)}, so it cannot "
                "be asked for tool calls"
            )
        effort = requested.reasoning_effort
        if effort and not info.supports("reasoning"):
            warnings.append(
                f"{name}: its supported_parameters lack reasoning, yet reasoning effort "
                f"{effort!r} is sent: with require_parameters no provider may serve it "
                "(--reasoning-effort off sends no reasoning field)"
            )
        elif effort and info.supported_efforts is not None and effort not in info.supported_efforts:
            warnings.append(
                f"{name}: reasoning effort {effort!r} is not among its supported efforts "
                f"({', '.join(info.supported_efforts) or 'none'})"
            )
    if refused:
        raise PreflightError("refused before any request was sent:\n  " + "\n  ".join(refused))

    settings: dict[str, Any] = {"tool_choice": "auto"}
    if requested.reasoning_effort is not None:
        settings["reasoning"] = {"effort": requested.reasoning_effort}
    provider: dict[str, Any] = {"require_parameters": True}
    if requested.provider:
        provider.update(order=[requested.provider], allow_fallbacks=False)
    settings["provider"] = provider
    if requested.temperature is not None and _all_support("temperature", models, warnings):
        settings["temperature"] = requested.temperature
    seed = requested.seed
    if seed is not None and not _all_support("seed", models, warnings):
        seed = None
    return Agreed(settings=settings, seed=seed, models=models, warnings=warnings)


def request_body(
    model: str,
    case: Case,
    run: int,
    agreed: Agreed,
    *,
    messages: Sequence[dict[str, Any]] | None = None,
    tools: Sequence[Tool] | None = None,
) -> dict[str, Any]:
    """The chat request for one model, case and run: the same for every model but `model`.
    An agent run's steps send their own `messages`, and may send other `tools`."""
    offered = case.tools if tools is None else tools
    sent, pinned = split_candidate(model)
    body: dict[str, Any] = {
        "model": sent,
        "messages": case.messages if messages is None else list(messages),
    }
    if offered:  # an empty `tools` list is refused by OpenAI-compatible endpoints
        body["tools"] = [tool.to_openai() for tool in offered]
        body.update(agreed.settings)
    else:
        body.update({k: v for k, v in agreed.settings.items() if k != "tool_choice"})
    if pinned is not None:  # this candidate's provider, and nothing else differs
        body["provider"] = {"order": [pinned], "allow_fallbacks": False, "require_parameters": True}
    if agreed.seed is not None:
        body["seed"] = agreed.seed + run - 1
    return body


def split_candidate(name: str) -> tuple[str, str | None]:
    """The model a candidate sends, and the provider it pins: `acme/m@fast` is `acme/m`
    served by `fast` only (OpenRouter's `provider.order`, no fallbacks); `acme/m`, any."""
    model, at, pinned = name.rpartition("@")
    return (model, pinned) if at and model and pinned else (name, None)


def _all_support(parameter: str, models: Mapping[str, ModelInfo], warnings: list[str]) -> bool:
    lacking = [name for name, info in models.items() if not info.supports(parameter)]
    if lacking:
        warnings.append(
            f"{parameter} left out for every candidate: {', '.join(lacking)} "
            f"{'does' if len(lacking) == 1 else 'do'} not list it in supported_parameters"
        )
    return not lacking


def _price(value: Any) -> float | None:
    try:
        price = float(value)
    except (TypeError, ValueError):
        return None
    return price if price >= 0 else None  # OpenRouter prices a router "-1": unknown


def candidate_endpoint(
    candidates: Sequence[str],
    base_url: str | None,
    key_env: str | None,
    env: Mapping[str, str] | None = None,
) -> Endpoint | None:
    """The endpoint serving the hosted candidates: `base_url`, else OpenRouter, whose key must
    be set. The key is read from `key_env` (default: OPENROUTER_API_KEY, for OpenRouter only,
    so that key never goes to another host). None when every candidate is `local`."""
    env = os.environ if env is None else env
    hosted = [name for name in candidates if name != LOCAL]
    if not hosted:
        return None
    url = (base_url or OPENROUTER_URL).rstrip("/")
    openrouter = "openrouter.ai" in url
    key_env = key_env or ("OPENROUTER_API_KEY" if openrouter else None)
    key = env.get(key_env) if key_env else None
    if openrouter and not key:
        raise PreflightError(
            f"the candidates {', '.join(hosted)} are served by OpenRouter, which needs a key: "
            f"set {key_env} (or --base-url for another endpoint, or --models local for the "
            "embedded model)"
        )
    provider = "openrouter" if openrouter else "custom"
    return Endpoint(base_url=url, model="", provider=provider, api_key=key or "not-needed")


async def preflight(
    candidates: Sequence[str],
    requested: Requested,
    *,
    endpoint: Endpoint | None,
    check: bool = True,
    timeout: float = 120.0,
    key_hint: str = "OPENROUTER_API_KEY",
) -> Agreed:
    """Read the endpoint's `GET /models` (only when a hosted candidate needs it) and settle the
    shared settings. Raises `PreflightError`, or `CandidateEndpointError` for a refused key."""
    catalog: dict[str, ModelInfo] | None = {}
    if endpoint is not None and any(name != LOCAL for name in candidates):
        if check:
            client = CandidateClient(endpoint, concurrency=1, timeout=timeout, key_hint=key_hint)
            try:
                body = await client.models()
            except CandidateRequestError as exc:
                raise PreflightError(
                    f"pre-flight failed: {exc} (an endpoint without GET /models can be run "
                    "with --no-preflight)"
                ) from None
            finally:
                await client.aclose()
            catalog = parse_catalog(body)
        else:
            catalog = None
    return agree(candidates, catalog, requested, endpoint=endpoint.base_url if endpoint else "")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}

"""The service's bearer token, as read from the environment, and the addresses it must guard:
surrounding whitespace is never part of it (a token written with `echo` ends in a newline), and
off loopback none, or a short one, is refused, with the reason."""

from __future__ import annotations

import ipaddress
import os

TOKEN_ENV = "JUDGE_SERVICE_TOKEN"
MIN_TOKEN_CHARS = 16
"""The shortest token that may guard an address beyond loopback."""


def service_token(given: str | None = None) -> str | None:
    """`given`, else `JUDGE_SERVICE_TOKEN`, stripped of surrounding whitespace (None when that
    leaves nothing)."""
    raw = given if given is not None else os.environ.get(TOKEN_ENV)
    return (raw.strip() or None) if raw is not None else None


def token_refusal(host: str, token: str | None) -> str | None:
    """Why serving on `host` with `token` is refused (None: it is not): beyond loopback, no
    token, or one shorter than `MIN_TOKEN_CHARS`."""
    if is_loopback(host):
        return None
    if token is None:
        return f"{host} is not a loopback address: set {TOKEN_ENV}"
    if len(token) < MIN_TOKEN_CHARS:
        return (
            f"{TOKEN_ENV} has {len(token)} characters: one that guards {host}, beyond "
            f"loopback, needs at least {MIN_TOKEN_CHARS} (e.g. `python -c 'import secrets; "
            "print(secrets.token_urlsafe(24))'`)"
        )
    return None


def is_loopback(host: str) -> bool:
    """`localhost`, or an address in 127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

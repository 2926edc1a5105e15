"""The ``provider_retries`` setting: how a model request that fails before its answer begins is
asked again (:mod:`gmchat_nb.core.providers.retries` does the asking; the session hands it this
setting)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from . import checks
from .checks import check_known, invalid

__all__ = ["PROVIDER_RETRY_KEYS", "ProviderRetrySettings", "provider_retries"]

PROVIDER_RETRY_KEYS = ("attempts", "max_wait_seconds")
MAX_ATTEMPTS = 10
MAX_WAIT_SECONDS = 600


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRetrySettings:
    """``provider_retries``: ``attempts`` is how many requests one model request may take when
    it fails before its answer begins (an integer from 1 to 10; the default 3 is the first try
    and two retries; 1 turns retrying off); ``max_wait_seconds`` is the longest wait before
    asking again (a number from 0 to 600, default 30), a vendor's ``Retry-After`` included."""

    attempts: int = 3
    max_wait_seconds: float = 30

    def __post_init__(self) -> None:
        attempts = checks.int_between(1, MAX_ATTEMPTS)("provider_retries.attempts", self.attempts)
        object.__setattr__(self, "attempts", attempts)
        wait = checks.number_between(0, MAX_WAIT_SECONDS)(
            "provider_retries.max_wait_seconds", self.max_wait_seconds
        )
        object.__setattr__(self, "max_wait_seconds", wait)


def provider_retries(key: str, value: object) -> ProviderRetrySettings:
    """A :class:`ProviderRetrySettings`, or a mapping of its keys (unknown keys refused with
    "did you mean")."""
    if isinstance(value, ProviderRetrySettings):
        return value
    if isinstance(value, Mapping):
        check_known(f"{key}.", value, PROVIDER_RETRY_KEYS, "setting")
        return ProviderRetrySettings(**value)
    raise invalid(key, value, f"a mapping with keys from {', '.join(PROVIDER_RETRY_KEYS)}")

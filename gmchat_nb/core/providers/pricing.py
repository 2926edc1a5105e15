"""What a model request costs: its tokens priced with genai-prices (cache-aware, dated prices),
or with the ``prices`` setting's override for that model.

A request is priced by the provider that served it, named as reports name it
(``openai:gpt-4.1-mini``, a replayed cassette by the label it recorded). Only the hosted vendors
charge: ``openai`` and ``anthropic`` models are looked up in genai-prices' data; a model it does
not know costs ``None`` ("—" on screen), never 0. Models that run here (``ollama``, ``local``)
and the providers that are no model (``offline``, ``scripted``, the eval oracle) cost nothing
and say so. Every priced request records where its price came from (the genai-prices version,
or ``override``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

from .base import TokenUsage

__all__ = [
    "FREE_SOURCES",
    "PriceOverride",
    "Priced",
    "ServedRequest",
    "context_window",
    "estimate_request",
    "overrides_from",
    "price_request",
    "prices_version",
    "turn_cost",
    "usage_record",
]

VENDORS: Final = {"openai": "openai", "anthropic": "anthropic"}
"""Providers whose requests a vendor bills: our name -> genai-prices' provider id."""
FREE_SOURCES: Final = {
    "ollama": "local",
    "local": "local",
    "offline": "offline",
    "scripted": "scripted",
    "oracle": "scripted",
    # an agent's call relayed over MCP (core/agent): its model is its host's, billed there
    "agent": "agent",
}
"""Providers that cost nothing, and what they are called in a cost's ``source``."""
MILLION: Final = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """A model's price from the ``prices`` setting: USD per million tokens of each kind (cache
    reads and writes fall back to the input price when not given), and its context window."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    context_window: int | None = None

    def cost(self, usage: TokenUsage) -> Decimal:
        uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        read = self.cache_read if self.cache_read is not None else self.input
        write = self.cache_write if self.cache_write is not None else self.input
        total = (
            uncached * self.input
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output
        )
        return total / MILLION


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One model request of a turn as it was served: by which provider (``label``: vendor and
    model; ``provider``: our provider name), its tokens and how long it took."""

    label: str
    provider: str
    usage: TokenUsage
    latency_ms: float
    at: float = dataclasses.field(default_factory=time.time)
    role: str | None = None  # a planned turn's role (planner, executor, synthesizer)


@dataclass(frozen=True, slots=True)
class Priced:
    """A request's cost: ``usd`` (``None`` when its price is unknown) and where the price came
    from (``source``: ``genai-prices 0.2.3``, ``override``, ``local``, ``offline``,
    ``scripted`` or ``unknown``)."""

    usd: Decimal | None
    source: str


def prices_version() -> str:
    """``genai-prices X.Y.Z``, the price data's version (``genai-prices missing`` without it)."""
    try:
        return f"genai-prices {version('genai-prices')}"
    except PackageNotFoundError:
        return "genai-prices missing"


def _vendor_and_model(label: str, provider: str) -> tuple[str, str]:
    vendor, _, model = label.partition(":")
    if not model:  # a label without a model (``offline``, ``scripted``) names the provider
        return label or provider, ""
    return vendor, model


def price_request(
    request: ServedRequest, overrides: Mapping[str, PriceOverride] | None = None
) -> Priced:
    """What ``request`` cost (see the module docstring)."""
    vendor, model = _vendor_and_model(request.label, request.provider)
    override = _override(overrides or {}, request.label, model)
    if override is not None:
        return Priced(override.cost(request.usage), "override")
    free = FREE_SOURCES.get(vendor) or FREE_SOURCES.get(request.provider)
    if free is not None:
        return Priced(Decimal(0), free)
    provider_id = VENDORS.get(vendor)
    if provider_id is None or not model:
        return Priced(None, "unknown")
    usd = _genai_price(provider_id, model, request.usage, request.at)
    return Priced(usd, prices_version() if usd is not None else "unknown")


def _override(
    overrides: Mapping[str, PriceOverride], label: str, model: str
) -> PriceOverride | None:
    return overrides.get(label) or (overrides.get(model) if model else None)


def _genai_price(provider_id: str, model: str, usage: TokenUsage, at: float) -> Decimal | None:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # the price data is a dependency; a broken install prices nothing
        return None
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    counted = Usage(
        # a gateway may count more cached tokens than input tokens: never a negative uncached part
        input_tokens=max(usage.input_tokens, cached),
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens or None,
        cache_write_tokens=usage.cache_write_tokens or None,
    )
    try:
        calculation = calc_price(
            counted,
            model_ref=model,
            provider_id=provider_id,
            genai_request_timestamp=datetime.fromtimestamp(at, UTC),
        )
    except LookupError:
        return None
    return Decimal(calculation.total_price)


def context_window(
    label: str, provider: str, overrides: Mapping[str, PriceOverride] | None = None
) -> int | None:
    """The model's context window in tokens: the override's, else genai-prices' (``None`` when
    neither knows it)."""
    vendor, model = _vendor_and_model(label, provider)
    override = _override(overrides or {}, label, model)
    if override is not None and override.context_window:
        return override.context_window
    provider_id = VENDORS.get(vendor)
    return _known_window(provider_id, model) if provider_id and model else None


@lru_cache(maxsize=64)
def _known_window(provider_id: str, model: str) -> int | None:
    try:
        from genai_prices import Usage, calc_price

        found = calc_price(Usage(input_tokens=0, output_tokens=0), model, provider_id=provider_id)
    except (ImportError, LookupError):
        return None
    window: Any = getattr(found.model, "context_window", None)
    return int(window) if isinstance(window, int) and window > 0 else None


def overrides_from(prices: Mapping[str, Mapping[str, Any]]) -> dict[str, PriceOverride]:
    """The ``prices`` setting (checked by :mod:`gmchat_nb.core.settings.costs`) as overrides."""

    def money(value: Any) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    return {
        model: PriceOverride(
            input=Decimal(str(price["input"])),
            output=Decimal(str(price["output"])),
            cache_read=money(price.get("cache_read")),
            cache_write=money(price.get("cache_write")),
            context_window=price.get("context_window"),
        )
        for model, price in prices.items()
    }


def usage_record(request: ServedRequest, priced: Priced) -> dict[str, Any]:
    """A request as a usage record (the store's ``usage_records`` columns)."""
    usage = request.usage
    return {
        "provider": request.label,
        "input_tokens": usage.input_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "estimated": usage.estimated,
        "latency_ms": request.latency_ms,
        "cost_usd": None if priced.usd is None else str(priced.usd),
        "price_source": priced.source,
        "at": request.at,
    }


def turn_cost(
    requests: list[ServedRequest], overrides: Mapping[str, PriceOverride] | None = None
) -> dict[str, Any] | None:
    """A turn's ``done.cost``: ``usd`` (``None`` when a request's price is unknown), the
    price ``sources``, the ``requests`` and their ``tokens`` of each kind, the ``models`` that
    served them, and the ``context`` the next request will carry (``tokens`` of the last
    request's input and answer, the model's ``window`` and their ``share``); ``None`` for a
    turn that asked no model."""
    if not requests:
        return None
    priced = [price_request(request, overrides) for request in requests]
    unknown = sum(1 for item in priced if item.usd is None)
    total = sum((item.usd for item in priced if item.usd is not None), Decimal(0))
    tokens = TokenUsage()
    for request in requests:
        tokens = tokens + request.usage
    counts = tokens.details()
    estimated = counts.pop("estimated")
    last = requests[-1]
    window = context_window(last.label, last.provider, overrides)
    used = last.usage.input_tokens + last.usage.output_tokens
    return {
        "usd": None if unknown else float(total),
        "currency": "USD",
        "sources": sorted({item.source for item in priced}),
        "unpriced": unknown,
        "requests": len(requests),
        "tokens": counts,
        "estimated": estimated,
        "models": list(dict.fromkeys(request.label for request in requests)),
        "context": {
            "tokens": used,
            "window": window,
            "share": round(used / window, 4) if window else None,
        },
    }


CHARS_PER_TOKEN: Final = 4


def estimate_request(
    label: str, provider: str, messages: Sequence[Any], tools: Sequence[Any] = ()
) -> ServedRequest:
    """The request about to be sent, its input counted at about four characters a token (what
    a cost budget reserves before the vendor says; ``estimated``), with no output yet."""
    characters = 0
    for message in messages:
        characters += len(getattr(message, "content", "") or "")
        result = getattr(message, "tool_result", None)
        if result is not None:
            characters += len(json.dumps(result, default=str))
        for call in getattr(message, "tool_calls", ()) or ():
            characters += len(json.dumps(getattr(call, "args", {}), default=str))
    for tool in tools:
        characters += len(json.dumps(getattr(tool, "input_schema", {}), default=str))
        characters += len(getattr(tool, "description", "") or "")
    tokens = -(-characters // CHARS_PER_TOKEN)
    return ServedRequest(label, provider, TokenUsage(tokens, 0, estimated=True), 0.0)

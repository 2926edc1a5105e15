"""The ``prices`` setting: a model's price where genai-prices has none (or another one), in USD
per million tokens, and its context window.

    prices:
      openai:my-finetune: {input: 0.5, output: 2.0, cache_read: 0.05, context_window: 128000}
      gemma: {input: 0, output: 0}

A key is a provider label (``openai:gpt-4.1-mini``) or a model name alone. ``input`` and
``output`` are required; ``cache_read`` and ``cache_write`` default to the input price.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .checks import ChatConfigurationError, invalid, mapping

__all__ = ["PRICE_FIELDS", "cost_budget", "prices"]

PRICE_FIELDS: Final = ("input", "output", "cache_read", "cache_write", "context_window")


def prices(key: str, value: object) -> Mapping[str, Mapping[str, float | int]]:
    """The check of ``prices``: model -> {input, output, cache_read?, cache_write?,
    context_window?}, every price a number >= 0, the window a whole number > 0."""
    checked = mapping(key, value)
    result: dict[str, Mapping[str, float | int]] = {}
    for model, price in checked.items():
        where = f"{key}.{model}"
        fields = mapping(where, price)
        unknown = [name for name in fields if name not in PRICE_FIELDS]
        if unknown:
            raise ChatConfigurationError(
                f"Chat setting '{where}.{unknown[0]}' is unknown; a price takes "
                f"{', '.join(PRICE_FIELDS)}.",
                key=f"{where}.{unknown[0]}",
            )
        for required in ("input", "output"):
            if required not in fields:
                raise ChatConfigurationError(
                    f"Chat setting '{where}.{required}' is missing: a price needs 'input' and "
                    "'output' (USD per million tokens).",
                    key=f"{where}.{required}",
                )
        entry: dict[str, float | int] = {}
        for name, number in fields.items():
            entry[name] = _field(f"{where}.{name}", name, number)
        result[model] = MappingProxyType(entry)
    return MappingProxyType(result)


def _field(key: str, name: str, value: Any) -> float | int:
    if name == "context_window":
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise invalid(key, value, "a whole number of tokens > 0")
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise invalid(key, value, "a price >= 0 (USD per million tokens)")
    return float(value)


def cost_budget(key: str, value: object) -> float | None:
    """A positive amount of USD, or ``None`` (null, 0 or negative) for no budget."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise invalid(
            key, value, "a number of USD (a positive budget; null, 0 or negative for none)"
        )
    number = float(value)
    return number if number > 0 else None

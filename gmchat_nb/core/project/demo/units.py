"""Measurements: ``"<value> <unit>"`` text and the few unit conversions the demo knows.

Currencies convert at a fixed rate, **1 EUR = 1.1 USD**, so results are reproducible. Any unit
converts to itself; everything else is a :class:`UnitError` that names the offending unit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["EUR_TO_USD", "Measurement", "UnitError", "convert", "parse_measurement"]

EUR_TO_USD = 1.1
"""The fixed exchange rate: 1 EUR is worth 1.1 USD."""

# unit -> (dimension, size of one unit in the dimension's base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "EUR": ("currency", 1.0),
    "USD": ("currency", 1.0 / EUR_TO_USD),
}
_TEXT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s+(\S+)\s*$")


class UnitError(ValueError):
    """A unit that is unknown or cannot be converted to the unit a field is stored in."""


@dataclass(frozen=True)
class Measurement:
    """A number with a unit, as GraphQL's ``MeasurementType {value, unit}`` shows it."""

    value: float
    unit: str

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit}"


def parse_measurement(text: str) -> Measurement:
    """Parse ``"12.5 EUR"``; raises :class:`ValueError` for anything else."""
    match = _TEXT.match(text)
    if not match or not math.isfinite(float(match.group(1))):
        raise ValueError(
            f'Invalid measurement {text!r}: expected "<value> <unit>", e.g. "12.5 EUR".'
        )
    return Measurement(float(match.group(1)), match.group(2))


def convert(value: float, source: str, target: str) -> float:
    """``value`` in ``source`` expressed in ``target``; :class:`UnitError` when impossible."""
    if source == target:
        return value
    unknown = [unit for unit in (source, target) if unit not in _UNITS]
    if len(unknown) == 1:
        known = ", ".join(sorted(_UNITS))
        raise UnitError(f'Unknown unit "{unknown[0]}"; known units: {known}.')
    if unknown or _UNITS[source][0] != _UNITS[target][0]:
        raise UnitError(f'Cannot convert "{source}" to "{target}".')
    source_size, target_size = _UNITS[source][1], _UNITS[target][1]
    # Rounding hides binary noise such as 11.000000000000002 in results a user reads.
    return round(value * source_size / target_size, 9)

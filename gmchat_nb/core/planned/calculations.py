"""Numbers a question asks for, computed by the engine in ``Decimal`` over linked evidence.

A model adding forty prices in its head gets some wrong, and floats make 0.1 + 0.2 into
0.30000000000000004. Here every operand is a path into a recorded evidence payload (a literal
cannot be passed), values are read as ``Decimal`` from their text, units travel with them and a
mismatch is refused, not guessed. Errors name the operand, the path and what was found.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

from .evidence import EvidenceRecord, EvidenceStore, IncompatibleEvidenceError, thaw_json

# What group_by computes per group; the others take a fixed number of values (or pairs).
GROUPABLE_OPERATIONS = ("count", "sum", "average", "minimum", "maximum")
_PAIRWISE = ("difference", "ratio", "percentage")
OPERATIONS = (*GROUPABLE_OPERATIONS, *_PAIRWISE, "multiply", "sum_products")

MAX_INPUTS = 200  # inputs a payload lists; the calculation itself uses every value
_CLIP = 80
_PLACES = Decimal("1e-12")  # averages, ratios and percentages keep at most 12 decimal places
_MAX_EXPONENT = 400  # floats reach 1e308 and 5e-324; beyond that a plain text runs for pages
_TRAPS = [decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow]
_CONTEXT = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN, traps=_TRAPS)
_TEXT_CONTEXT = decimal.Context(prec=28, rounding=decimal.ROUND_HALF_EVEN)
_FANOUT = "*"
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?")
_STRING_UNIT = re.compile(r"(?:[^\W\d_]|[%°/*²³]){1,16}")  # letters and a few signs

Path = tuple[str | int, ...]
Pairs = Sequence[tuple["Quantity", "Quantity"]]


class CalculationError(ValueError):
    """A calculation that cannot be done; the message is safe to show a model."""


def _clip(value: Any) -> str:
    """A value as a short quoted text for a message: JSON where possible, at most 80 characters."""
    try:  # thawed: frozen payloads hold mapping proxies, which json cannot write
        text = value if isinstance(value, str) else json.dumps(thaw_json(value), default=str)
    except ValueError:  # an int past Python's 4300-digit limit for texts
        text = f"a {type(value).__name__} too large to show"
    return repr(text[:_CLIP] + "…" if len(text) > _CLIP else text)


def _plain(value: Decimal) -> str:
    """Plain notation, trailing zeros removed, at most 28 significant digits."""
    normal = value.normalize(_TEXT_CONTEXT)
    return "0" if normal.is_zero() else format(normal, "f")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number and its unit (``None`` for a plain number)."""

    value: Decimal
    unit: str | None = None

    def text(self) -> str:
        """``"12.5 EUR"``, ``"3"``; never exponent notation."""
        return f"{_plain(self.value)} {self.unit}" if self.unit else _plain(self.value)


def _checked(value: Decimal, what: str) -> Decimal:
    """``value`` when finite and of a magnitude a plain text can show."""
    if not value.is_finite():
        raise CalculationError(f"{what} is not a finite number")
    if not value.is_zero() and abs(value.adjusted()) > _MAX_EXPONENT:
        raise CalculationError(f"{what} is out of range (beyond 10^±{_MAX_EXPONENT})")
    return value


def _number_of(value: Any) -> Decimal:
    """A plain number (no unit): int, float, Decimal or a numeric string."""
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        return _checked(Decimal(value), _clip(value if isinstance(value, int) else str(value)))
    if isinstance(value, float):
        # From the shortest text that round-trips: 0.1 stays 0.1, not 0.1000000000000000055…
        return _checked(Decimal(repr(value)), _clip(value))
    text = value.strip() if isinstance(value, str) else None
    if text is not None and _NUMBER.fullmatch(text):
        return _checked(Decimal(text), _clip(value))
    if text is not None and "," in text:
        raise CalculationError(f"{_clip(value)} has a comma: 1,234 or 1,5 is ambiguous")
    raise CalculationError(f"{_clip(value)} is not a number")


def quantity_of(value: Any) -> Quantity:
    """Read a value as a :class:`Quantity`.

    Takes ints, finite floats and Decimals; numeric strings (``"-3.5"``, ``"12 EUR"``: one space,
    then a unit of letters, ``%``, ``°``, ``/`` or ``*``, at most 16); ``{"value": x, "unit": u}``
    mappings such as GraphQL's MeasurementType (other keys are ignored, so a calculation's own
    payload reads back). Booleans, null and thousands separators are refused.
    """
    if isinstance(value, Mapping):
        if "value" not in value:
            raise CalculationError(f"the object {_clip(value)} has no 'value'")
        unit = value.get("unit")
        if unit is not None and not isinstance(unit, str):
            raise CalculationError(f"the unit {_clip(unit)} is not a text")
        return Quantity(_number_of(value["value"]), (unit or "").strip() or None)
    if isinstance(value, str):
        number, space, unit = value.strip().partition(" ")
        if space and _NUMBER.fullmatch(number):
            if not _STRING_UNIT.fullmatch(unit):
                raise CalculationError(
                    f"{_clip(value)}: a unit is one space, then up to 16 letters, %, °, / or *"
                )
            return Quantity(_checked(Decimal(number), _clip(value)), unit)
    return Quantity(_number_of(value))


@dataclass(frozen=True, slots=True)
class Operand:
    """A path into an evidence record's payload; ``"*"`` fans out over a list's items."""

    evidence_id: str
    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", tuple(self.path))  # a list (from JSON) is unhashable


def _path_text(path: Sequence[str | int]) -> str:
    return ".".join(str(step) for step in path) if path else "(the whole payload)"


def _step(item: Any, step: str | int) -> list[tuple[str | int, Any]]:
    """The (step taken, value) pairs one path element leads to from ``item``."""
    if step == _FANOUT or (isinstance(step, int) and not isinstance(step, bool)):
        if not isinstance(item, list | tuple):
            raise CalculationError(f"{step!r} needs a list, found {_clip(item)}")
        if step == _FANOUT:
            return list(enumerate(item))
        if not 0 <= int(step) < len(item):
            raise CalculationError(f"index {step} is out of range for a list of {len(item)}")
        return [(step, item[int(step)])]
    if not isinstance(step, str):
        raise CalculationError(f"{step!r} is neither a key, an index nor '*'")
    if not isinstance(item, Mapping):
        raise CalculationError(f"key {step!r} needs an object, found {_clip(item)}")
    if step not in item:
        raise CalculationError(f"key {step!r} is missing; the keys are {_clip(sorted(item))}")
    return [(step, item[step])]


def _resolve(payload: Any, path: Sequence[str | int]) -> list[tuple[Path, Any]]:
    """Every value ``path`` reaches, each with its concrete path (indices in place of ``*``)."""
    found: list[tuple[Path, Any]] = [((), payload)]
    for position, step in enumerate(path):
        following: list[tuple[Path, Any]] = []
        for at, item in found:
            try:
                following.extend(((*at, taken), value) for taken, value in _step(item, step))
            except CalculationError as error:
                raise CalculationError(
                    f"path {_path_text(path)}, position {position} "
                    f"(at {_path_text([*at, step])}): {error}"
                ) from None
        found = following
    return found


def values_at(payload: Any, path: Sequence[str | int]) -> list[Any]:
    """The values ``path`` reaches in ``payload``; ``"*"`` fans out over a list."""
    return [value for _, value in _resolve(payload, path)]


def _common_unit(values: Sequence[Quantity], verb: str) -> str | None:
    for other in values[1:]:
        if other.unit != values[0].unit:
            raise CalculationError(f"cannot {verb} {values[0].text()} and {other.text()}")
    return values[0].unit


def _combined(*units: str | None) -> str | None:
    return "*".join(unit for unit in units if unit) or None


def _rounded(value: Decimal) -> Decimal:
    """At most 12 decimal places (quantizing only when more, so large values fit), normalised."""
    exponent = value.as_tuple().exponent
    return (
        value.quantize(_PLACES) if isinstance(exponent, int) and exponent < -12 else value
    ).normalize()


def _aggregate(operation: str, values: Sequence[Quantity]) -> Quantity:
    if operation in ("minimum", "maximum"):
        pick = min if operation == "minimum" else max
        return Quantity(pick(values, key=lambda q: q.value).value, _common_unit(values, "compare"))
    unit = _common_unit(values, "add")
    total = sum((q.value for q in values), Decimal(0))
    return Quantity(total if operation == "sum" else _rounded(total / len(values)), unit)


def _two_values(operation: str, values: Sequence[Quantity]) -> Quantity:
    if len(values) != 2:
        raise CalculationError(f"{operation} takes exactly 2 values, got {len(values)}")
    a, b = values
    if operation != "ratio" and a.unit != b.unit:
        verb = "subtract" if operation == "difference" else "take a percentage of"
        raise CalculationError(f"cannot {verb} {a.text()} and {b.text()}: the units differ")
    if operation == "difference":
        return Quantity(a.value - b.value, a.unit)
    if b.value.is_zero():
        raise CalculationError(f"cannot divide {a.text()} by {b.text()}")
    if operation == "percentage":
        return Quantity(_rounded(100 * a.value / b.value), "%")
    unit = None if a.unit == b.unit else f"{a.unit or '1'}/{b.unit}" if b.unit else a.unit
    return Quantity(_rounded(a.value / b.value), unit)


def _sum_products(pairs: Pairs) -> Quantity:
    unit = _combined(pairs[0][0].unit, pairs[0][1].unit)
    for number, (a, b) in enumerate(pairs, start=1):
        if _combined(a.unit, b.unit) != unit:
            pair = f"{a.text()} × {b.text()}"
            raise CalculationError(f"pair {number} ({pair}) has another unit than pair 1")
    return Quantity(sum((a.value * b.value for a, b in pairs), Decimal(0)), unit)


def _compute(operation: str, values: Sequence[Quantity], pairs: Pairs) -> Quantity:
    if operation == "sum_products":
        return _sum_products(pairs)
    if operation == "multiply":
        product = math.prod((q.value for q in values), start=Decimal(1))
        return Quantity(product, _combined(*(q.unit for q in values)))
    if operation in _PAIRWISE:
        return _two_values(operation, values)
    return _aggregate(operation, values)


def _known(operation: str) -> None:
    if operation not in OPERATIONS:
        raise CalculationError(f"unknown operation {_clip(operation)}; use one of {OPERATIONS}")


def calculate(operation: str, values: Sequence[Quantity], *, pairs: Pairs = ()) -> Quantity:
    """Compute ``operation`` in ``Decimal`` with precision 34 (see the module's docstring)."""
    _known(operation)
    if bool(pairs) != (operation == "sum_products") and (pairs or values):
        raise CalculationError("sum_products takes pairs; the other operations take values")
    if operation == "count":
        return Quantity(Decimal(len(values)))
    if not values and not pairs:
        raise CalculationError(f"{operation} needs at least one value, got none")
    try:
        with localcontext(_CONTEXT):
            result = _compute(operation, values, pairs)
    except decimal.DecimalException as error:
        raise CalculationError(f"{operation} failed: {type(error).__name__}") from None
    return Quantity(_checked(result.value, f"the {operation}"), result.unit)


@dataclass(frozen=True, slots=True)
class _Value:
    """One value an operand reached: where, and what it reads as (``None`` when counted only)."""

    evidence_id: str
    path: Path
    raw: Any
    quantity: Quantity | None

    def input(self) -> dict[str, Any]:
        value = self.quantity.text() if self.quantity is not None else _clip(self.raw)[1:-1]
        return {"evidence_id": self.evidence_id, "path": list(self.path), "value": value}


def _read(number: int, operand: Operand, store: EvidenceStore, read: bool = False) -> list[_Value]:
    """Every value ``operand`` reaches in its linked record, read as quantities when ``read``."""
    record, values, at = store.get(operand.evidence_id), [], None
    where = f"operand {number} ({operand.evidence_id}"  # closed below, with the place once known
    if record.kind not in ("query", "calculation"):
        raise IncompatibleEvidenceError(f"{where}) is {record.kind}, not query/calculation")
    try:
        for at, raw in _resolve(record.payload, operand.path):
            values.append(_Value(operand.evidence_id, at, raw, quantity_of(raw) if read else None))
    except CalculationError as error:
        place = "" if at is None else f" at {_path_text(at)}"
        raise CalculationError(f"{where}{place}): {error}") from None
    return values


def _operand_values(
    operation: str, operands: Sequence[Operand], store: EvidenceStore
) -> list[list[_Value]]:
    _known(operation)
    if not operands:
        raise CalculationError(f"{operation} needs at least one operand, got none")
    return [_read(n, op, store, operation != "count") for n, op in enumerate(operands, 1)]


def _calculate_values(operation: str, groups: list[list[_Value]]) -> Quantity:
    if operation == "count":
        return Quantity(Decimal(sum(len(group) for group in groups)))
    quantities = [[v.quantity for v in group if v.quantity is not None] for group in groups]
    if operation != "sum_products":
        return calculate(operation, [q for group in quantities for q in group])
    if len(groups) != 2 or len(groups[0]) != len(groups[1]):
        counts = " and ".join(str(len(group)) for group in groups)
        raise CalculationError(f"sum_products pairs 2 operands of equal length, not {counts}")
    return calculate(operation, [], pairs=list(zip(*quantities, strict=True)))


def _inputs(groups: list[list[_Value]]) -> list[dict[str, Any]]:
    values = [value for group in groups for value in group[:MAX_INPUTS]]
    return [value.input() for value in values[:MAX_INPUTS]]


def calculate_operands(
    operation: str, operands: Sequence[Operand], store: EvidenceStore
) -> tuple[Quantity, list[dict[str, Any]]]:
    """The result over every value the operands reach, and the first 200 of those inputs.

    For ``sum_products`` the two operands' values pair up in order: ``a[i] * b[i]``.
    """
    groups = _operand_values(operation, operands, store)
    return _calculate_values(operation, groups), _inputs(groups)


def _result(result: Quantity) -> dict[str, Any]:
    return {"value": _plain(result.value), "unit": result.unit, "text": result.text()}


def _payload(operation: str, groups: list[list[_Value]]) -> dict[str, Any]:
    result = _result(_calculate_values(operation, groups))
    count = sum(len(group) for group in groups)
    return {"operation": operation, **result, "inputs": _inputs(groups), "input_count": count}


def _grouped_values(
    operation: str, operands: Sequence[Operand], store: EvidenceStore, group_by: Sequence[str | int]
) -> list[tuple[Any, list[_Value]]]:
    """The one operand's values per group key, sorted by the key's text."""
    if operation not in GROUPABLE_OPERATIONS:
        raise CalculationError(f"group_by works with {', '.join(GROUPABLE_OPERATIONS)}")
    if len(operands) != 1 or _FANOUT not in operands[0].path:
        raise CalculationError("group_by takes one operand whose path fans out over rows: data.*.x")
    evidence_id, path = operands[0].evidence_id, operands[0].path
    split, read = path.index(_FANOUT) + 1, operation != "count"  # rows: what the first * reaches
    grouped: dict[str, tuple[Any, list[_Value]]] = {}  # by the key's JSON: 1 and "1" differ
    for row in _read(1, Operand(evidence_id, path[:split]), store):
        keys = [key.raw for key in _read(1, Operand(evidence_id, (*row.path, *group_by)), store)]
        if len(keys) != 1 or isinstance(keys[0], Mapping | tuple | list):
            where = f"operand 1 ({evidence_id}) row {_path_text(row.path)}"
            raise CalculationError(f"{where}: group_by reached {_clip(keys)}, not one scalar")
        values = _read(1, Operand(evidence_id, (*row.path, *path[split:])), store, read)
        grouped.setdefault(json.dumps(keys[0]), (keys[0], []))[1].extend(values)
    return sorted(
        grouped.values(), key=lambda kv: kv[0] if isinstance(kv[0], str) else json.dumps(kv[0])
    )


def _group_entry(operation: str, key: Any, values: list[_Value]) -> dict[str, Any]:
    try:  # a group can fail alone: one whose rows fan out over empty lists has no values
        result = _calculate_values(operation, [values])
    except CalculationError as error:
        raise CalculationError(f"group {_clip(key)}: {error}") from None
    return {"group": key, **_result(result), "count": len(values)}


def calculate_evidence(
    task_id: str,
    operation: str,
    operands: Sequence[Operand],
    store: EvidenceStore,
    *,
    requirement_id: str | None = None,
    group_by: Sequence[str | int] | None = None,
) -> EvidenceRecord:
    """Compute over linked evidence and record the result as the task's calculation evidence.

    With ``group_by`` the one operand fans out over rows (``data.*.price``), ``group_by`` is the
    path inside a row to its group key (``material.name``), and the payload's ``groups`` hold
    one result per group, sorted by the key's text, beside the result over all rows.
    """
    if group_by is None:
        payload = _payload(operation, _operand_values(operation, operands, store))
    else:
        grouped = _grouped_values(operation, operands, store, group_by)
        every = sorted((v for _, values in grouped for v in values), key=lambda v: v.path)
        payload = _payload(operation, [every])  # inputs in the payload's order, not by group
        payload["group_by"] = list(group_by)
        payload["groups"] = [_group_entry(operation, key, values) for key, values in grouped]
    provenance = {"operation": operation}
    return store.record(
        task_id, "calculation", payload, provenance=provenance, requirement_id=requirement_id
    )

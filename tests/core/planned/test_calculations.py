"""Calculations: exact Decimal arithmetic over linked evidence, with units and clear refusals."""

from __future__ import annotations

import decimal
import random
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gmchat_nb.core.planned.calculations import (
    OPERATIONS,
    CalculationError,
    Operand,
    Quantity,
    calculate,
    calculate_evidence,
    calculate_operands,
    quantity_of,
    values_at,
)
from gmchat_nb.core.planned.evidence import (
    EvidenceNotFoundError,
    EvidenceStore,
    IncompatibleEvidenceError,
)

PARTS = {
    "data": [
        {
            "name": "Bolt",
            "quantity": 10,
            "unitPrice": "0.1 EUR",
            "material": {"name": "Steel"},
            "weight": {"value": "0.05", "unit": "kg"},
        },
        {
            "name": "Plate",
            "quantity": 2,
            "unitPrice": "12.5 EUR",
            "material": {"name": "Aluminium"},
            "weight": {"value": 1.2, "unit": "kg"},
        },
        {
            "name": "Nut",
            "quantity": 10,
            "unitPrice": "0.2 EUR",
            "material": {"name": "Steel"},
            "weight": {"value": "0.01", "unit": "kg"},
        },
    ]
}

decimals = st.decimals(
    allow_nan=False, allow_infinity=False, places=6, min_value=-(10**12), max_value=10**12
)


def q(value: Any, unit: str | None = None) -> Quantity:
    return Quantity(Decimal(str(value)), unit)


def texts(operation: str, *values: Any) -> str:
    return calculate(operation, [quantity_of(value) for value in values]).text()


@pytest.fixture
def store() -> EvidenceStore:
    store = EvidenceStore()
    store.record("task_1", "query", PARTS)
    return store


def column(name: str, *rest: str | int) -> Operand:
    return Operand("task_1:query:1", ("data", "*", name, *rest))


# Reading values


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (12, Quantity(Decimal(12))),
        (0.1, Quantity(Decimal("0.1"))),
        (Decimal("2.50"), Quantity(Decimal("2.50"))),
        ("-3.5", Quantity(Decimal("-3.5"))),
        (" 7 ", Quantity(Decimal(7))),
        ("12 EUR", Quantity(Decimal(12), "EUR")),
        ("12.5 kg", Quantity(Decimal("12.5"), "kg")),
        ("40 %", Quantity(Decimal(40), "%")),
        ("21 °C", Quantity(Decimal(21), "°C")),
        ("3 EUR/kg", Quantity(Decimal(3), "EUR/kg")),
        ({"value": "1.5", "unit": "kg"}, Quantity(Decimal("1.5"), "kg")),
        ({"value": 4, "unit": None}, Quantity(Decimal(4))),
        ({"value": 4, "unit": "", "__typename": "MeasurementType"}, Quantity(Decimal(4))),
        ({"value": "1E+2"}, Quantity(Decimal(100))),
    ],
)
def test_quantity_of_reads(value: Any, expected: Quantity) -> None:
    assert quantity_of(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "'true' is not a number"),
        (None, "'null' is not a number"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        (Decimal("NaN"), "not a finite number"),
        ("NaN", "not a number"),
        ("1,234.5", "comma"),
        ("1,5", "comma"),
        ("12  EUR", "a unit is one space"),
        ("12 EUR 3", "a unit is one space"),
        ("12 Euros-and-cents-and-more", "up to 16"),
        ("EUR 12", "not a number"),
        ("", "not a number"),
        ([1], "not a number"),
        ({"unit": "kg"}, "has no 'value'"),
        ({"value": "1.5 kg"}, "not a number"),
        ({"value": 1, "unit": 3}, "unit '3' is not a text"),
        (10**500, "out of range"),
    ],
)
def test_quantity_of_refuses(value: Any, message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        quantity_of(value)


def test_error_messages_clip_long_values() -> None:
    with pytest.raises(CalculationError) as caught:
        quantity_of("x" * 500)
    assert len(str(caught.value)) < 120
    assert "…" in str(caught.value)


# Text of a quantity


@pytest.mark.parametrize(
    ("quantity", "text"),
    [
        (Quantity(Decimal("12.50"), "EUR"), "12.5 EUR"),
        (Quantity(Decimal(3)), "3"),
        (Quantity(Decimal("1E+3")), "1000"),
        (Quantity(Decimal("1.0E-7")), "0.0000001"),
        (Quantity(Decimal("-0.00")), "0"),
        (Quantity(Decimal("123456789012345678901234567890")), "123456789012345678901234567900"),
        (Quantity(Decimal("0.12345678901234567890123456789")), "0.1234567890123456789012345679"),
    ],
)
def test_text_is_plain_without_trailing_zeros_and_28_digits(quantity: Quantity, text: str) -> None:
    assert quantity.text() == text


# Paths


def test_values_at_follows_keys_indices_and_fans_out() -> None:
    assert values_at(PARTS, ("data", 1, "name")) == ["Plate"]
    assert values_at(PARTS, ("data", "*", "material", "name")) == ["Steel", "Aluminium", "Steel"]
    assert values_at({"a": [[1, 2], [3]]}, ("a", "*", "*")) == [1, 2, 3]
    assert values_at({"a": []}, ("a", "*", "x")) == []
    assert values_at(7, ()) == [7]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("data", "*", "price"), r"position 2 \(at data\.0\.price\): key 'price' is missing"),
        (("data", 3), r"position 1 .*index 3 is out of range for a list of 3"),
        (("data", -1), "index -1 is out of range"),
        (("data", "name"), "key 'name' needs an object"),
        (("data", 0, "name", "*"), "'\\*' needs a list, found 'Bolt'"),
        (("data", 0, "name", 0), "0 needs a list"),
        (("data", True), "neither a key, an index nor"),
    ],
)
def test_values_at_names_the_failing_position(path: tuple[Any, ...], message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        values_at(PARTS, path)


# Arithmetic


def test_decimal_sums_are_exact() -> None:
    assert texts("sum", 0.1, 0.2) == "0.3"
    assert texts("sum", "0.1", "0.2", "-0.3") == "0"
    assert texts("sum", 2**64, 1) == "18446744073709551617"
    assert texts("sum", 10**15, "0.00000001") == "1000000000000000.00000001"
    # The value keeps precision 34; only its text stops at 28 significant digits.
    total = calculate("sum", [q(10**20), q("0.00000001")])
    assert total.value == Decimal("100000000000000000000.00000001")
    assert total.text() == "100000000000000000000"


def test_average_ratio_and_percentage_keep_twelve_places() -> None:
    assert texts("average", 1, 0, 0) == "0.333333333333"
    assert texts("average", 2, 4) == "3"
    assert texts("average", 10**25, 2 * 10**25) == "15000000000000000000000000"
    assert texts("ratio", 2, 3) == "0.666666666667"
    assert texts("percentage", "1 EUR", "3 EUR") == "33.333333333333 %"
    assert texts("percentage", 50, 200) == "25 %"


def test_minimum_maximum_difference_multiply_count() -> None:
    assert texts("minimum", "3 kg", "-1 kg", "2 kg") == "-1 kg"
    assert texts("maximum", "3 kg", "-1 kg", "2 kg") == "3 kg"
    assert texts("difference", "10 EUR", "2.5 EUR") == "7.5 EUR"
    assert texts("multiply", "2 EUR", "3 pcs") == "6 EUR*pcs"
    assert texts("multiply", "2 EUR", 3) == "6 EUR"
    assert texts("count", 7, "8 EUR", 9) == "3"
    assert texts("count") == "0"


def test_ratio_units() -> None:
    assert texts("ratio", "10 EUR", "4 EUR") == "2.5"
    assert texts("ratio", "10 EUR", "4 kg") == "2.5 EUR/kg"
    assert texts("ratio", "10 EUR", 4) == "2.5 EUR"
    assert texts("ratio", 10, "4 kg") == "2.5 1/kg"


def test_sum_products_combines_units() -> None:
    pairs = [(q(10, "pcs"), q("0.1", "EUR")), (q(2, "pcs"), q("12.5", "EUR"))]
    assert calculate("sum_products", [], pairs=pairs).text() == "26 pcs*EUR"
    plain = [(q(10), q("0.1", "EUR")), (q(2), q("12.5", "EUR"))]
    assert calculate("sum_products", [], pairs=plain).text() == "26 EUR"


@pytest.mark.parametrize(
    ("operation", "values", "message"),
    [
        ("sum", [q(3, "EUR"), q(4)], "cannot add 3 EUR and 4"),
        ("average", [q(3), q(4, "kg")], "cannot add 3 and 4 kg"),
        ("maximum", [q(3, "EUR"), q(4, "kg")], "cannot compare 3 EUR and 4 kg"),
        ("difference", [q(3, "EUR"), q(4, "kg")], "cannot subtract 3 EUR and 4 kg"),
        ("percentage", [q(3, "EUR"), q(4, "kg")], "units differ"),
        ("ratio", [q(3), q(0)], "cannot divide 3 by 0"),
        ("percentage", [q(3), q("0.00")], "cannot divide"),
        ("ratio", [q(1), q(2), q(3)], "exactly 2 values, got 3"),
        ("difference", [q(1)], "exactly 2 values, got 1"),
        ("sum", [], "sum needs at least one value"),
        ("average", [], "needs at least one value"),
        ("minimum", [], "needs at least one value"),
        ("multiply", [], "needs at least one value"),
        ("sum_products", [], "needs at least one value"),
        ("median", [q(1)], "unknown operation 'median'"),
        ("sum_products", [q(1)], "sum_products takes pairs"),
        ("multiply", [q("1e300"), q("1e300")], "out of range"),
    ],
)
def test_refusals_say_why(operation: str, values: list[Quantity], message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        calculate(operation, values)


def test_sum_products_refuses_pairs_of_other_units() -> None:
    pairs = [(q(1, "pcs"), q(2, "EUR")), (q(1, "kg"), q(2, "EUR"))]
    with pytest.raises(CalculationError, match=r"pair 2 \(1 kg × 2 EUR\) has another unit"):
        calculate("sum_products", [], pairs=pairs)
    with pytest.raises(CalculationError, match="other operations take values"):
        calculate("sum", [q(1)], pairs=pairs)


def test_every_operation_is_computable() -> None:
    for operation in OPERATIONS:
        if operation == "sum_products":
            assert calculate(operation, [], pairs=[(q(2), q(3))]).text() == "6"
        else:
            assert calculate(operation, [q(6), q(3)]).value.is_finite()


def test_the_callers_decimal_context_changes_nothing() -> None:
    with decimal.localcontext() as context:
        context.prec = 3
        context.traps[decimal.Inexact] = True
        assert texts("sum", "1234.5678", "0.0001") == "1234.5679"
        assert texts("average", 1, 0, 0) == "0.333333333333"


@given(st.lists(decimals, min_size=1, max_size=40))
def test_sum_equals_the_exact_decimal_sum(values: list[Decimal]) -> None:
    with decimal.localcontext() as context:
        context.prec = 100  # exact for these values
        exact = sum(values, Decimal(0))
    assert calculate("sum", [Quantity(v, "EUR") for v in values]).value == exact


@given(st.lists(decimals, min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_order_never_changes_sum_minimum_maximum(values: list[Decimal], rng: random.Random) -> None:
    shuffled = list(values)
    rng.shuffle(shuffled)
    for operation in ("sum", "minimum", "maximum", "average", "count"):
        first = calculate(operation, [Quantity(v) for v in values])
        second = calculate(operation, [Quantity(v) for v in shuffled])
        assert first.value == second.value
    assert calculate("minimum", [Quantity(v) for v in values]).value == min(values)
    assert calculate("maximum", [Quantity(v) for v in values]).value == max(values)


@given(decimals)
def test_text_reads_back_as_the_same_number(value: Decimal) -> None:
    text = Quantity(value, "EUR").text()
    assert "E" not in text.removesuffix(" EUR")
    assert quantity_of(text) == Quantity(value, "EUR")


# Over evidence


def test_sum_over_rows_records_a_linked_calculation(store: EvidenceStore) -> None:
    record = calculate_evidence("task_1", "sum", [column("unitPrice")], store, requirement_id="r1")
    assert record.evidence_id == "task_1:calculation:2"
    assert record.kind == "calculation"
    assert store.linked("r1") == [record]
    payload = record.payload_json()
    assert payload == {
        "operation": "sum",
        "value": "12.8",
        "unit": "EUR",
        "text": "12.8 EUR",
        "inputs": [
            {"evidence_id": "task_1:query:1", "path": ["data", 0, "unitPrice"], "value": "0.1 EUR"},
            {
                "evidence_id": "task_1:query:1",
                "path": ["data", 1, "unitPrice"],
                "value": "12.5 EUR",
            },
            {"evidence_id": "task_1:query:1", "path": ["data", 2, "unitPrice"], "value": "0.2 EUR"},
        ],
        "input_count": 3,
    }


def test_measurement_mappings_sum_with_their_unit(store: EvidenceStore) -> None:
    result, inputs = calculate_operands("sum", [column("weight")], store)
    assert result.text() == "1.26 kg"
    assert [item["value"] for item in inputs] == ["0.05 kg", "1.2 kg", "0.01 kg"]


def test_sum_products_of_quantity_and_unit_price(store: EvidenceStore) -> None:
    operands = [column("quantity"), column("unitPrice")]
    record = calculate_evidence("task_1", "sum_products", operands, store)
    assert record.payload["text"] == "28 EUR"  # 10 × 0.1 + 2 × 12.5 + 10 × 0.2
    assert record.payload["input_count"] == 6


def test_sum_products_needs_two_operands_of_equal_length(store: EvidenceStore) -> None:
    store.record("task_1", "query", {"data": [{"quantity": 1}]})
    short = Operand("task_1:query:2", ("data", "*", "quantity"))
    with pytest.raises(CalculationError, match="not 3 and 1"):
        calculate_operands("sum_products", [column("quantity"), short], store)
    with pytest.raises(CalculationError, match="2 operands"):
        calculate_operands("sum_products", [column("quantity")], store)


def test_count_counts_rows_without_reading_numbers(store: EvidenceStore) -> None:
    result, inputs = calculate_operands("count", [Operand("task_1:query:1", ("data", "*"))], store)
    assert result == Quantity(Decimal(3))
    assert inputs[0]["path"] == ["data", 0]
    assert inputs[0]["value"].startswith('{"name": "Bolt"')


def test_operands_from_several_records_and_from_a_calculation(store: EvidenceStore) -> None:
    store.record("task_2", "query", {"data": {"total": {"value": "1.2", "unit": "EUR"}}})
    first = calculate_evidence("task_1", "sum", [column("unitPrice")], store)
    both = [Operand(first.evidence_id, ()), Operand("task_2:query:1", ("data", "total"))]
    assert calculate_operands("sum", both, store)[0].text() == "14 EUR"
    ratio = [Operand(first.evidence_id, ("text",)), Operand("task_2:query:1", ("data", "total"))]
    assert calculate_operands("ratio", ratio, store)[0].text() == "10.666666666667"


def test_errors_name_the_operand_and_the_path(store: EvidenceStore) -> None:
    store.record("task_1", "query", {"data": [{"price": 1}, {"price": None}]})
    operands = [column("quantity"), Operand("task_1:query:2", ("data", "*", "price"))]
    with pytest.raises(CalculationError) as caught:
        calculate_operands("sum", operands, store)
    assert str(caught.value) == "operand 2 (task_1:query:2 at data.1.price): 'null' is not a number"
    with pytest.raises(CalculationError, match=r"operand 1 \(task_1:query:1\): path data\.\*\.x"):
        calculate_operands("sum", [column("x")], store)
    with pytest.raises(CalculationError, match=r"cannot add 10 and 0\.1 EUR"):
        calculate_operands("sum", [column("quantity"), column("unitPrice")], store)


def test_only_linked_query_or_calculation_evidence_is_an_operand(store: EvidenceStore) -> None:
    store.record("task_1", "schema", {"managers": [{"value": 1}]})
    with pytest.raises(EvidenceNotFoundError, match="task_9:query:1"):
        calculate_evidence("task_1", "sum", [Operand("task_9:query:1", ())], store)
    with pytest.raises(
        IncompatibleEvidenceError, match=r"\(task_1:schema:2\) is schema, not query/calculation"
    ):
        calculate_evidence("task_1", "sum", [Operand("task_1:schema:2", ("managers", 0))], store)
    with pytest.raises(CalculationError, match="at least one operand"):
        calculate_evidence("task_1", "sum", [], store)
    assert store.kind_counts() == {"query": 1, "schema": 1}  # nothing recorded on failure


def test_inputs_are_capped_but_every_value_counts() -> None:
    store = EvidenceStore()
    store.record("task_1", "query", {"data": [{"n": 1}] * 250})
    record = calculate_evidence(
        "task_1", "sum", [Operand("task_1:query:1", ("data", "*", "n"))], store
    )
    assert record.payload["text"] == "250"
    assert record.payload["input_count"] == 250
    assert len(record.payload["inputs"]) == 200


def test_operand_paths_become_tuples() -> None:
    operand = Operand("task_1:query:1", ["data", "*", "n"])  # type: ignore[arg-type]
    assert operand.path == ("data", "*", "n")
    assert hash(operand) == hash(Operand("task_1:query:1", ("data", "*", "n")))


# Grouped


def test_stock_value_per_material(store: EvidenceStore) -> None:
    record = calculate_evidence(
        "task_1", "sum", [column("unitPrice")], store, group_by=("material", "name")
    )
    payload = record.payload_json()
    assert payload["text"] == "12.8 EUR"
    assert payload["group_by"] == ["material", "name"]
    assert payload["groups"] == [
        {"group": "Aluminium", "value": "12.5", "unit": "EUR", "text": "12.5 EUR", "count": 1},
        {"group": "Steel", "value": "0.3", "unit": "EUR", "text": "0.3 EUR", "count": 2},
    ]
    assert [item["path"][1] for item in payload["inputs"]] == [0, 1, 2]  # the payload's order


def test_grouped_count_and_average(store: EvidenceStore) -> None:
    rows = Operand("task_1:query:1", ("data", "*"))
    counted = calculate_evidence("task_1", "count", [rows], store, group_by=("material", "name"))
    assert [(g["group"], g["text"]) for g in counted.payload["groups"]] == [
        ("Aluminium", "1"),
        ("Steel", "2"),
    ]
    average = calculate_evidence("task_1", "average", [column("weight")], store, group_by=("name",))
    assert [g["text"] for g in average.payload["groups"]] == ["0.05 kg", "0.01 kg", "1.2 kg"]


def test_group_keys_of_other_types_sort_by_their_text() -> None:
    store = EvidenceStore()
    rows = [{"k": 2, "v": 1}, {"k": None, "v": 2}, {"k": "2", "v": 3}, {"k": 10, "v": 4}]
    store.record("task_1", "query", {"data": rows})
    operand = Operand("task_1:query:1", ("data", "*", "v"))
    record = calculate_evidence("task_1", "sum", [operand], store, group_by=("k",))
    groups = [(g["group"], g["text"]) for g in record.payload_json()["groups"]]
    assert groups == [(10, "4"), (2, "1"), ("2", "3"), (None, "2")]


@pytest.mark.parametrize(
    ("operation", "operands", "group_by", "message"),
    [
        ("ratio", [column("quantity")], ("name",), "group_by works with count, sum"),
        ("sum", [column("quantity"), column("quantity")], ("name",), "one operand"),
        ("sum", [Operand("task_1:query:1", ("data", 0, "quantity"))], ("name",), "fans out"),
        ("sum", [column("quantity")], ("material",), r"row data\.0: group_by reached"),
        ("sum", [column("quantity")], ("colour",), r"key 'colour' is missing"),
    ],
)
def test_grouping_refusals(
    store: EvidenceStore,
    operation: str,
    operands: list[Operand],
    group_by: tuple[str, ...],
    message: str,
) -> None:
    with pytest.raises(CalculationError, match=message):
        calculate_evidence("task_1", operation, operands, store, group_by=group_by)


def test_a_group_without_values_is_named() -> None:
    store = EvidenceStore()
    rows = [{"k": "a", "prices": [1, 2]}, {"k": "b", "prices": []}]
    store.record("task_1", "query", {"data": rows})
    operand = Operand("task_1:query:1", ("data", "*", "prices", "*"))
    with pytest.raises(CalculationError, match="group 'b': average needs at least one value"):
        calculate_evidence("task_1", "average", [operand], store, group_by=("k",))

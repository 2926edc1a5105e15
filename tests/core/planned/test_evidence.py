"""EvidenceStore: stable ids, served-once calls, read-only payloads, links and aliases."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gmchat_nb.core.planned.evidence import (
    DuplicateEvidenceError,
    EvidenceNotFoundError,
    EvidenceRecord,
    EvidenceStore,
    IncompatibleEvidenceError,
    InvalidEvidenceError,
    call_hash,
    canonical_call_identity,
    child_alias_id,
)

ROWS = {"data": [{"name": "Bolt", "unitPrice": {"value": "0.25", "unit": "EUR"}}], "total": 1}

json_data = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# Identity of a call


def test_reordered_arguments_give_the_same_identity() -> None:
    first = canonical_call_identity("query", {"manager": "Part", "filter": {"a": 1, "b": 2}})
    second = canonical_call_identity("query", {"filter": {"b": 2, "a": 1}, "manager": "Part"})
    assert first == second
    assert first == '{"args":{"filter":{"a":1,"b":2},"manager":"Part"},"name":"query"}'
    assert call_hash(first) == call_hash(second)


def test_identity_keeps_text_as_written_and_differs_by_value() -> None:
    identity = canonical_call_identity("query", {"name": "Größe"})
    assert "Größe" in identity  # ensure_ascii=False: no \\u escapes
    assert identity != canonical_call_identity("query", {"name": "Grosse"})
    assert identity != canonical_call_identity("schema", {"name": "Größe"})


def test_call_hash_is_a_sha256_of_the_identity() -> None:
    digest = call_hash("{}")
    assert digest == "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def test_identity_of_arguments_json_reads_but_cannot_write() -> None:
    # json.loads accepts NaN from a model; the call still needs an identity to be cached by.
    assert canonical_call_identity("query", {"limit": math.nan}).endswith(
        '{"limit":NaN},"name":"query"}'
    )
    with pytest.raises(InvalidEvidenceError, match="query"):
        canonical_call_identity("query", {"ids": {1, 2}})


@given(st.dictionaries(st.text(), json_data, max_size=6))
def test_identity_ignores_key_order(args: dict[str, Any]) -> None:
    reordered = dict(reversed(list(args.items())))
    assert canonical_call_identity("q", args) == canonical_call_identity("q", reordered)


# Numbering


def test_numbering_runs_per_task_across_kinds() -> None:
    store = EvidenceStore()
    assert store.next_id("task_1", "query") == "task_1:query:1"
    assert store.next_id("task_1", "query") == "task_1:query:1"  # asking reserves nothing
    first = store.record("task_1", "query", ROWS)
    second = store.record("task_1", "calculation", {"value": "1"})
    other = store.record("task_2", "schema", {"managers": []})
    assert [first.evidence_id, second.evidence_id] == ["task_1:query:1", "task_1:calculation:2"]
    assert other.evidence_id == "task_2:schema:1"
    assert store.next_id("task_1", "path") == "task_1:path:3"


def test_an_id_added_by_hand_is_never_reused() -> None:
    store = EvidenceStore()
    store.add(EvidenceRecord("task_1:query:2", "task_1", "query", {}))
    assert store.record("task_1", "query", {}).evidence_id == "task_1:query:3"


def test_a_known_id_is_refused() -> None:
    store = EvidenceStore()
    record = store.record("task_1", "query", ROWS)
    with pytest.raises(DuplicateEvidenceError, match="task_1:query:1"):
        store.add(EvidenceRecord(record.evidence_id, "task_1", "query", {}))
    assert store.get(record.evidence_id) is record


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidEvidenceError, match="guess"):
        EvidenceStore().add(EvidenceRecord("t:guess:1", "t", "guess", {}))  # type: ignore[arg-type]


# Payloads


def test_the_record_keeps_what_was_recorded_when_the_input_changes() -> None:
    store = EvidenceStore()
    result = {"data": [{"name": "Bolt", "tags": ["a"]}]}
    record = store.record("task_1", "query", result, provenance={"tool": "query"})
    result["data"][0]["name"] = "Nut"
    result["data"][0]["tags"].append("b")  # type: ignore[attr-defined]
    result["data"].append({"name": "Washer"})
    assert record.payload_json() == {"data": [{"name": "Bolt", "tags": ["a"]}]}


def test_the_payload_is_read_only_and_payload_json_is_a_fresh_copy() -> None:
    record = EvidenceStore().record("task_1", "query", ROWS)
    with pytest.raises(TypeError):
        record.payload["total"] = 2
    with pytest.raises(TypeError):
        record.payload["data"][0]["name"] = "Nut"
    copy = record.payload_json()
    copy["data"].clear()
    assert record.payload_json() == ROWS
    assert json.loads(json.dumps(record.payload_json())) == ROWS


def test_add_stores_a_frozen_copy_of_a_record_built_by_hand() -> None:
    store = EvidenceStore()
    payload = {"rows": [1, 2]}
    stored = store.add(EvidenceRecord("task_1:query:1", "task_1", "query", payload))
    payload["rows"].append(3)
    assert stored.payload_json() == {"rows": [1, 2]}
    assert store.get("task_1:query:1") is stored


def test_to_dict_is_json_without_the_call_identity() -> None:
    record = EvidenceStore().record(
        "task_1", "query", ROWS, call_identity="x", provenance={"tool": "query", "manager": "Part"}
    )
    assert record.to_dict() == {
        "evidence_id": "task_1:query:1",
        "task_id": "task_1",
        "kind": "query",
        "payload": ROWS,
        "provenance": {"tool": "query", "manager": "Part"},
    }
    json.dumps(record.to_dict())


@pytest.mark.parametrize(
    ("payload", "found"),
    [
        ({"price": math.nan}, "nan"),
        ({"price": [math.inf]}, "inf"),
        ({1: "one"}, "not a string"),
        ({"tags": {"a", "b"}}, "set"),
        ({"when": object()}, "object"),
    ],
)
def test_a_payload_that_is_not_json_is_refused(payload: Any, found: str) -> None:
    store = EvidenceStore()
    with pytest.raises(InvalidEvidenceError, match=found):
        store.record("task_1", "query", payload)
    assert len(store) == 0
    assert store.next_id("task_1", "query") == "task_1:query:1"


def test_nesting_deeper_than_32_levels_is_refused() -> None:
    store = EvidenceStore()
    assert store.record("task_1", "query", nested(32)).payload_json() == nested(32)
    with pytest.raises(InvalidEvidenceError, match="deeper than 32"):
        store.record("task_1", "query", nested(33))


def test_a_self_containing_payload_is_refused_not_walked_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(InvalidEvidenceError, match="deeper"):
        EvidenceStore().record("task_1", "query", loop)


@given(json_data)
def test_any_json_round_trips(payload: Any) -> None:
    record = EvidenceStore().record("task_1", "query", payload)
    assert record.payload_json() == payload
    assert json.loads(json.dumps(record.to_dict()))["payload"] == payload


# The cache of identical calls


def test_an_identical_call_is_served_from_the_first_record() -> None:
    store = EvidenceStore()
    identity = canonical_call_identity("query", {"manager": "Part", "limit": 5})
    assert store.cached(identity) is None
    first = store.record("task_1", "query", ROWS, call_identity=identity)
    store.record("task_2", "query", {"data": []}, call_identity=identity)
    again = canonical_call_identity("query", {"limit": 5, "manager": "Part"})
    assert store.cached(again) is first
    assert store.cached(canonical_call_identity("query", {"manager": "Part"})) is None


# Aliases of a child task's evidence


def test_an_alias_shows_a_child_record_to_its_root() -> None:
    store = EvidenceStore()
    child = store.record("task_1_child", "query", ROWS, provenance={"tool": "query"})
    alias_id = child_alias_id("task_1", child.evidence_id)
    assert alias_id == "task_1:child:task_1_child:query:1"
    alias = store.alias(alias_id, child)
    assert (alias.evidence_id, alias.task_id, alias.kind) == (alias_id, "task_1", "query")
    assert alias.payload_json() == ROWS
    assert alias.provenance == {"tool": "query", "alias_of": "task_1_child:query:1"}
    assert store.get(alias_id) is alias
    assert store.by_task("task_1") == [alias]
    # The alias is a view: it neither counts as the root's own record nor twice for the audit.
    assert store.next_id("task_1", "query") == "task_1:query:1"
    assert store.kind_counts() == {"query": 1}


def test_an_alias_of_an_alias_reaches_the_grandparent() -> None:
    store = EvidenceStore()
    grandchild = store.record("c2", "query", ROWS)
    middle = store.alias(child_alias_id("c1", grandchild.evidence_id), grandchild)
    top = store.alias(child_alias_id("task_1", middle.evidence_id), middle)
    assert top.evidence_id == "task_1:child:c1:child:c2:query:1"
    assert top.task_id == "task_1"


def test_a_taken_or_malformed_alias_is_refused() -> None:
    store = EvidenceStore()
    child = store.record("task_1_child", "query", ROWS)
    store.alias("task_1:child:task_1_child:query:1", child)
    with pytest.raises(DuplicateEvidenceError):
        store.alias("task_1:child:task_1_child:query:1", child)
    with pytest.raises(InvalidEvidenceError, match="root task id"):
        store.alias("task_1:task_1_child:query:1", child)


# Lookup, links and audit


def test_lookup_iteration_and_by_task() -> None:
    store = EvidenceStore()
    first = store.record("task_1", "schema", {"managers": ["Part"]})
    second = store.record("task_2", "query", ROWS)
    third = store.record("task_1", "query", ROWS)
    assert list(store) == [first, second, third]
    assert len(store) == 3
    assert "task_2:query:1" in store
    assert "task_2:query:9" not in store
    assert store.by_task("task_1") == [first, third]
    assert store.by_task("task_3") == []
    with pytest.raises(EvidenceNotFoundError, match="task_2:query:9"):
        store.get("task_2:query:9")


def test_links_keep_order_once_and_check_kinds() -> None:
    store = EvidenceStore()
    query = store.record("task_1", "query", ROWS, requirement_id="req_rows")
    calc = store.record("task_1", "calculation", {"value": "1"})
    store.link("req_total", calc.evidence_id, kinds=["calculation"])
    store.link("req_rows", query.evidence_id)  # again: no duplicate
    assert store.linked("req_rows") == [query]
    assert store.linked("req_total") == [calc]
    assert store.linked("req_none") == []
    with pytest.raises(IncompatibleEvidenceError, match="query evidence"):
        store.link("req_total", query.evidence_id, kinds=["calculation"])
    with pytest.raises(EvidenceNotFoundError):
        store.link("req_total", "task_1:query:7")


def test_kind_counts_for_the_audit() -> None:
    store = EvidenceStore()
    store.record("task_1", "query", ROWS)
    store.record("task_2", "query", ROWS)
    store.record("task_1", "calculation", {"value": "2"})
    assert store.kind_counts() == {"query": 2, "calculation": 1}


def test_a_refusal_says_where_in_the_payload() -> None:
    payload = {"data": [{"price": 1.0}, {"price": [2.0, math.nan]}]}
    with pytest.raises(InvalidEvidenceError) as caught:
        EvidenceStore().record("task_1", "query", payload)
    message = (
        "the payload of task_1:query:1['data'][1]['price'][1] is nan, which JSON cannot represent"
    )
    assert str(caught.value) == message

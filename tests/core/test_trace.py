"""TurnTrace: recording, nesting, events, sanitizing (caps and redaction) and the JSON form."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import pytest

from gmchat_nb.core.trace import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_KEYS,
    MAX_STRING,
    MAX_VALUES,
    REDACTED,
    ROOT_NAME,
    Span,
    TurnTrace,
    is_secret_key,
    iso_utc,
    sanitize,
)

START = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
MS = 1_000_000


def ms_clock(start: int = START) -> Callable[[], int]:
    """A clock that moves one millisecond at each reading."""
    ticks = itertools.count(start, MS)
    return lambda: next(ticks)


def new_trace(**kwargs: Any) -> TurnTrace:
    return TurnTrace(conversation_id="c-1", turn_id="t-1", clock=ms_clock(), **kwargs)


# -- recording -----------------------------------------------------------------------------------


def test_opening_a_trace_opens_its_root_span() -> None:
    trace = new_trace()

    assert trace.root.kind == "turn"
    assert trace.root.name == ROOT_NAME == "invoke_agent gmchat_nb"
    assert trace.root.start_ns == START
    assert trace.root.end_ns is None
    assert not trace.finished
    assert (trace.conversation_id, trace.turn_id) == ("c-1", "t-1")
    assert TurnTrace().root.start_ns > 0  # the default clock is the wall clock


def test_requests_and_tool_calls_are_children_of_the_root_in_order() -> None:
    trace = new_trace()
    request = trace.model_request(provider="openai", model="gpt-4.1-mini")
    call = trace.tool_call(call_id="call_1", tool="query", arguments={"manager": "Project"})
    trace.end(call, rows=3, status="ok", result={"rows": [1, 2, 3]})
    trace.end(request, input_tokens=120, output_tokens=7, finish_reason="tool_calls")
    trace.finish(status="done")

    assert trace.spans == [request, call]
    assert [(span.kind, span.name) for span in trace.spans] == [
        ("model_request", "chat gpt-4.1-mini"),
        ("tool_call", "execute_tool query"),
    ]
    assert request.attributes == {
        "provider": "openai",
        "model": "gpt-4.1-mini",
        "input_tokens": 120,
        "output_tokens": 7,
        "finish_reason": "tool_calls",
    }
    assert call.attributes == {
        "tool": "query",
        "call_id": "call_1",
        "arguments": {"manager": "Project"},
        "rows": 3,
        "status": "ok",
        "result": {"rows": [1, 2, 3]},
    }
    assert all(not span.children for span in trace.spans)
    # clock readings: root 0, request 1, call 2, call end 3, request end 4, finish 5
    assert (request.start_ns, request.end_ns) == (START + 1 * MS, START + 4 * MS)
    assert (call.start_ns, call.end_ns) == (START + 2 * MS, START + 3 * MS)
    assert trace.root.end_ns == START + 5 * MS
    assert trace.root.attributes == {"status": "done"}
    assert trace.finished


def test_events_go_on_the_span_given_or_else_the_root() -> None:
    trace = new_trace()
    request = trace.model_request(provider="anthropic", model="claude")
    trace.event("retry", request, attempt=2, error_type="RateLimitError")
    trace.event("fallback", request, to="ollama:qwen3")
    trace.event("loop_guard", stopped_by="turn_limit")

    assert request.events == [
        {
            "name": "retry",
            "at_ns": START + 2 * MS,
            "attributes": {"attempt": 2, "error_type": "RateLimitError"},
        },
        {"name": "fallback", "at_ns": START + 3 * MS, "attributes": {"to": "ollama:qwen3"}},
    ]
    assert trace.root.events == [
        {"name": "loop_guard", "at_ns": START + 4 * MS, "attributes": {"stopped_by": "turn_limit"}}
    ]


def test_ending_twice_keeps_the_first_end_and_adds_attributes() -> None:
    trace = new_trace()
    call = trace.tool_call(call_id="c", tool="t", arguments={})
    trace.end(call, status="ok")
    first = call.end_ns
    trace.end(call, rows=2)

    assert call.end_ns == first
    assert call.attributes["status"] == "ok"
    assert call.attributes["rows"] == 2


def test_finish_closes_spans_left_open_and_is_idempotent() -> None:
    trace = new_trace()
    request = trace.model_request(provider="openai", model="m")
    trace.finish(status="cancelled")
    end = trace.root.end_ns
    trace.finish(error_type="Late")

    assert request.end_ns == end
    assert request.attributes["unfinished"] is True
    assert trace.root.end_ns == end
    assert trace.root.attributes == {"status": "cancelled", "error_type": "Late"}


def test_a_sealed_trace_holds_a_sanitized_copy_not_a_reference() -> None:
    # recording keeps the values (a trace is often never read); sealing copies and sanitizes
    trace = new_trace()
    arguments: dict[str, Any] = {"filters": {"name": "x"}, "api_key": "sk-live"}
    call = trace.tool_call(call_id="c", tool="t", arguments=arguments)
    trace.seal()
    arguments["filters"]["name"] = "changed"

    assert call.attributes["arguments"] == {"filters": {"name": "x"}, "api_key": REDACTED}


def test_secret_attributes_are_redacted_whatever_their_span() -> None:
    trace = new_trace()
    request = trace.model_request(provider="openai", model="m")
    trace.end(request, authorization="Bearer abcdef123456", input_tokens=5)
    trace.event("retry", request, headers={"X-Api-Key": "k", "accept": "json"})
    trace.finish(password="hunter2")
    trace.seal()

    assert request.attributes["authorization"] == REDACTED
    assert request.attributes["input_tokens"] == 5
    assert request.events[0]["attributes"]["headers"] == {"X-Api-Key": REDACTED, "accept": "json"}
    assert trace.root.attributes["password"] == REDACTED


# -- sanitize ------------------------------------------------------------------------------------


def test_long_strings_are_cut_with_a_count() -> None:
    text = "a" * (MAX_STRING + 123)

    assert sanitize(text) == "a" * MAX_STRING + "…[123 more]"
    assert sanitize("short") == "short"
    assert sanitize("b" * MAX_STRING) == "b" * MAX_STRING


def test_long_lists_keep_their_first_items_and_a_count() -> None:
    assert sanitize(list(range(MAX_ITEMS + 5))) == [*range(MAX_ITEMS), "…[5 more]"]
    assert sanitize(tuple(range(3))) == [0, 1, 2]
    assert sanitize(list(range(MAX_ITEMS))) == list(range(MAX_ITEMS))
    assert len(sanitize(set(range(100)))) == MAX_ITEMS + 1


def test_large_mappings_keep_their_first_keys_and_a_count() -> None:
    out = sanitize({f"k{i}": i for i in range(MAX_KEYS + 7)})

    assert len(out) == MAX_KEYS + 1
    assert out["k0"] == 0
    assert out["…"] == "[7 more keys]"


def test_deep_values_are_summarized_below_the_depth_cap() -> None:
    value: Any = {"leaf": 1}
    for _ in range(MAX_DEPTH + 2):
        value = {"down": value}
    value["list"] = [[[[[[[1, 2]]]]]]]
    out = sanitize(value)

    node = out
    for _ in range(MAX_DEPTH):
        node = node["down"]
    assert node == "[dict: 1 keys]"
    assert "items]" in json.dumps(out["list"])  # the list nested too deep is summarized


def test_the_number_of_values_visited_is_bounded() -> None:
    values = [[["s"] * MAX_ITEMS] * MAX_ITEMS] * MAX_ITEMS  # 8,421 values
    out = json.dumps(sanitize(values), ensure_ascii=False)

    assert "…[truncated]" in out
    assert out.count('"s"') < MAX_VALUES


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "db_password",
        "Password",
        "token",
        "access_token",
        "refreshToken",
        "secret",
        "client_secret",
        "api_key",
        "apiKey",
        "X-Api-Key",
        "APIKey",
        "Authorization",
        "proxy-authorization",
        "credentials",
        "cookie",
        "private_key",
    ],
)
def test_secret_keys_are_redacted(key: str) -> None:
    assert is_secret_key(key)
    assert sanitize({key: "value", "nested": [{key: {"deep": 1}}]}) == {
        key: REDACTED,
        "nested": [{key: REDACTED}],
    }


@pytest.mark.parametrize(
    "key", ["input_tokens", "output_tokens", "max_tokens", "session_key", "keyword", "name", "id"]
)
def test_counters_and_plain_keys_are_kept(key: str) -> None:
    assert not is_secret_key(key)
    assert sanitize({key: 5}) == {key: 5}


def test_credentials_inside_text_are_redacted() -> None:
    key = "sk-proj-" + "x" * 24
    out = sanitize({"note": f"use {key} with header Bearer abc.def-123 please"})

    assert out == {"note": f"use {REDACTED} with header {REDACTED} please"}
    assert sanitize("the bearer of news") == "the bearer of news"


class Colour(Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    token: str


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no")


def test_other_values_become_json_ready() -> None:
    out = sanitize(
        {
            "bytes": b"\x00" * 10,
            "enum": Colour.RED,
            "when": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
            "error": ValueError("bad input"),
            "point": Point(1, "t0ps3cret"),
            "nan": math.nan,
            "inf": -math.inf,
            "float": 1.5,
            "bool": True,
            "none": None,
            "object": object.__new__(Unprintable),
            "other": range(3),
            3: "int key",
        }
    )

    assert out == {
        "bytes": "[10 bytes]",
        "enum": "red",
        "when": "2024-01-02T03:04:05+00:00",
        "error": "ValueError: bad input",
        "point": {"x": 1, "token": REDACTED},
        "nan": "nan",
        "inf": "-inf",
        "float": 1.5,
        "bool": True,
        "none": None,
        "object": "<Unprintable>",
        "other": "range(0, 3)",
        "3": "int key",
    }
    json.dumps(out, allow_nan=False)


# -- the JSON form -------------------------------------------------------------------------------


def sample_trace() -> TurnTrace:
    trace = new_trace()
    request = trace.model_request(provider="openai", model="gpt-4.1")
    trace.event("retry", request, attempt=1)
    trace.end(request, input_tokens=10, output_tokens=2, finish_reason="tool_calls")
    call = trace.tool_call(call_id="call_1", tool="query", arguments={"q": "{ a }"})
    trace.end(call, rows=1, status="ok")
    trace.event("gate", gate="cites_numbers", passed=True)
    trace.finish(status="done")
    return trace


def test_to_dict_nests_spans_with_iso_times_and_durations() -> None:
    data = sample_trace().to_dict()
    root = data["root"]
    request, call = root["children"]

    assert (data["conversation_id"], data["turn_id"]) == ("c-1", "t-1")
    assert root["kind"] == "turn"
    assert root["name"] == "invoke_agent gmchat_nb"
    assert root["start"] == "2023-11-14T22:13:20.000000Z"
    assert root["end"] == "2023-11-14T22:13:20.007000Z"
    assert root["start_ns"] == START
    assert root["duration_ms"] == 7.0
    assert request["name"] == "chat gpt-4.1"
    assert request["duration_ms"] == 2.0
    assert request["events"] == [
        {
            "name": "retry",
            "at": "2023-11-14T22:13:20.002000Z",
            "at_ns": START + 2 * MS,
            "attributes": {"attempt": 1},
        }
    ]
    assert call["kind"] == "tool_call"
    assert call["attributes"]["arguments"] == {"q": "{ a }"}
    assert call["duration_ms"] == 1.0
    assert root["events"][0]["name"] == "gate"
    assert request["children"] == call["children"] == []


def test_open_spans_have_no_end_and_no_duration() -> None:
    trace = new_trace()
    trace.model_request(provider="p", model="m")
    root = trace.to_dict()["root"]

    assert root["end"] is None
    assert root["duration_ms"] is None
    assert root["children"][0]["end_ns"] is None
    assert root["children"][0]["duration_ms"] is None


def test_durations_are_in_milliseconds_to_the_microsecond() -> None:
    readings = iter([START, START + 1_234_567, START + 2_000_000_001])
    trace = TurnTrace(clock=lambda: next(readings))
    span = trace.model_request(provider="p", model="m")
    trace.end(span)

    assert span.duration_ns == 2_000_000_001 - 1_234_567
    assert trace.to_dict()["root"]["children"][0]["duration_ms"] == 1998.765
    assert iso_utc(START + 1_234_567) == "2023-11-14T22:13:20.001234Z"


def test_json_round_trip_gives_the_dict_back() -> None:
    trace = sample_trace()

    assert json.loads(trace.to_json()) == trace.to_dict()
    assert json.loads(trace.to_json(indent=2, sort_keys=True)) == trace.to_dict()


def test_to_dict_is_a_copy() -> None:
    trace = sample_trace()
    data = trace.to_dict()
    data["root"]["children"][1]["attributes"]["arguments"]["q"] = "changed"
    data["root"]["attributes"]["status"] = "changed"

    assert trace.spans[1].attributes["arguments"] == {"q": "{ a }"}
    assert trace.root.attributes["status"] == "done"


def test_non_ascii_stays_readable_in_json() -> None:
    trace = new_trace()
    trace.finish(note="ü" * 3 + "x" * MAX_STRING)

    assert "üüü" in trace.to_json()
    assert "…[3 more]" in trace.to_json()


def test_span_is_a_slotted_dataclass() -> None:
    span = Span("tool_call", "execute_tool t", 1)

    assert not hasattr(span, "__dict__")
    assert (span.end_ns, span.attributes, span.events, span.children) == (None, {}, [], [])
    assert not span.ended
    assert span.duration_ns is None

"""Provider retries at request start (core/providers/retries.py): the real SDKs against the local
vendor wire server (tests/vendor_server.py), one retry owner for every model request, and a
whole turn through ``Chat`` whose tool ran once though the next round's request was retried."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.planned.roles import RoleProviders
from gmchat_nb.core.providers.attempts import ProviderRetries, StreamResetEvent
from gmchat_nb.core.providers.base import (
    DoneEvent,
    Message,
    ProviderError,
    TextChunkEvent,
    Transient,
)
from gmchat_nb.core.providers.completion import ProviderTimeout
from gmchat_nb.core.providers.retries import (
    RetryPolicy,
    retry_after,
    transient_failure,
)
from gmchat_nb.core.settings import load_settings

from ...vendor_server import Reply, ToolCallSpec, VendorServer
from .test_adapters import TOOLS, VENDORS, provider

ASK = [Message("user", "hi")]
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"intent": {"type": "string"}}}
# Backoff of a few milliseconds, so the tests that do not test the wait do not wait.
FAST = RetryPolicy(attempts=3, max_wait_seconds=5, first_wait_seconds=0.01, jitter_seconds=0.01)
# Wire events before the first text delta (see test_adapters.FIRST_TEXT_AFTER): an in-band error
# after that many events still comes before any output.
BEFORE_OUTPUT = {"openai": 1, "anthropic": 2, "ollama": 0}
FIRST_TEXT_AFTER = {"openai": 2, "anthropic": 3, "ollama": 1}
QUERY = {"manager": "Material", "fields": ["name"], "limit": 2}


async def streamed(
    server: VendorServer, vendor: str, replies: list[Reply], policy: RetryPolicy = FAST
) -> tuple[list[Any], ProviderRetries, float]:
    """One streamed request through a retry owner: its events, the owner, the seconds it took."""
    server.script(vendor, replies)  # type: ignore[arg-type]
    retries = ProviderRetries(policy)
    started = time.monotonic()
    events = [event async for event in retries.events(provider(server, vendor), ASK, TOOLS)]
    return events, retries, time.monotonic() - started


def text(events: list[Any]) -> str:
    return "".join(event.content for event in events if isinstance(event, TextChunkEvent))


# -- what is retried, against each vendor's SDK --------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("header", [{"Retry-After": "0.2"}, {"retry-after-ms": "200"}])
async def test_a_429_is_retried_after_the_wait_the_vendor_asks_for(
    server: VendorServer, vendor: str, header: dict[str, str]
) -> None:
    # FAST's own backoff is 0.01-0.02 s: a wait of 0.2 s or more is the vendor's
    events, retries, elapsed = await streamed(
        server, vendor, [Reply(status=429, headers=header), Reply(text="ok")]
    )
    assert text(events) == "ok" and isinstance(events[-1], DoneEvent)
    assert len(server.requests[vendor]) == 2  # type: ignore[index]
    assert elapsed >= 0.19
    assert retries.summary() == {"requests": 1, "retried": 1, "retries": 1}


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("status", [529, 500, 503, 408, 409])
async def test_overloaded_server_errors_and_timeouts_are_retried(
    server: VendorServer, vendor: str, status: int
) -> None:
    events, retries, _ = await streamed(
        server, vendor, [Reply(status=status), Reply(status=status), Reply(text="ok")]
    )
    assert text(events) == "ok"
    assert len(server.requests[vendor]) == 3  # type: ignore[index]
    assert retries.summary() == {"requests": 1, "retried": 1, "retries": 2}


@pytest.mark.parametrize("vendor", VENDORS)
async def test_an_in_band_error_before_any_output_is_retried(
    server: VendorServer, vendor: str
) -> None:
    # anthropic: an SSE error event overloaded_error; openai: an error chunk server_error;
    # ollama: an error line saying the server is overloaded (its lines have no type)
    busy = Reply(
        text=["never ", "shown"],
        error_after=BEFORE_OUTPUT[vendor],
        error_message="server overloaded, please try again",
    )
    events, retries, _ = await streamed(server, vendor, [busy, Reply(text="ok")])
    assert text(events) == "ok" and retries.retries == 1
    assert len(server.requests[vendor]) == 2  # type: ignore[index]


@pytest.mark.parametrize("kind", ["rate_limit_error", "overloaded_error", "api_error"])
async def test_anthropic_s_in_band_rate_limit_and_overload_are_retried(
    server: VendorServer, kind: str
) -> None:
    busy = Reply(text="never", error_after=0, error_type=kind)
    events, retries, _ = await streamed(server, "anthropic", [busy, Reply(text="ok")])
    assert text(events) == "ok" and retries.retries == 1


@pytest.mark.parametrize(
    ("vendor", "kind"),
    [("anthropic", "invalid_request_error"), ("openai", "invalid_request_error")],
)
async def test_an_in_band_client_error_is_not_retried(
    server: VendorServer, vendor: str, kind: str
) -> None:
    bad = Reply(text="never", error_after=BEFORE_OUTPUT[vendor], error_type=kind)
    with pytest.raises(ProviderError):
        await streamed(server, vendor, [bad, Reply(text="ok")])
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_never_retried(
    server: VendorServer, vendor: str, status: int
) -> None:
    with pytest.raises(ProviderError, match=f"HTTP {status}") as caught:
        await streamed(server, vendor, [Reply(status=status), Reply(text="ok")])
    assert caught.value.transient is None
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_context_length_error_is_never_retried_whatever_its_status(
    server: VendorServer, vendor: str
) -> None:
    too_long = Reply(
        status=500,
        error_message="This model's maximum context length is 8192 tokens; your messages used 9000",
    )
    with pytest.raises(ProviderError):
        await streamed(server, vendor, [too_long, Reply(text="ok")])
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_429_the_vendor_says_not_to_retry_is_not_retried(
    server: VendorServer, vendor: str
) -> None:
    """``x-should-retry: false`` (OpenAI's own SDK obeys it) wins over a retryable status."""
    refused = Reply(status=429, headers={"x-should-retry": "false", "Retry-After": "0"})
    with pytest.raises(ProviderError, match="HTTP 429") as caught:
        await streamed(server, vendor, [refused, Reply(text="ok")])
    assert caught.value.transient is None
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


async def test_openai_s_insufficient_quota_429_is_not_retried(server: VendorServer) -> None:
    """A 429 for an exhausted balance, not a rate: no wait cures it."""
    broke = Reply(status=429, error_type="insufficient_quota", error_message="quota exceeded")
    with pytest.raises(ProviderError, match="HTTP 429") as caught:
        await streamed(server, "openai", [broke, Reply(text="ok")])
    assert caught.value.transient is None
    assert len(server.requests["openai"]) == 1
    events, _, _ = await streamed(server, "openai", [Reply(status=429), Reply(text="ok")])
    assert text(events) == "ok"  # a plain rate limit still is


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_failure_after_output_that_asking_again_cannot_cure_is_not_retried(
    server: VendorServer, vendor: str
) -> None:
    # anthropic/openai: an in-band invalid_request_error; ollama: an error line that says nothing
    # of load (its lines have no type)
    broken = Reply(
        text=["shown ", "then cut"],
        error_after=FIRST_TEXT_AFTER[vendor],
        error_type="invalid_request_error",
    )
    server.script(vendor, [broken, Reply(text="never asked")])  # type: ignore[arg-type]
    retries = ProviderRetries(FAST)
    seen: list[Any] = []

    async def read() -> None:
        async for event in retries.events(provider(server, vendor), ASK, TOOLS):
            seen.append(event)

    with pytest.raises(ProviderError):
        await read()
    assert text(seen) == "shown " and retries.retries == 0
    assert not any(isinstance(event, StreamResetEvent) for event in seen)
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_attempts_exhausted_raise_the_last_failure(server: VendorServer, vendor: str) -> None:
    with pytest.raises(ProviderError, match="HTTP 503"):
        await streamed(server, vendor, [Reply(status=503)] * 3 + [Reply(text="never asked")])
    assert len(server.requests[vendor]) == 3  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_max_wait_seconds_caps_a_huge_retry_after(server: VendorServer, vendor: str) -> None:
    capped = RetryPolicy(attempts=2, max_wait_seconds=0.3)
    huge = Reply(status=429, headers={"Retry-After": "3600"})
    events, _, elapsed = await streamed(server, vendor, [huge, Reply(text="ok")], capped)
    assert text(events) == "ok"
    assert 0.29 <= elapsed < 3.0


@pytest.mark.parametrize("vendor", VENDORS)
async def test_an_unreachable_server_is_retried_as_a_connection_error(
    server: VendorServer, vendor: str, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = provider(server, vendor)
    await server.stop()
    retries = ProviderRetries(FAST)
    with caplog.at_level(logging.WARNING), pytest.raises(Exception):  # noqa: B017,PT011
        _ = [event async for event in retries.events(adapter, ASK, TOOLS)]
    assert retries.summary() == {"requests": 1, "retried": 1, "retries": 2}
    assert sum("connection error" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize("vendor", VENDORS)
async def test_each_retry_is_logged_with_its_status_and_wait(
    server: VendorServer, vendor: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gmchat_nb.core.providers.attempts"):
        await streamed(
            server, vendor, [Reply(status=429, headers={"Retry-After": "0.05"}), Reply(text="ok")]
        )
    [record] = [r for r in caplog.records if r.name == "gmchat_nb.core.providers.attempts"]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "HTTP 429" in message and "asking again in 0.05 s" in message
    assert "attempt 2 of 3" in message


async def test_one_attempt_never_retries(server: VendorServer) -> None:
    with pytest.raises(ProviderError, match="HTTP 429"):
        await streamed(
            server, "openai", [Reply(status=429), Reply(text="ok")], RetryPolicy(attempts=1)
        )
    assert len(server.requests["openai"]) == 1


# -- structured requests (planned roles) -----------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_structured_request_is_retried(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(status=529), Reply(structured={"intent": "read"})])  # type: ignore[arg-type]
    retries = ProviderRetries(FAST)
    reply = await retries.structured(provider(server, vendor), ASK, SCHEMA, name="plan")
    assert reply.value == {"intent": "read"} and retries.retries == 1


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_planned_role_s_requests_go_through_the_turn_s_retries(
    server: VendorServer, vendor: str
) -> None:
    adapter = provider(server, vendor)
    settings = load_settings()
    retries = ProviderRetries(FAST)
    roles = RoleProviders(settings.planned_settings, legacy=adapter, implicit=True, retries=retries)
    server.script(
        vendor,  # type: ignore[arg-type]
        [Reply(status=429), Reply(structured={"intent": "read"}), Reply(status=503), Reply("ok")],
    )
    assert await roles.structured("planner", ASK, SCHEMA, name="plan") == {"intent": "read"}
    events = [event async for event in roles.request("synthesizer", ASK, [])]
    assert text(events) == "ok"
    assert roles.ledger.requests["planner"] == roles.ledger.requests["synthesizer"] == 1
    assert retries.summary() == {"requests": 2, "retried": 2, "retries": 2}
    server.script(vendor, [Reply(status=400), Reply(structured={})])  # type: ignore[arg-type]
    with pytest.raises(ProviderError):  # a 400 is not retried here either
        await roles.structured("planner", ASK, SCHEMA, name="plan")
    assert len(server.requests[vendor]) == 5  # type: ignore[index]


# -- whole turns through Chat -----------------------------------------------------------------------


def vendor_config(server: VendorServer, vendor: str) -> dict[str, Any]:
    return {
        "openai": {"base_url": server.openai_base_url, "api_key": "test-key"},
        "anthropic": {"base_url": server.anthropic_base_url, "api_key": "test-key"},
        "ollama": {"base_url": server.ollama_host},
    }[vendor]


async def chat_turn(
    server: VendorServer, vendor: str, replies: list[Reply], **settings: Any
) -> Any:
    server.script(vendor, replies)  # type: ignore[arg-type]
    chat = Chat(
        provider=f"{vendor}:test-model",
        provider_config=vendor_config(server, vendor),
        store=":memory:",
        **settings,
    )
    try:
        return await chat.ask("Two materials?")
    finally:
        await chat.aclose()


async def test_a_tool_that_ran_before_a_retried_round_ran_once(server: VendorServer) -> None:
    calls: list[str] = []

    def tool_called(tool_name: str, **_: Any) -> None:
        calls.append(tool_name)

    turn = await chat_turn(
        server,
        "openai",
        [
            Reply(tool_calls=[ToolCallSpec("query", QUERY)], usage=(100, 10)),
            Reply(status=429, headers={"Retry-After": "0.05"}),
            Reply(text="Steel and Aluminum.", usage=(150, 8)),
        ],
        hooks={"tool_called": tool_called},
    )
    kinds = ["tool_call", "tool_result", "notice", "text_chunk", "done"]
    assert [e["type"] for e in turn.events] == kinds
    assert turn.events[2]["kind"] == "retry" and turn.events[2]["details"]["wait_seconds"] == 0.05
    assert calls == ["query"]  # round 1's tool ran once, though round 2's request ran twice
    assert len(server.requests["openai"]) == 3
    retried, answered = server.requests["openai"][1:]
    assert retried == answered  # the same request asked again, the one tool result in it
    assert sum(m["role"] == "tool" for m in answered["messages"]) == 1
    done = turn.events[-1]
    assert done["attempts"] == {"requests": 2, "retried": 1, "retries": 1}
    assert done["usage"] == {"input_tokens": 250, "output_tokens": 18}


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("attempts", [1, 3])
async def test_attempts_exhausted_end_the_turn_with_provider_failed(
    server: VendorServer, vendor: str, attempts: int
) -> None:
    turn = await chat_turn(
        server,
        vendor,
        [Reply(status=503)] * attempts + [Reply(text="never asked")],
        provider_retries={"attempts": attempts, "max_wait_seconds": 0.05},
    )
    kinds = [(e["type"], e.get("code") or e.get("kind")) for e in turn.events]
    assert kinds == [("notice", "retry")] * (attempts - 1) + [("error", "provider_failed")]
    assert len(server.requests[vendor]) == attempts  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_turn_whose_answer_broke_for_good_after_output_ends_as_before(
    server: VendorServer, vendor: str
) -> None:
    broken = Reply(
        text=["shown ", "then cut"],
        error_after=FIRST_TEXT_AFTER[vendor],
        error_type="invalid_request_error",
    )
    turn = await chat_turn(server, vendor, [broken, Reply(text="never asked")])
    assert [e["type"] for e in turn.events] == ["text_chunk", "error"]
    assert turn.answer == "shown " and turn.events[-1]["code"] == "provider_failed"
    assert len(server.requests[vendor]) == 1  # type: ignore[index]


async def test_a_turn_without_retries_has_no_attempts_field(server: VendorServer) -> None:
    turn = await chat_turn(server, "anthropic", [Reply(text="Hi.")])
    assert turn.events[-1]["type"] == "done" and "attempts" not in turn.events[-1]


async def test_a_turn_retried_in_band_says_so_in_done(server: VendorServer) -> None:
    turn = await chat_turn(
        server,
        "anthropic",
        [Reply(text="never", error_after=0), Reply(text="Hi.")],
        provider_retries={"max_wait_seconds": 0.05},
    )
    assert turn.answer == "Hi."
    assert turn.events[-1]["attempts"] == {"requests": 1, "retried": 1, "retries": 1}


# -- the classification and the wait, without a server ---------------------------------------------


def test_retry_after_reads_milliseconds_seconds_and_dates() -> None:
    assert retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    assert retry_after({"Retry-After": "1.5"}) == 1.5
    now = 1_700_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 7))
    assert retry_after({"Retry-After": date}, now=now) == pytest.approx(7)
    past = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now - 60))
    assert retry_after({"Retry-After": past}, now=now) == 0
    for junk in ({}, None, {"Retry-After": "soon"}, {"Retry-After": "-3"}, {"x": "1"}):
        assert retry_after(junk) is None


def test_our_own_deadlines_and_unmarked_errors_are_not_retried() -> None:
    assert transient_failure(ProviderTimeout("no response within 1 s")) is None
    assert transient_failure(ProviderError("the model refused")) is None
    assert transient_failure(RuntimeError("server overloaded")) is None
    marked = ProviderError("x", transient=Transient("HTTP 429", 429, 1.0))
    assert transient_failure(marked) == Transient("HTTP 429", 429, 1.0)
    assert transient_failure(ConnectionResetError()) is not None

"""export_trace: the OpenTelemetry span tree of a turn, content capture, vendor instrumentation,
and a package that neither needs nor imports OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gmchat_nb.core import telemetry
from gmchat_nb.core.telemetry import CAPTURE_CONTENT_ENV, export_trace, vendor_instrumented
from gmchat_nb.core.trace import TurnTrace

START = 1_700_000_000_000_000_000
MS = 1_000_000


def ms_clock() -> Callable[[], int]:
    now = [START - MS]

    def tick() -> int:
        now[0] += MS
        return now[0]

    return tick


class Exported:
    """A tracer provider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def export(self, trace: TurnTrace, **kwargs: Any) -> dict[str, ReadableSpan]:
        export_trace(trace, tracer_provider=self.provider, **kwargs)
        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        return {span.name: span for span in spans}


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Exported]:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    exported = Exported()
    yield exported
    exported.provider.shutdown()


def turn() -> TurnTrace:
    """A turn: a request that was retried and asked for a tool, the tool, a failed request."""
    trace = TurnTrace(conversation_id="conv-1", turn_id="turn-1", clock=ms_clock())  # 0
    first = trace.model_request(provider="openai", model="gpt-4.1")  # 1
    trace.event("retry", first, attempt=2, error_type="RateLimitError", delay_s=0.5)  # 2
    trace.end(
        first,
        input_tokens=100,
        output_tokens=20,
        finish_reason="tool_calls",
        input_messages=[{"role": "user", "parts": [{"type": "text", "content": "how many?"}]}],
        output_messages=[{"role": "assistant", "parts": []}],
    )  # 3
    call = trace.tool_call(call_id="call_1", tool="query", arguments={"query": "{ projects }"})  # 4
    trace.end(call, rows=3, status="ok", result={"rows": [1, 2, 3], "token": "s3cr3t"})  # 5
    second = trace.model_request(provider="anthropic:claude", model="claude-sonnet")  # 6
    trace.event("fallback", second, to="ollama", text="the model said: …")  # 7
    trace.end(second, error_type="APITimeoutError", input_tokens=50)  # 8
    trace.event("gate", gate="cites_numbers", passed=False)  # 9
    trace.event("gate", gate="answers_question", passed=True)  # 10
    trace.event("loop_guard", stopped_by="turn_limit")  # 11
    trace.finish(status="stopped", rounds=2)  # 12
    return trace


# -- the span tree -------------------------------------------------------------------------------


def test_the_turn_is_a_tree_of_agent_chat_and_tool_spans(otel: Exported) -> None:
    spans = otel.export(turn())
    root = spans["invoke_agent gmchat_nb"]
    first, call, second = (
        spans["chat gpt-4.1"],
        spans["execute_tool query"],
        spans["chat claude-sonnet"],
    )

    assert len(spans) == 4
    assert root.parent is None
    assert root.context is not None
    for child in (first, call, second):
        assert child.parent is not None
        assert child.parent.span_id == root.context.span_id
        assert child.context is not None
        assert child.context.trace_id == root.context.trace_id
    assert (root.kind, first.kind, call.kind, second.kind) == (
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
    )
    assert (root.start_time, root.end_time) == (START, START + 12 * MS)
    assert (first.start_time, first.end_time) == (START + MS, START + 3 * MS)
    assert (call.start_time, call.end_time) == (START + 4 * MS, START + 5 * MS)
    assert (second.start_time, second.end_time) == (START + 6 * MS, START + 8 * MS)
    assert root.instrumentation_scope is not None
    assert root.instrumentation_scope.name == "gmchat_nb"


def test_the_agent_span_carries_the_turn(otel: Exported) -> None:
    root = otel.export(turn())["invoke_agent gmchat_nb"]

    assert dict(root.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "gmchat_nb",
        "gen_ai.conversation.id": "conv-1",
        "gmchat.turn.id": "turn-1",
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 20,
        "gmchat.loop_guard.stopped_by": "turn_limit",
        "gmchat.gates.failed": ("cites_numbers",),
        "gmchat.turn.status": "stopped",
        "gmchat.turn.rounds": 2,
    }
    assert [(event.name, event.timestamp) for event in root.events] == [
        ("gmchat.gate", START + 9 * MS),
        ("gmchat.gate", START + 10 * MS),
        ("gmchat.loop_guard", START + 11 * MS),
    ]
    assert dict(root.events[0].attributes or {}) == {"gate": "cites_numbers", "passed": False}
    assert root.status.status_code == StatusCode.UNSET


def test_chat_spans_follow_the_genai_conventions(otel: Exported) -> None:
    spans = otel.export(turn())
    first, second = spans["chat gpt-4.1"], spans["chat claude-sonnet"]

    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gmchat.provider": "openai",
        "gen_ai.request.model": "gpt-4.1",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.response.finish_reasons": ("tool_calls",),
    }
    (retry,) = first.events
    assert retry.name == "gmchat.retry"
    assert retry.timestamp == START + 2 * MS
    assert dict(retry.attributes or {}) == {
        "attempt": 2,
        "error.type": "RateLimitError",
        "delay_s": 0.5,
    }
    assert first.status.status_code == StatusCode.UNSET

    assert second.attributes is not None
    assert second.attributes["gen_ai.provider.name"] == "anthropic"
    assert second.attributes["error.type"] == "APITimeoutError"
    assert second.status.status_code == StatusCode.ERROR
    assert second.status.description == "APITimeoutError"
    (fallback,) = second.events
    assert dict(fallback.attributes or {}) == {"to": "ollama"}  # its text is content


def test_tool_spans_follow_the_genai_conventions(otel: Exported) -> None:
    call = otel.export(turn())["execute_tool query"]

    assert dict(call.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.name": "query",
        "gen_ai.tool.call.id": "call_1",
        "gmchat.tool.rows": 3,
        "gmchat.tool.status": "ok",
    }


def test_a_failed_tool_is_an_error_span(otel: Exported) -> None:
    trace = TurnTrace(clock=ms_clock())
    call = trace.tool_call(call_id="c", tool="mutate", arguments={})
    trace.end(call, status="error")
    trace.finish()

    assert otel.export(trace)["execute_tool mutate"].status.status_code == StatusCode.ERROR


def test_spans_left_open_end_with_the_turn(otel: Exported) -> None:
    trace = TurnTrace(clock=ms_clock())
    trace.model_request(provider="ollama", model="qwen3")
    trace.finish()
    chat = otel.export(trace)["chat qwen3"]

    assert chat.end_time == START + 2 * MS
    assert chat.attributes is not None
    assert chat.attributes["gmchat.unfinished"] is True
    assert chat.attributes["gen_ai.provider.name"] == "ollama"


def test_the_turn_is_parented_to_the_current_span(otel: Exported) -> None:
    tracer = otel.provider.get_tracer("test")
    with tracer.start_as_current_span("request") as outer:
        export_trace(turn(), tracer_provider=otel.provider)
    spans = {span.name: span for span in otel.exporter.get_finished_spans()}

    parent = spans["invoke_agent gmchat_nb"].parent
    assert parent is not None
    assert parent.span_id == outer.get_span_context().span_id


# -- content -------------------------------------------------------------------------------------

CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def content_of(spans: dict[str, ReadableSpan]) -> dict[str, Any]:
    return {
        key: json.loads(value)
        for span in spans.values()
        for key, value in (span.attributes or {}).items()
        if key in CONTENT and isinstance(value, str)
    }


@pytest.mark.parametrize("value", ["", "false", "0", "event_only", "no"])
def test_content_is_not_exported_by_default(
    otel: Exported, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    if value:
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, value)

    assert content_of(otel.export(turn())) == {}


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "span_only", "Span_Only", "span_and_event"])
def test_content_is_exported_when_asked_for_sanitized(
    otel: Exported, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, value)
    spans = otel.export(turn())

    assert content_of(spans) == {
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": "how many?"}]}
        ],
        "gen_ai.output.messages": [{"role": "assistant", "parts": []}],
        "gen_ai.tool.call.arguments": {"query": "{ projects }"},
        "gen_ai.tool.call.result": {"rows": [1, 2, 3], "token": "[redacted]"},
    }
    (fallback,) = spans["chat claude-sonnet"].events
    assert fallback.attributes is not None
    assert fallback.attributes["text"] == "the model said: …"


# -- chat spans and the vendors' instrumentation -------------------------------------------------


def test_llm_spans_off_drops_the_chat_spans(otel: Exported) -> None:
    spans = otel.export(turn(), llm_spans="off")

    assert sorted(spans) == ["execute_tool query", "invoke_agent gmchat_nb"]
    root, call = spans["invoke_agent gmchat_nb"], spans["execute_tool query"]
    assert root.context is not None
    assert call.parent is not None
    assert call.parent.span_id == root.context.span_id


def test_llm_spans_must_be_auto_on_or_off() -> None:
    with pytest.raises(ValueError, match="llm_spans"):
        export_trace(turn(), llm_spans="sometimes")  # type: ignore[arg-type]


def fake_instrumentor(monkeypatch: pytest.MonkeyPatch, module: str, name: str, on: bool) -> None:
    """A BaseInstrumentor-like singleton, already instantiated, in an imported module."""
    cls = type(name, (), {"is_instrumented_by_opentelemetry": on})
    cls._instance = cls()  # type: ignore[attr-defined]
    fake = types.ModuleType(module)
    setattr(fake, name, cls)
    monkeypatch.setitem(sys.modules, module, fake)


def test_a_vendor_instrumentor_takes_over_the_chat_spans(
    otel: Exported, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_instrumentor(
        monkeypatch, "opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor", True
    )

    assert vendor_instrumented("openai")
    assert vendor_instrumented("OpenAI:gpt-4.1")
    assert not vendor_instrumented("anthropic")
    assert sorted(otel.export(turn())) == [
        "chat claude-sonnet",
        "execute_tool query",
        "invoke_agent gmchat_nb",
    ]
    assert "chat gpt-4.1" in otel.export(turn(), llm_spans="on")


@pytest.mark.parametrize(
    ("module", "name", "provider"),
    [
        ("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor", "anthropic"),
        ("opentelemetry.instrumentation.ollama", "OllamaInstrumentor", "ollama"),
        ("opentelemetry.instrumentation.openai", "OpenAIInstrumentor", "openai"),
    ],
)
def test_each_vendor_instrumentor_is_recognized(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str, provider: str
) -> None:
    fake_instrumentor(monkeypatch, module, name, False)
    assert not vendor_instrumented(provider)

    fake_instrumentor(monkeypatch, module, name, True)
    assert vendor_instrumented(provider)


def test_an_sdk_method_wrapped_by_wrapt_counts_as_instrumented(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("openai")
    from openai.resources.chat.completions import AsyncCompletions

    # The SDK's own decorators set __wrapped__: that alone is not instrumentation.
    assert hasattr(AsyncCompletions.create, "__wrapped__")
    assert not vendor_instrumented("openai")

    class FunctionWrapper:  # what wrapt.wrap_function_wrapper installs
        __module__ = "wrapt.wrappers"

    monkeypatch.setattr(AsyncCompletions, "create", FunctionWrapper())
    assert vendor_instrumented("openai")


def test_unknown_or_broken_providers_are_not_instrumented(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        @property
        def is_instrumented_by_opentelemetry(self) -> bool:
            raise RuntimeError("boom")

    fake = types.ModuleType("opentelemetry.instrumentation.ollama")
    fake.OllamaInstrumentor = type("OllamaInstrumentor", (), {"_instance": Broken()})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "opentelemetry.instrumentation.ollama", fake)

    assert not vendor_instrumented("ollama")
    assert not vendor_instrumented("scripted")
    assert not vendor_instrumented("")


# -- never in the way ----------------------------------------------------------------------------


class CountingNoOpProvider(otel_trace.NoOpTracerProvider):
    """The API's no-op provider (what a program without the SDK has), counting the spans it
    is asked for."""

    def __init__(self) -> None:
        self.spans: list[otel_trace.Span] = []

    def get_tracer(self, *args: Any, **kwargs: Any) -> otel_trace.Tracer:
        spans = self.spans

        class Tracer(otel_trace.NoOpTracer):
            def start_span(self, *args: Any, **kwargs: Any) -> otel_trace.Span:
                span = super().start_span(*args, **kwargs)
                spans.append(span)
                return span

        return Tracer()


def test_without_an_sdk_nothing_is_recorded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A no-op provider is given one span, which it does not record, and the export stops
    there; with no provider set at all (the global default), no tracer is even asked for.
    Neither raises nor logs."""
    no_op = CountingNoOpProvider()
    export_trace(turn(), tracer_provider=no_op)
    assert len(no_op.spans) == 1 and not no_op.spans[0].is_recording()

    # The suite never sets a global provider (tests/core/test_turn_telemetry.py does so in a
    # child process), so the global one is the API's proxy: count what is asked of it.
    assert isinstance(otel_trace.get_tracer_provider(), otel_trace.ProxyTracerProvider)
    asked: list[str] = []

    def get_tracer(
        self: otel_trace.ProxyTracerProvider, name: str, *args: Any, **kwargs: Any
    ) -> Any:
        asked.append(name)
        return otel_trace.NoOpTracer()

    monkeypatch.setattr(otel_trace.ProxyTracerProvider, "get_tracer", get_tracer)
    export_trace(turn())
    assert asked == []
    assert caplog.records == []


def test_a_failing_tracer_never_breaks_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    class Failing(otel_trace.NoOpTracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> otel_trace.Tracer:
            raise RuntimeError("exporter down")

    export_trace(turn(), tracer_provider=Failing())

    assert "could not export" in caplog.text


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_package_never_imports_opentelemetry() -> None:
    result = run_python(
        """
        import sys
        import gmchat_nb, gmchat_nb.core.telemetry, gmchat_nb.core.trace
        from gmchat_nb.core.telemetry import vendor_instrumented
        assert not vendor_instrumented("openai")
        loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
        assert not loaded, loaded
        """
    )
    assert result.returncode == 0, result.stderr


def test_without_opentelemetry_export_is_a_no_op() -> None:
    result = run_python(
        """
        import sys
        sys.modules["opentelemetry"] = None  # importing it now raises ImportError
        import gmchat_nb
        from gmchat_nb.core import telemetry
        from gmchat_nb.core.trace import TurnTrace

        trace = TurnTrace(conversation_id="c")
        trace.end(trace.model_request(provider="openai", model="m"), input_tokens=1)
        trace.finish()
        assert telemetry.export_trace(trace) is None
        assert telemetry.export_trace(trace, llm_spans="on") is None
        assert telemetry._otel_trace is None  # the failed import is remembered
        assert not [m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m]]
        """
    )
    assert result.returncode == 0, result.stderr


def test_the_api_is_imported_once_and_remembered() -> None:
    assert telemetry._api() is otel_trace
    assert telemetry._api() is telemetry._api()

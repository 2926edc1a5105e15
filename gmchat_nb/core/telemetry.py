"""OpenTelemetry export of a finished turn, after the GenAI semantic conventions.

:func:`export_trace` replays a :class:`~.trace.TurnTrace` as OpenTelemetry spans with the
recorded start and end times: ``invoke_agent gmchat_nb`` (INTERNAL) for the turn, under it one
``chat {model}`` (CLIENT) per model request and, as their siblings, one ``execute_tool {tool}``
(INTERNAL) per tool call. The trace's events become span events (``gmchat.retry``,
``gmchat.fallback``, ...); our own attributes live under ``gmchat.*``. Exporting after the fact
keeps the turn's hot path free of any tracing API: the trace is recorded either way.

Only ``opentelemetry-api`` is used (extra ``[otel]``), and it is imported when first needed: the
package never imports it on its own, and without it :func:`export_trace` does nothing at the
cost of one check. Which SDK and exporter receive the spans is the application's choice.

Message content (``gen_ai.input.messages``/``gen_ai.output.messages``,
``gen_ai.tool.call.arguments``/``gen_ai.tool.call.result``) is exported only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for it, and always from the sanitized
trace. Our ``chat`` spans step aside when the vendor's own instrumentation already traces that
provider's requests (``llm_spans="auto"``), so a request is not reported twice.

Over 400 lines: the GenAI conventions' attribute names, the check for the vendors' own
instrumentation and the span tree's export are one mapping from a trace to OpenTelemetry.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

if TYPE_CHECKING:
    from opentelemetry.trace import Span as OtelSpan
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "LLMSpans",
    "Trace",
    "TraceSpan",
    "capture_content",
    "export_trace",
    "vendor_instrumented",
]

log = logging.getLogger(__name__)


# What is read of a trace: the shape of .trace.Span and .trace.TurnTrace, which this module does not
# import (the two are peers of one layer, see tests/test_architecture.py).
class TraceSpan(Protocol):
    """A span of a turn's trace (:class:`gmchat_nb.core.trace.Span`)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def start_ns(self) -> int: ...
    @property
    def end_ns(self) -> int | None: ...
    @property
    def attributes(self) -> Mapping[str, Any]: ...
    @property
    def events(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def children(self) -> Sequence[TraceSpan]: ...


class Trace(Protocol):
    """A turn's trace (:class:`gmchat_nb.core.trace.TurnTrace`)."""

    @property
    def conversation_id(self) -> str | None: ...
    @property
    def turn_id(self) -> str | None: ...
    @property
    def root(self) -> TraceSpan: ...
    def now(self) -> int: ...


LLMSpans = Literal["auto", "on", "off"]

TRACER_NAME: Final = "gmchat_nb"
AGENT_NAME: Final = "gmchat_nb"
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_CONTENT_VALUES: Final = frozenset({"true", "1", "span_only", "span_and_event"})

# GenAI semantic conventions.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"

# Ours.
GMCHAT_TURN_ID: Final = "gmchat.turn.id"
GMCHAT_TURN_STATUS: Final = "gmchat.turn.status"
GMCHAT_PROVIDER: Final = "gmchat.provider"
GMCHAT_TOOL_ROWS: Final = "gmchat.tool.rows"
GMCHAT_TOOL_STATUS: Final = "gmchat.tool.status"
GMCHAT_LOOP_GUARD_STOPPED_BY: Final = "gmchat.loop_guard.stopped_by"
GMCHAT_GATES_FAILED: Final = "gmchat.gates.failed"
GMCHAT_UNFINISHED: Final = "gmchat.unfinished"

# Our provider names -> gen_ai.provider.name (well-known values where one exists).
PROVIDER_NAMES: Final[Mapping[str, str]] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "ollama": "ollama",
    "local": "llama_cpp",
}

# Trace attribute -> span attribute, per span kind; what is not listed goes under gmchat.*.
_TURN_ATTRIBUTES: Final[Mapping[str, str]] = {
    "status": GMCHAT_TURN_STATUS,
    "error_type": ERROR_TYPE,
    "stopped_by": GMCHAT_LOOP_GUARD_STOPPED_BY,
    "gates_failed": GMCHAT_GATES_FAILED,
    "input_tokens": GEN_AI_USAGE_INPUT_TOKENS,
    "output_tokens": GEN_AI_USAGE_OUTPUT_TOKENS,
}
_CHAT_ATTRIBUTES: Final[Mapping[str, str]] = {
    "provider": GMCHAT_PROVIDER,
    "model": GEN_AI_REQUEST_MODEL,
    "response_model": GEN_AI_RESPONSE_MODEL,
    "response_id": GEN_AI_RESPONSE_ID,
    "finish_reason": GEN_AI_RESPONSE_FINISH_REASONS,
    "finish_reasons": GEN_AI_RESPONSE_FINISH_REASONS,
    "input_tokens": GEN_AI_USAGE_INPUT_TOKENS,
    "output_tokens": GEN_AI_USAGE_OUTPUT_TOKENS,
    "error_type": ERROR_TYPE,
}
_TOOL_ATTRIBUTES: Final[Mapping[str, str]] = {
    "tool": GEN_AI_TOOL_NAME,
    "call_id": GEN_AI_TOOL_CALL_ID,
    "rows": GMCHAT_TOOL_ROWS,
    "status": GMCHAT_TOOL_STATUS,
    "error_type": ERROR_TYPE,
}
# Content: exported only when captured, under these names.
_CONTENT_ATTRIBUTES: Final[Mapping[str, str]] = {
    "input_messages": GEN_AI_INPUT_MESSAGES,
    "output_messages": GEN_AI_OUTPUT_MESSAGES,
    "arguments": GEN_AI_TOOL_CALL_ARGUMENTS,
    "result": GEN_AI_TOOL_CALL_RESULT,
}
# Event attributes that may hold content (dropped unless captured).
_CONTENT_KEYS: Final = frozenset({*_CONTENT_ATTRIBUTES, "content", "text", "excerpt", "messages"})
_PREFIX: Final[Mapping[str, str]] = {
    "turn": "gmchat.turn.",
    "model_request": "gmchat.request.",
    "tool_call": "gmchat.tool.",
}

# provider -> (instrumentation module, instrumentor class) pairs; then (SDK module, class, methods).
_INSTRUMENTORS: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    "openai": (
        ("opentelemetry.instrumentation.openai_v2", "OpenAIInstrumentor"),  # OpenTelemetry's
        ("opentelemetry.instrumentation.openai", "OpenAIInstrumentor"),  # OpenLLMetry's
    ),
    "anthropic": (("opentelemetry.instrumentation.anthropic", "AnthropicInstrumentor"),),
    "ollama": (("opentelemetry.instrumentation.ollama", "OllamaInstrumentor"),),
}
_SDK_METHODS: Final[Mapping[str, tuple[tuple[str, str, tuple[str, ...]], ...]]] = {
    "openai": (("openai.resources.chat.completions", "AsyncCompletions", ("create",)),),
    "anthropic": (("anthropic.resources.messages", "AsyncMessages", ("create", "stream")),),
    "ollama": (("ollama._client", "AsyncClient", ("chat", "_request")),),
}

_UNLOADED: Final = object()
_otel_trace: Any = _UNLOADED  # opentelemetry.trace once imported; None when it cannot be


def _api() -> Any:
    """``opentelemetry.trace``, imported on first use; ``None`` (remembered) without it."""
    global _otel_trace
    if _otel_trace is _UNLOADED:
        try:
            from opentelemetry import trace as otel_trace
        except ImportError:
            _otel_trace = None
        else:
            _otel_trace = otel_trace
    return _otel_trace


@functools.cache
def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gmchat_nb")
    except PackageNotFoundError:
        return None


def capture_content() -> bool:
    """Whether ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content on spans
    (``true``, ``1``, ``span_only`` or ``span_and_event``, any case)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in CAPTURE_CONTENT_VALUES


def _provider_key(provider_name: str) -> str:
    return provider_name.partition(":")[0].strip().lower()


def _wrapped_by_wrapt(value: Any) -> bool:
    # wrapt's FunctionWrapper (Python or C): the type of what wrap_function_wrapper installs.
    # (``__wrapped__`` alone proves nothing: the SDKs' own functools.wraps decorators set it.)
    return any(cls.__module__.partition(".")[0] == "wrapt" for cls in type(value).__mro__)


def vendor_instrumented(provider_name: str) -> bool:
    """Whether the vendor's OpenTelemetry instrumentation already traces ``provider_name``'s
    requests (``openai``, ``anthropic``, ``ollama``; ``openai:gpt-4.1`` works too).

    Cheap and safe: only modules already imported are looked at, nothing is imported or
    instantiated. Yes when the instrumentor's singleton (``BaseInstrumentor._instance``, read
    rather than created: constructing one resets its state) says
    ``is_instrumented_by_opentelemetry``, or when the SDK's method is wrapped by ``wrapt`` (how
    every such instrumentation patches, whichever package did it)."""
    key = _provider_key(provider_name)
    try:
        for module_name, class_name in _INSTRUMENTORS.get(key, ()):
            module = sys.modules.get(module_name)
            instrumentor = getattr(module, class_name, None)
            instance = getattr(instrumentor, "_instance", None)
            if instance is not None and getattr(
                instance, "is_instrumented_by_opentelemetry", False
            ):
                return True
        for module_name, class_name, methods in _SDK_METHODS.get(key, ()):
            owner = getattr(sys.modules.get(module_name), class_name, None)
            if owner is not None and any(
                _wrapped_by_wrapt(vars(owner).get(method)) for method in methods
            ):
                return True
    except Exception:  # a broken third-party object must not break a turn's export
        log.debug("could not tell whether %s is instrumented", provider_name, exc_info=True)
    return False


def _value(value: Any) -> Any:
    """An attribute value OpenTelemetry takes: primitives, homogeneous lists of them, else JSON."""
    if isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple) and value:
        kinds = {type(item) for item in value}
        if len(kinds) == 1 and kinds <= {str, bool, int, float}:
            return list(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _attributes(
    kind: str, recorded: Mapping[str, Any], names: Mapping[str, str], content: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in recorded.items():
        if value is None:
            continue
        if key in _CONTENT_ATTRIBUTES:
            if content:
                out[_CONTENT_ATTRIBUTES[key]] = json.dumps(value, ensure_ascii=False, default=str)
            continue
        name = names.get(key) or (GMCHAT_UNFINISHED if key == "unfinished" else _PREFIX[kind] + key)
        if name == GEN_AI_RESPONSE_FINISH_REASONS and isinstance(value, str):
            value = [value]
        out[name] = _value(value)
    return out


def _add_events(target: OtelSpan, events: Iterable[Mapping[str, Any]], content: bool) -> None:
    for event in events:
        attributes = {
            (ERROR_TYPE if key == "error_type" else key): _value(value)
            for key, value in event["attributes"].items()
            if value is not None and (content or key not in _CONTENT_KEYS)
        }
        target.add_event(f"gmchat.{event['name']}", attributes, timestamp=event["at_ns"])


def _end(target: OtelSpan, span: TraceSpan, end_ns: int) -> None:
    error = span.attributes.get("error_type")
    if error is not None or span.attributes.get("status") == "error":
        api = _api()
        target.set_status(api.Status(api.StatusCode.ERROR, str(error or "error")))
    target.end(end_time=span.end_ns if span.end_ns is not None else end_ns)


def _turn_attributes(trace: Trace, content: bool) -> dict[str, Any]:
    root = trace.root
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "invoke_agent",
        GEN_AI_AGENT_NAME: AGENT_NAME,
    }
    if trace.conversation_id is not None:
        attributes[GEN_AI_CONVERSATION_ID] = trace.conversation_id
    if trace.turn_id is not None:
        attributes[GMCHAT_TURN_ID] = trace.turn_id
    requests = [span for span in root.children if span.kind == "model_request"]
    for key in ("input_tokens", "output_tokens"):  # the turn's usage: its requests' sum
        counts = [s.attributes[key] for s in requests if isinstance(s.attributes.get(key), int)]
        if counts:
            attributes[_TURN_ATTRIBUTES[key]] = sum(counts)
    stopped = [e["attributes"].get("stopped_by") for e in root.events if e["name"] == "loop_guard"]
    if stopped and stopped[-1] is not None:
        attributes[GMCHAT_LOOP_GUARD_STOPPED_BY] = _value(stopped[-1])
    failed = [
        str(event["attributes"].get("gate"))
        for span in (root, *root.children)
        for event in span.events
        if event["name"] == "gate" and event["attributes"].get("passed") is False
    ]
    if failed:
        attributes[GMCHAT_GATES_FAILED] = list(dict.fromkeys(failed))
    attributes.update(_attributes("turn", root.attributes, _TURN_ATTRIBUTES, content))
    return attributes


def export_trace(
    trace: Trace,
    *,
    tracer_provider: TracerProvider | None = None,
    llm_spans: LLMSpans = "auto",
) -> None:
    """Emits ``trace`` as OpenTelemetry spans through ``tracer_provider`` (default: the global
    one), the root parented to the current context. ``llm_spans``: ``"on"`` always emits the
    ``chat`` spans, ``"off"`` never, ``"auto"`` unless :func:`vendor_instrumented` says the
    provider's own instrumentation already does. Without ``opentelemetry-api`` it does nothing;
    it never raises on account of OpenTelemetry (failures are logged)."""
    if llm_spans not in ("auto", "on", "off"):
        raise ValueError(f"llm_spans must be 'auto', 'on' or 'off', not {llm_spans!r}")
    api = _api()
    if api is None:
        return
    if tracer_provider is None and isinstance(
        api.get_tracer_provider(), api.ProxyTracerProvider | api.NoOpTracerProvider
    ):
        return  # no SDK configured: the spans would go nowhere, so none are made
    seal = getattr(trace, "seal", None)
    if seal is not None:
        seal()  # a TurnTrace keeps values raw until it is read
    try:
        tracer = api.get_tracer(TRACER_NAME, _version(), tracer_provider)
        _emit(api, tracer, trace, llm_spans)
    except Exception:
        log.warning("could not export the turn's trace to OpenTelemetry", exc_info=True)


def _emit(api: Any, tracer: Tracer, trace: Trace, llm_spans: LLMSpans) -> None:
    content = capture_content()
    root = trace.root
    end_ns = root.end_ns if root.end_ns is not None else trace.now()
    turn = tracer.start_span(
        root.name,
        kind=api.SpanKind.INTERNAL,
        attributes=_turn_attributes(trace, content),
        start_time=root.start_ns,
    )
    if not turn.is_recording():  # no SDK configured: nothing would be kept
        turn.end(end_time=end_ns)
        return
    context = api.set_span_in_context(turn)
    for span in root.children:
        if span.kind == "model_request":
            provider = _provider_key(str(span.attributes.get("provider", "")))
            if llm_spans == "off" or (llm_spans == "auto" and vendor_instrumented(provider)):
                continue
            kind = api.SpanKind.CLIENT
            attributes = {
                GEN_AI_OPERATION_NAME: "chat",
                GEN_AI_PROVIDER_NAME: PROVIDER_NAMES.get(provider, provider),
                **_attributes("model_request", span.attributes, _CHAT_ATTRIBUTES, content),
            }
        else:
            kind = api.SpanKind.INTERNAL
            attributes = {
                GEN_AI_OPERATION_NAME: "execute_tool",
                GEN_AI_TOOL_TYPE: "function",
                **_attributes("tool_call", span.attributes, _TOOL_ATTRIBUTES, content),
            }
        child = tracer.start_span(
            span.name, context=context, kind=kind, attributes=attributes, start_time=span.start_ns
        )
        _add_events(child, span.events, content)
        _end(child, span, end_ns)
    _add_events(turn, root.events, content)
    _end(turn, root, end_ns)

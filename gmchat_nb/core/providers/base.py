"""The provider protocol: provider-neutral messages in, a stream of text, tool calls and Done out.

A provider turns ``(messages, tools)`` into an async stream of :class:`TextChunkEvent`,
:class:`ToolCallEvent` and exactly one final :class:`DoneEvent`. History keeps tool calls and
results as structured data (ids, names, arguments, results), which each adapter translates into
its SDK's native format. Providers never retry: a failed request is a :class:`ProviderError`,
marked :class:`Transient` when asking again may succeed, and :mod:`.retries` (the one retry owner)
decides whether to ask again.

:meth:`BaseLLMProvider.complete_structured` asks for one JSON object following a schema (a
planner's plan) and returns it with its usage as a :class:`StructuredReply`. The SDK adapters use
their vendor's structured output; the default, for providers that only implement ``complete``,
offers the schema as a single tool and reads the model's call of it.

Over 400 lines: the protocol is one vocabulary (messages, events, usage, errors and the base
class) that every adapter, both engines and the cassettes speak; split, each would import it
from several modules.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import types
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..guards.envelope import Envelope
from ..text import MAX_JSON_DEPTH, json_depth_exceeds, json_kind

__all__ = [
    "STRUCTURED_MIN_TOKENS",
    "BaseLLMProvider",
    "DoneEvent",
    "Message",
    "MissingExtraError",
    "ProviderCompletionError",
    "ProviderError",
    "ProviderEvent",
    "StructuredReply",
    "TextChunkEvent",
    "TokenUsage",
    "ToolCallEvent",
    "ToolDefinition",
    "Transient",
    "WrappingProvider",
    "clip",
    "structured_object",
    "structured_text",
]

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one provider request used (zeros when the provider does not say).

    ``input_tokens`` counts every input token, those read from or written to the vendor's
    prompt cache included (OpenAI's ``prompt_tokens``; Anthropic's ``input_tokens`` plus its two
    cache counts), so ``cache_read_tokens`` and ``cache_write_tokens`` are parts of it, priced
    apart; ``reasoning_tokens`` are part of ``output_tokens`` where the vendor reports them.
    ``estimated`` marks counts the provider did not report (gmchat_nb counted them itself).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, int]:
        """``{"input_tokens": ..., "output_tokens": ...}`` (GeneralManager's ``usage``)."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    def details(self) -> dict[str, Any]:
        """Every count, and whether they were estimated (usage records, ``done.cost``)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "estimated": self.estimated,
        }


@dataclass(frozen=True, slots=True)
class TextChunkEvent:
    """Streamed assistant text."""

    content: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A request to run one tool. ``error`` is set when the provider's arguments were not valid
    JSON: the loop then reports that to the model as a tool error instead of guessing ``{}``."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The end of one provider response. ``finish_reason`` is ``"stop"``, ``"tool_calls"``,
    ``"length"`` (truncated) or the provider's own word."""

    usage: TokenUsage = TokenUsage()
    finish_reason: str | None = None


ProviderEvent = TextChunkEvent | ToolCallEvent | DoneEvent


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of provider-neutral history.

    ``assistant`` messages may carry ``tool_calls``; each ``tool`` message answers one call
    (``tool_call_id``, ``tool_name``) with its JSON ``tool_result``.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallEvent, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_result: Any = None
    envelope: Envelope | None = field(default=None, compare=False, repr=False)
    """What the model reads for ``tool_result``, when the tool-call pipeline made it (it is
    written once for the whole turn); a message read back from the store has none."""

    def to_dict(self) -> dict[str, Any]:
        """The message as plain data: every field but ``envelope``, which is derived from them
        (what a cassette hashes; :func:`dataclasses.asdict` would copy the envelope too)."""
        return {
            "role": self.role,
            "content": self.content,
            "tool_calls": [dataclasses.asdict(call) for call in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "tool_result": self.tool_result,
        }


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as a model is offered it."""

    name: str
    description: str
    input_schema: dict[str, Any]

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ToolDefinition:
        """From ``{name, description, input_schema}`` (what ``Project.tool_definitions`` gives)."""
        return cls(payload["name"], payload["description"], dict(payload["input_schema"]))


@dataclass(frozen=True, slots=True)
class StructuredReply:
    """One structured answer: the JSON object and the tokens its request used (the caller counts
    them per role, as the loop counts a turn's)."""

    value: dict[str, Any]
    usage: TokenUsage = TokenUsage()


@dataclass(frozen=True, slots=True)
class Transient:
    """Why a failed request may succeed when asked again (:func:`.retries.transient_failure`
    decides): ``reason`` for the log (``HTTP 429``, ``in-band overloaded_error``, ``connection
    error``), ``status`` the HTTP status (or the one an in-band error stands for; ``None`` for a
    connection error) and ``retry_after`` the seconds the vendor asked to wait, when it said."""

    reason: str
    status: int | None = None
    retry_after: float | None = None


class ProviderError(Exception):
    """A provider request failed (HTTP error, refusal, broken stream). The message stays
    server-side; clients see only ``provider_failed``. ``transient`` is set by an adapter when
    the failure may pass (a 429, a 5xx, a dropped connection); ``None`` means asking again would
    fail the same way."""

    public_code = "provider_failed"

    def __init__(self, *args: object, transient: Transient | None = None) -> None:
        super().__init__(*args)
        self.transient = transient


class ProviderCompletionError(ProviderError):
    """A stream broke the protocol: no Done, events after Done, or an unknown event."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


class MissingExtraError(ImportError):
    """The provider's SDK is not installed; the message says which extra to install."""

    def __init__(self, provider: str, extra: str) -> None:
        super().__init__(f'The {provider} provider needs its SDK: pip install "gmchat_nb[{extra}]"')
        self.extra = extra


class BaseLLMProvider(ABC):
    """A streaming, tool-calling model.

    Subclasses set ``name`` (and ``required_extra`` when they need an SDK) and implement
    :meth:`complete`. ``timeout_seconds`` (first event, default 60) and
    ``stream_timeout_seconds`` (between events, default 30) come from the provider's own config.
    """

    name: ClassVar[str] = "provider"
    required_extra: ClassVar[str | None] = None
    sdk_module: ClassVar[str | None] = None  # imported only when the provider is used
    default_config: ClassVar[Mapping[str, Any]] = types.MappingProxyType({})

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        merged = {**self.default_config, **(config or {})}
        self._config: Mapping[str, Any] = types.MappingProxyType(merged)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> BaseLLMProvider:
        """A provider built from a copy of ``config``."""
        return cls(dict(config or {}))

    @property
    def provider_config(self) -> Mapping[str, Any]:
        """The read-only configuration of this instance."""
        return self._config

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """Raise when this provider cannot work as configured (missing SDK, bad values)."""
        if cls.sdk_module and importlib.util.find_spec(cls.sdk_module) is None:
            raise MissingExtraError(cls.name, cls.required_extra or cls.name)

    @property
    def label(self) -> str:
        """``openai:gpt-4.1-mini`` style name for reports and displays."""
        model = self._config.get("model")
        return f"{self.name}:{model}" if model else self.name

    @property
    def timeout_seconds(self) -> float:
        """How long to wait for the first event of a response."""
        return float(self._config.get("timeout_seconds", 60))

    @property
    def stream_timeout_seconds(self) -> float:
        """How long to wait between later events of a response."""
        return float(self._config.get("stream_timeout_seconds", 30))

    def check_ready(self) -> None:  # noqa: B027  (an optional hook: most providers are ready)
        """Raise :class:`ProviderError` when no request could succeed as configured (missing
        credentials, say); makes no request. Lets a long run stop before its first case."""

    @abstractmethod
    def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream one response to ``messages`` with ``tools`` available."""

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """One answer to ``messages`` that is a JSON object following ``response_schema``.

        This default suits providers that only implement :meth:`complete` (custom ones): one
        request offering a single tool ``name`` whose input schema is ``response_schema``; the
        arguments of the model's call of it are the answer. A model that answers in text instead
        may give the object as JSON text (```` ```json ```` fences allowed). Anything else is a
        :class:`ProviderError` saying what came back. The vendor adapters override this with
        their native structured output. The value is not validated against the schema here: the
        caller knows what a wrong answer means for it.
        """
        tool = ToolDefinition(
            name,
            "Give your answer by calling this tool; its arguments are the answer.",
            dict(response_schema),
        )
        usage = TokenUsage()
        text: list[str] = []
        answer: ToolCallEvent | None = None
        other_calls: list[str] = []
        async for event in self.complete(messages, [tool]):
            if isinstance(event, DoneEvent):
                usage += event.usage
            elif isinstance(event, TextChunkEvent):
                text.append(event.content)
            elif isinstance(event, ToolCallEvent):
                if event.name == name and answer is None:
                    answer = event
                else:
                    other_calls.append(event.name)
        if answer is not None:
            if answer.error is not None:
                raise ProviderError(
                    f"the structured answer (a {name!r} call) is unusable: {answer.error}"
                )
            return StructuredReply(structured_object(answer.args), usage)
        said = "".join(text)
        if said.strip():
            return StructuredReply(structured_text(said), usage)
        calls = f"called {', '.join(other_calls)} instead" if other_calls else "sent nothing"
        raise ProviderError(
            f"the structured answer is missing: the model neither called {name!r} nor answered "
            f"with a JSON object, it {clip(calls)}"
        )


class WrappingProvider(BaseLLMProvider):
    """A provider that wraps another (``inner``): its label, timeouts and readiness are the
    wrapped provider's. Subclasses add what they do around its requests."""

    def __init__(self, inner: BaseLLMProvider) -> None:
        super().__init__(inner.provider_config)
        self.inner = inner

    @property
    def label(self) -> str:
        """The wrapped provider's label."""
        return self.inner.label

    @property
    def timeout_seconds(self) -> float:
        """The wrapped provider's first-event timeout."""
        return self.inner.timeout_seconds

    @property
    def stream_timeout_seconds(self) -> float:
        """The wrapped provider's between-events timeout."""
        return self.inner.stream_timeout_seconds

    def check_ready(self) -> None:
        """The wrapped provider's readiness."""
        self.inner.check_ready()


CLIP = 200
# The fewest tokens a structured answer is given whatever max_tokens says: JSON cut short is
# worthless, and a small max_tokens is meant to bound prose, not a plan or a query's arguments.
STRUCTURED_MIN_TOKENS = 256
_FENCED = re.compile(r"\A\s*```[\w-]*[ \t]*\n?(.*?)\n?[ \t]*```\s*\Z", re.DOTALL)


def clip(text: str, limit: int = CLIP) -> str:
    """``text`` cut to ``limit`` characters for an error message (a model's answer can be long)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def structured_text(text: str | None) -> dict[str, Any]:
    """The JSON object a structured answer's text holds (```` ```json ```` fences stripped).

    Text that is not JSON, or JSON that is not an object, is a :class:`ProviderError` quoting
    what came back (clipped), so a failed plan can be diagnosed from the server log.
    """
    raw = text or ""
    if not raw.strip():
        raise ProviderError("the structured answer is empty")
    fenced = _FENCED.match(raw)
    body = fenced.group(1) if fenced else raw
    try:
        decoded = json.loads(body)
    except json.JSONDecodeError as error:
        raise ProviderError(
            f"the structured answer is not JSON ({error.msg} at {error.pos}): {clip(raw)}"
        ) from None
    except RecursionError:
        raise ProviderError(
            f"the structured answer nests JSON too deeply to read: {clip(raw)}"
        ) from None
    return structured_object(decoded, raw)


def structured_object(value: Any, shown: str | None = None) -> dict[str, Any]:
    """``value`` when it is a JSON object of sane depth; else a :class:`ProviderError` quoting
    ``shown`` (what came back; by default ``value`` as JSON). Deep nesting is refused here because
    whoever walks the answer next (cleaning, storing) may recurse, and a model's answer must not
    end a turn that way."""
    if isinstance(value, dict) and not json_depth_exceeds(value):
        return value
    if shown is None:
        try:
            shown = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):
            shown = f"<{type(value).__name__}>"
    if not isinstance(value, dict):
        raise ProviderError(
            f"the structured answer is {json_kind(value)}, not a JSON object: {clip(shown)}"
        )
    raise ProviderError(
        f"the structured answer nests deeper than {MAX_JSON_DEPTH} levels: {clip(shown)}"
    )

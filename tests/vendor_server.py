"""A fake LLM vendor server for adapter tests: OpenAI, Anthropic and Ollama streaming on 127.0.0.1.

`VendorServer` is one aiohttp application that speaks the three wire formats the installed SDKs
accept, replays scripted `Reply` turns per vendor, and records every request body and header set it receives, so a test can assert what an adapter sent::

    async with VendorServer() as server:
        server.script("openai", [Reply(text=["Hel", "lo"], usage=(12, 3))])
        client = AsyncOpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0)
        ...
        assert server.requests["openai"][0]["model"] == "gpt-test"

Routes: `POST /v1/chat/completions` (openai), `POST /v1/messages` (anthropic), `POST /api/chat`
(ollama); each streams when the body asks for it (openai/anthropic: `"stream": true`; ollama:
unless `"stream": false`) and otherwise answers with one JSON document built from the same reply.

Structured output: a `Reply(structured={...})` answers a vendor's structured request — openai
`response_format` and ollama `format` get the value as the message's JSON text, anthropic's forced
`tool_choice` gets a `tool_use` block for the forced tool with the value as its `input` (and
`stop_reason: tool_use`). Any JSON value may be scripted, to test answers that are not an object.
The request bodies are recorded like any other, so a test asserts the schema went out.

Streaming event counts (what `error_after` / `stall_after` count) are the wire events in order:
openai `data:` chunks (role chunk, one per text chunk, one per tool-call start and one per argument
fragment, the finish chunk, the usage chunk when asked for, `[DONE]`); anthropic SSE events
(`message_start`, block start/deltas/stop, `message_delta`, `message_stop`); ollama NDJSON lines
(one per text chunk, one carrying all tool calls, the `done` line).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, get_args

from aiohttp import web

Vendor = Literal["openai", "anthropic", "ollama"]
Finish = Literal["stop", "tool_calls", "length"]
VENDORS: tuple[Vendor, ...] = get_args(Vendor)

_OPENAI_FINISH: dict[str, str] = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}
_ANTHROPIC_STOP: dict[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
}
_OLLAMA_DONE: dict[str, str] = {"stop": "stop", "tool_calls": "stop", "length": "length"}

# Vendor error "type" strings for an HTTP status, used in the error bodies.
_OPENAI_ERROR_TYPE: dict[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}
_ANTHROPIC_ERROR_TYPE: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass
class ToolCallSpec:
    """One tool call in a scripted reply.

    `arguments` is a dict (sent as JSON) or a raw JSON string, which may be invalid on purpose.
    `id` defaults to a deterministic `call_<n>` (openai) / `toolu_<n>` (anthropic), `n` counting the
    tool calls that vendor has served since the server was created. Ollama's wire format (and
    ollama 0.6.3's `Message.ToolCall`) has no id, so none is sent there.
    `fragments` is how many pieces the arguments JSON is streamed in (openai, anthropic).
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    fragments: int = 3

    def arguments_json(self) -> str:
        """The arguments as the JSON text streamed for openai/anthropic (raw strings verbatim)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)

    def arguments_value(self) -> Any:
        """The arguments as a JSON value (ollama, non-streaming anthropic).

        A raw string that is valid JSON is parsed; one that is not is returned as the string itself.
        """
        if not isinstance(self.arguments, str):
            return self.arguments
        try:
            return json.loads(self.arguments)
        except json.JSONDecodeError:
            return self.arguments

    def argument_pieces(self) -> list[str]:
        """The arguments JSON split into `fragments` contiguous, non-empty pieces (fewer if short)."""
        text = self.arguments_json()
        count = max(1, min(self.fragments, len(text)))
        size, extra = divmod(len(text), count)
        pieces, start = [], 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            pieces.append(text[start:end])
            start = end
        return pieces


@dataclass
class Reply:
    """One scripted provider response, vendor-neutral.

    - `text`: the text, or the chunks to stream it in.
    - `tool_calls`: tool calls after the text.
    - `finish`: "stop", "tool_calls" or "length" (truncated); None (the default) means "tool_calls"
      when there are tool calls, else "stop". Mapped to openai `finish_reason` stop/tool_calls/length,
      anthropic `stop_reason` end_turn/tool_use/max_tokens, ollama `done_reason` stop/stop/length.
    - `usage`: (input_tokens, output_tokens) as the vendor's wire counts them. openai:
      `prompt_tokens` (cached tokens included) / `completion_tokens` in a usage chunk
      (`choices: []`), only when the request asked `stream_options.include_usage` (always in
      non-streaming answers); anthropic: `input_tokens` (the uncached part only) in
      `message_start` and `output_tokens` in `message_delta`; ollama: `prompt_eval_count` /
      `eval_count` on the done line.
    - `cache_read`, `cache_write`, `reasoning`: the cache and reasoning counts, each sent only when
      not 0 (so answers without them stay as they were). openai: `prompt_tokens_details`'
      `cached_tokens` / `cache_write_tokens`, `completion_tokens_details.reasoning_tokens`;
      anthropic: `cache_read_input_tokens` / `cache_creation_input_tokens` (`message_start` and
      whole answers), `output_tokens_details.thinking_tokens` (`message_delta` and whole answers).
      Ollama's wire has none of them.
    - `usage_fields`: keys set verbatim in the usage the vendor sends, after everything above (a
      None value is sent as null): openai's `usage` object, anthropic's `message_start` usage and
      a whole answer's `usage`, ollama's done line (e.g. `{"prompt_tokens_details": None}`).
    - `delta_usage`: anthropic only: keys set verbatim in `message_delta`'s usage (newer APIs
      repeat the cumulative input and cache counts there).
    - `no_usage`: report no usage at all: openai sends no usage chunk (even when asked) and no
      `usage` in a whole answer; anthropic leaves `usage` out of `message_start`,
      `message_delta` and whole answers; ollama's done line has no counts.
    - `error_after`: send this many stream events, then a vendor error mid-stream and end the body.
      Non-streaming requests get an HTTP 500 in the vendor's error shape instead.
    - `cut_after`: send this many stream events, then drop the connection without ending the body
      (a proxy or a network that cut the answer off: the SDK sees an incomplete chunked body).
    - `stall_after`: send this many stream events, then hang without closing until the server stops.
      Non-streaming requests never get an answer (until the server stops).
    - `status`: answer with this HTTP error status and the vendor's error JSON instead of a stream.
    - `delay`: seconds to wait before sending the response headers (cut short by `stop()`).
    - `pace`: seconds to wait between stream events (a slow local server's steady trickle).
    - `error_message`: the message put in scripted errors (mid-stream and HTTP).
    - `error_type`: the type of the mid-stream (in-band) error `error_after` sends: anthropic's SSE
      `error` event (default `overloaded_error`), openai's error chunk (default `server_error`);
      ollama's error line has no type. With `status`, openai's error JSON carries it as its
      `type` and `code` (e.g. `insufficient_quota` on a 429).
    - `headers`: extra response headers of an HTTP error answer (`status`), e.g. `Retry-After`.
    - `structured`: a structured answer (normally a dict; any JSON value). Sent as the JSON text
      of the message (openai, ollama; also anthropic when streaming), or as the `tool_use` input of
      the tool a non-streaming anthropic request forces with `tool_choice`. None: not structured.
    """

    text: str | list[str] = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    finish: Finish | None = None
    usage: tuple[int, int] = (0, 0)
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    usage_fields: dict[str, Any] = field(default_factory=dict)
    delta_usage: dict[str, Any] = field(default_factory=dict)
    no_usage: bool = False
    error_after: int | None = None
    cut_after: int | None = None
    stall_after: int | None = None
    status: int = 200
    delay: float = 0.0
    pace: float = 0.0
    error_message: str = "scripted error"
    structured: Any = None
    error_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.structured is not None and (self.text or self.tool_calls):
            raise ValueError("a structured reply has no text or tool calls of its own")
        if self.finish is None:
            self.finish = "tool_calls" if self.tool_calls else "stop"
        if self.finish not in get_args(Finish):
            raise ValueError(f"finish must be one of {get_args(Finish)}, not {self.finish!r}")

    @property
    def chunks(self) -> list[str]:
        """The text chunks to stream (empty chunks dropped); a structured answer as JSON text."""
        if self.structured is not None:
            return [json.dumps(self.structured)]
        chunks = [self.text] if isinstance(self.text, str) else list(self.text)
        return [chunk for chunk in chunks if chunk]

    @property
    def full_text(self) -> str:
        """The whole text."""
        return "".join(self.chunks)

    @property
    def finish_reason(self) -> Finish:
        """The vendor-neutral finish (never None after construction)."""
        return self.finish or "stop"


Event = bytes


class VendorServer:
    """An aiohttp server on 127.0.0.1 (port 0) speaking the openai, anthropic and ollama formats.

    Use `async with VendorServer() as server:` or `await start()` / `await stop()`.
    `script(vendor, replies)` queues replies, served one per request in order; a request with no
    reply left gets HTTP 500 with a clear error body. `requests[vendor]` holds the JSON bodies
    received and `headers[vendor]` the request headers (keys lower-cased), in order.
    """

    def __init__(self) -> None:
        self.requests: dict[str, list[dict[str, Any]]] = {vendor: [] for vendor in VENDORS}
        self.headers: dict[str, list[dict[str, str]]] = {vendor: [] for vendor in VENDORS}
        self._scripts: dict[str, list[Reply]] = {vendor: [] for vendor in VENDORS}
        self._tool_ids: dict[str, itertools.count[int]] = {
            vendor: itertools.count(1) for vendor in VENDORS
        }
        self._message_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._closing = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1 on a free port."""
        if self._runner is not None:
            raise RuntimeError("VendorServer already started")
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/api/chat", self._ollama)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        port = runner.addresses[0][1]
        self._url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        """Release stalled and delayed responses and shut the server down."""
        self._closing.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- public API ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (after `start()`)."""
        if self._url is None:
            raise RuntimeError("VendorServer not started")
        return self._url

    @property
    def openai_base_url(self) -> str:
        """The `base_url` for `openai.AsyncOpenAI`."""
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The `base_url` for `anthropic.AsyncAnthropic`."""
        return self.url

    @property
    def ollama_host(self) -> str:
        """The `host` for `ollama.AsyncClient`."""
        return self.url

    def script(self, vendor: Vendor, replies: list[Reply]) -> None:
        """Queue `replies` for `vendor`, served one per request in order (after any still queued)."""
        if vendor not in VENDORS:
            raise ValueError(f"unknown vendor {vendor!r}; expected one of {VENDORS}")
        self._scripts[vendor].extend(replies)

    def remaining(self, vendor: Vendor) -> int:
        """How many scripted replies `vendor` has not served yet."""
        return len(self._scripts[vendor])

    def reset(self) -> None:
        """Forget queued replies and recorded requests/headers (tool-call id counters go on)."""
        for vendor in VENDORS:
            self._scripts[vendor].clear()
            self.requests[vendor].clear()
            self.headers[vendor].clear()

    # -- shared request handling -----------------------------------------------------------------

    async def _take(
        self, vendor: Vendor, request: web.Request
    ) -> tuple[dict[str, Any], Reply] | web.Response:
        """Record the request and pop its reply, or the error response to answer with."""
        self.headers[vendor].append({k.lower(): v for k, v in request.headers.items()})
        raw = await request.text()
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self.requests[vendor].append({"_invalid_json": raw})
            return self._error_response(vendor, 400, "VendorServer: request body is not JSON")
        if not isinstance(body, dict):
            self.requests[vendor].append({"_invalid_json": raw})
            return self._error_response(vendor, 400, "VendorServer: request body is not an object")
        self.requests[vendor].append(body)
        if not self._scripts[vendor]:
            number = len(self.requests[vendor])
            return self._error_response(
                vendor,
                500,
                f"VendorServer: no scripted reply left for {vendor} (request #{number}); "
                f"call server.script({vendor!r}, [...]) first",
            )
        return body, self._scripts[vendor].pop(0)

    def _error_body(
        self, vendor: Vendor, status: int, message: str, kind: str | None = None
    ) -> dict[str, Any]:
        if vendor == "openai":  # ``kind`` (e.g. insufficient_quota) is then its type and code
            return {
                "error": {
                    "message": message,
                    "type": kind or _OPENAI_ERROR_TYPE.get(status, "server_error"),
                    "param": None,
                    "code": kind,
                }
            }
        if vendor == "anthropic":
            kind = _ANTHROPIC_ERROR_TYPE.get(status, "api_error")
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": message}

    def _error_response(
        self,
        vendor: Vendor,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        kind: str | None = None,
    ) -> web.Response:
        body = self._error_body(vendor, status, message, kind)
        return web.json_response(body, status=status, headers=headers or None)

    async def _wait_closing(self, timeout: float | None = None) -> bool:
        """Wait until the server stops (True) or `timeout` passes (False)."""
        try:
            await asyncio.wait_for(self._closing.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def _serve(
        self,
        vendor: Vendor,
        request: web.Request,
        build_events: Callable[[dict[str, Any], Reply], list[Event]],
        build_document: Callable[[dict[str, Any], Reply], dict[str, Any]],
        error_event: Callable[[Reply], Event],
        streaming: Callable[[dict[str, Any]], bool],
        content_type: str,
    ) -> web.StreamResponse:
        taken = await self._take(vendor, request)
        if isinstance(taken, web.Response):
            return taken
        body, reply = taken
        if reply.delay > 0 and await self._wait_closing(reply.delay):
            return web.Response(status=503, text="VendorServer stopped")
        if reply.status != 200:
            return self._error_response(
                vendor, reply.status, reply.error_message, reply.headers, kind=reply.error_type
            )
        if not streaming(body):
            if reply.stall_after is not None:
                await self._wait_closing()
                return web.Response(status=503, text="VendorServer stopped")
            if reply.error_after is not None:
                return self._error_response(vendor, 500, reply.error_message)
            return web.json_response(build_document(body, reply))

        events = build_events(body, reply)
        cut = len(events)
        if reply.error_after is not None:
            cut = min(cut, reply.error_after)
        if reply.stall_after is not None:
            cut = min(cut, reply.stall_after)
        if reply.cut_after is not None:
            cut = min(cut, reply.cut_after)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": content_type, "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        try:
            for number, event in enumerate(events[:cut]):
                if reply.pace and number and await self._wait_closing(reply.pace):
                    return response
                await response.write(event)  # each write goes to the socket: the stream streams
            if reply.cut_after is not None and reply.cut_after <= len(events):
                if request.transport is not None:
                    request.transport.abort()  # no final chunk: the body is incomplete
                return response
            if reply.error_after is not None and (
                reply.stall_after is None or reply.error_after <= reply.stall_after
            ):
                await response.write(error_event(reply))
            elif reply.stall_after is not None:
                await self._wait_closing()
                return response
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass  # the client went away (e.g. a test stopped reading): nothing to finish
        return response

    def _next_tool_id(self, vendor: Vendor, prefix: str) -> str:
        return f"{prefix}{next(self._tool_ids[vendor])}"

    # -- openai ----------------------------------------------------------------------------------

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(
            "openai",
            request,
            self._openai_events,
            self._openai_document,
            self._openai_stream_error,
            lambda body: bool(body.get("stream")),
            "text/event-stream; charset=utf-8",
        )

    def _openai_stream_error(self, reply: Reply) -> Event:
        body = self._error_body("openai", 500, reply.error_message)
        if reply.error_type is not None:
            body["error"]["type"] = reply.error_type
        return _sse(body)

    def _openai_ids(self, reply: Reply) -> list[str]:
        return [call.id or self._next_tool_id("openai", "call_") for call in reply.tool_calls]

    def _openai_events(self, body: dict[str, Any], reply: Reply) -> list[Event]:
        head = {
            "id": f"chatcmpl-{next(self._message_ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return _sse({**head, "choices": [choice]})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": text}) for text in reply.chunks]
        for index, (call, call_id) in enumerate(
            zip(reply.tool_calls, self._openai_ids(reply), strict=True)
        ):
            start = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(chunk({"tool_calls": [start]}))
            for piece in call.argument_pieces():
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, _OPENAI_FINISH[reply.finish_reason]))
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage") and not reply.no_usage:
            events.append(_sse({**head, "choices": [], "usage": _openai_usage(reply)}))
        events.append(b"data: [DONE]\n\n")
        return events

    def _openai_document(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.full_text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call, call_id in zip(reply.tool_calls, self._openai_ids(reply), strict=True)
            ]
        document = {
            "id": f"chatcmpl-{next(self._message_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _OPENAI_FINISH[reply.finish_reason],
                }
            ],
        }
        if not reply.no_usage:
            document["usage"] = _openai_usage(reply)
        return document

    # -- anthropic -------------------------------------------------------------------------------

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(
            "anthropic",
            request,
            self._anthropic_events,
            self._anthropic_document,
            lambda reply: _sse(self._overloaded(reply), event="error"),
            lambda body: bool(body.get("stream")),
            "text/event-stream; charset=utf-8",
        )

    @staticmethod
    def _overloaded(reply: Reply) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {
                "type": reply.error_type or "overloaded_error",
                "message": reply.error_message,
            },
        }

    def _anthropic_ids(self, reply: Reply) -> list[str]:
        return [call.id or self._next_tool_id("anthropic", "toolu_") for call in reply.tool_calls]

    def _anthropic_events(self, body: dict[str, Any], reply: Reply) -> list[Event]:
        def event(kind: str, **data: Any) -> Event:
            return _sse({"type": kind, **data}, event=kind)

        message = {
            "id": f"msg_{next(self._message_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
        }
        if not reply.no_usage:
            message["usage"] = _anthropic_usage(reply, output=0, details=False)
        events = [event("message_start", message=message)]
        index = 0
        if reply.chunks or not reply.tool_calls:
            events.append(
                event("content_block_start", index=0, content_block={"type": "text", "text": ""})
            )
            for text in reply.chunks:
                events.append(
                    event(
                        "content_block_delta", index=0, delta={"type": "text_delta", "text": text}
                    )
                )
            events.append(event("content_block_stop", index=0))
            index = 1
        for call, call_id in zip(reply.tool_calls, self._anthropic_ids(reply), strict=True):
            block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
            events.append(event("content_block_start", index=index, content_block=block))
            for piece in call.argument_pieces():
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(event("content_block_delta", index=index, delta=delta))
            events.append(event("content_block_stop", index=index))
            index += 1
        ending: dict[str, Any] = {
            "delta": {"stop_reason": _ANTHROPIC_STOP[reply.finish_reason], "stop_sequence": None}
        }
        if not reply.no_usage:
            usage: dict[str, Any] = {"output_tokens": reply.usage[1]}
            if reply.reasoning:
                usage["output_tokens_details"] = {"thinking_tokens": reply.reasoning}
            ending["usage"] = {**usage, **reply.delta_usage}
        events.append(event("message_delta", **ending))
        events.append(event("message_stop"))
        return events

    def _anthropic_document(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        forced = body.get("tool_choice")
        if reply.structured is not None and isinstance(forced, dict) and forced.get("name"):
            return self._anthropic_forced(body, reply, str(forced["name"]))
        content: list[dict[str, Any]] = []
        if reply.chunks or not reply.tool_calls:
            content.append({"type": "text", "text": reply.full_text})
        for call, call_id in zip(reply.tool_calls, self._anthropic_ids(reply), strict=True):
            content.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": call.name,
                    "input": call.arguments_value(),
                }
            )
        return self._anthropic_message(body, reply, content, _ANTHROPIC_STOP[reply.finish_reason])

    def _anthropic_message(
        self, body: dict[str, Any], reply: Reply, content: list[dict[str, Any]], stop: str
    ) -> dict[str, Any]:
        """A whole (non-streamed) message, with its usage unless the reply reports none."""
        message = {
            "id": f"msg_{next(self._message_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
        }
        if not reply.no_usage:
            message["usage"] = _anthropic_usage(reply, output=reply.usage[1], details=True)
        return message

    def _anthropic_forced(self, body: dict[str, Any], reply: Reply, name: str) -> dict[str, Any]:
        """The answer to a forced tool: one `tool_use` block of that tool, as the API sends it
        (`stop_reason: tool_use`, unless the reply scripts a truncation)."""
        block = {
            "type": "tool_use",
            "id": self._next_tool_id("anthropic", "toolu_"),
            "name": name,
            "input": reply.structured,
        }
        stop = "max_tokens" if reply.finish_reason == "length" else "tool_use"
        return self._anthropic_message(body, reply, [block], stop)

    # -- ollama ----------------------------------------------------------------------------------

    async def _ollama(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(
            "ollama",
            request,
            self._ollama_events,
            self._ollama_document,
            lambda reply: _ndjson({"error": reply.error_message}),
            lambda body: body.get("stream", True) is not False,  # ollama streams by default
            "application/x-ndjson",
        )

    @staticmethod
    def _ollama_calls(reply: Reply) -> list[dict[str, Any]]:
        return [
            {"function": {"name": call.name, "arguments": call.arguments_value()}}
            for call in reply.tool_calls
        ]

    @staticmethod
    def _ollama_line(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": body.get("model", "unknown"),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
            "message": {"role": "assistant", **message},
            "done": False,
        }

    @staticmethod
    def _ollama_done(reply: Reply) -> dict[str, Any]:
        done: dict[str, Any] = {
            "done": True,
            "done_reason": _OLLAMA_DONE[reply.finish_reason],
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": reply.usage[0],
            "prompt_eval_duration": 1_000,
            "eval_count": reply.usage[1],
            "eval_duration": 1_000,
        }
        if reply.no_usage:
            del done["prompt_eval_count"], done["eval_count"]
            return done
        return {**done, **reply.usage_fields}

    def _ollama_events(self, body: dict[str, Any], reply: Reply) -> list[Event]:
        events = [_ndjson(self._ollama_line(body, {"content": text})) for text in reply.chunks]
        if reply.tool_calls:
            message = {"content": "", "tool_calls": self._ollama_calls(reply)}
            events.append(_ndjson(self._ollama_line(body, message)))
        last = {**self._ollama_line(body, {"content": ""}), **self._ollama_done(reply)}
        events.append(_ndjson(last))
        return events

    def _ollama_document(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"content": reply.full_text}
        if reply.tool_calls:
            message["tool_calls"] = self._ollama_calls(reply)
        return {**self._ollama_line(body, message), **self._ollama_done(reply)}


def _openai_usage(reply: Reply) -> dict[str, Any]:
    prompt, completion = reply.usage
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    cached = {
        name: count
        for name, count in (
            ("cached_tokens", reply.cache_read),
            ("cache_write_tokens", reply.cache_write),
        )
        if count
    }
    if cached:
        usage["prompt_tokens_details"] = cached
    if reply.reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning}
    return {**usage, **reply.usage_fields}


def _anthropic_usage(reply: Reply, *, output: int, details: bool) -> dict[str, Any]:
    """Anthropic's usage object: `input_tokens` is the uncached part; the cache counts when set;
    the thinking tokens (`details`: a whole answer's usage) when set."""
    usage: dict[str, Any] = {"input_tokens": reply.usage[0], "output_tokens": output}
    if reply.cache_read:
        usage["cache_read_input_tokens"] = reply.cache_read
    if reply.cache_write:
        usage["cache_creation_input_tokens"] = reply.cache_write
    if details and reply.reasoning:
        usage["output_tokens_details"] = {"thinking_tokens": reply.reasoning}
    return {**usage, **reply.usage_fields}


def _sse(data: dict[str, Any], event: str | None = None) -> Event:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _ndjson(data: dict[str, Any]) -> Event:
    return (json.dumps(data) + "\n").encode()

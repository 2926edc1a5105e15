"""``gmchat doctor``: what a provider (a local server above all) can do, found out in seconds.

Servers that call themselves OpenAI-compatible differ exactly where the tool loop needs them:
some drop the tools unless ``tool_choice`` is sent, some refuse a streamed ``tool_choice``, some
reject the history of a tool round, some never report usage, some reject ``response_format``.
Each probe here is one small real request through the provider's own adapter, as a turn makes
them, and reports what came back with a hint at the setting that fixes it:

1. ``text`` -- a streamed answer (how many chunks, time to the first one);
2. ``tool call`` -- one tool offered and asked for: does a call come back, with usable arguments;
3. ``tool history`` -- a second round carrying an assistant tool call and its result;
4. ``usage`` -- whether any request reported token counts;
5. ``structured`` -- ``complete_structured`` with a one-field schema.

A probe that fails does not stop the others. The result is ``ok`` when a turn can work: text,
tool call and tool history passed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    clip,
)
from .completion import completed_events

__all__ = ["Diagnosis", "Probe", "diagnose", "format_diagnosis"]

ESSENTIAL = ("text", "tool call", "tool history")
ECHO = ToolDefinition(
    "echo",
    "Repeat a word back. Call this tool when asked to echo something.",
    {
        "type": "object",
        "properties": {"word": {"type": "string", "description": "the word to repeat"}},
        "required": ["word"],
    },
)
ASK_FOR_CALL = 'Call the echo tool with the word "ping". Do not write anything else.'
BAD_ARGS = (
    "the server showed the tools and parsed a call, but the model wrote arguments that are not "
    "JSON: a small model needs provider_config constrained: true (typed steps under a grammar)"
)
HINTS = {
    "tool call": (
        "no tool call came back: the server may not show the tools to the model. Try "
        "provider_config tool_choice: auto (llama-cpp-python's server drops tools without it) "
        "and stream: false (it refuses a streamed tool_choice: auto); llama-cpp-python's server "
        "parses calls only with --chat_format chatml-function-calling; llama-server needs --jinja."
    ),
    "tool history": (
        "the server rejected a round that carries a tool call and its result: the tool loop "
        "cannot get past its first call."
    ),
    "usage": "the server reports no token counts: usage and token budgets will read 0.",
    "structured": (
        "structured answers (planned orchestration's planner) failed: try provider_config "
        "structured_output: json_object, tool or prompt."
    ),
}


@dataclass
class Probe:
    """One probe: its name, whether it passed, what came back and how long it took."""

    name: str
    passed: bool
    detail: str
    seconds: float = 0.0


@dataclass
class Diagnosis:
    """Every probe of one provider, and whether a chat turn can work with it."""

    provider: str
    probes: list[Probe] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        passed = {probe.name for probe in self.probes if probe.passed}
        return all(name in passed for name in ESSENTIAL)


@dataclass
class _Round:
    text: str = ""
    chunks: int = 0
    calls: list[ToolCallEvent] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish: str | None = None
    first_chunk: float | None = None


async def _round(
    provider: BaseLLMProvider, messages: list[Message], tools: list[ToolDefinition]
) -> _Round:
    started = time.perf_counter()
    result = _Round()
    async for event in completed_events(provider, provider.complete(messages, tools)):
        if isinstance(event, TextChunkEvent):
            result.chunks += 1
            result.text += event.content
            if result.first_chunk is None:
                result.first_chunk = time.perf_counter() - started
        elif isinstance(event, ToolCallEvent):
            result.calls.append(event)
        elif isinstance(event, DoneEvent):
            result.usage = event.usage
            result.finish = event.finish_reason
    return result


async def _timed(name: str, timeout: float, probe: Any) -> tuple[Probe, Any]:
    """Run ``probe`` (a coroutine returning ``(passed, detail, value)``) within ``timeout``."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            passed, detail, value = await probe
    except TimeoutError as error:
        passed, detail, value = (
            False,
            f"no answer within {timeout:g} s ({error or 'timeout'})",
            None,
        )
    except Exception as error:  # a probe reports every failure, whatever the adapter raised
        passed, detail, value = False, f"{type(error).__name__}: {clip(str(error))}", None
    if not passed and name in HINTS and " -- " not in detail:
        detail = f"{detail} -- {HINTS[name]}"
    return Probe(name, passed, detail, time.perf_counter() - started), value


async def diagnose(provider: BaseLLMProvider, *, timeout: float = 30) -> Diagnosis:
    """Probe ``provider`` with the requests a chat turn makes (see the module docstring)."""
    diagnosis = Diagnosis(getattr(provider, "label", type(provider).__name__))
    usages: list[TokenUsage] = []

    async def text() -> tuple[bool, str, None]:
        answer = await _round(provider, [Message("user", "Say hello in one short sentence.")], [])
        usages.append(answer.usage)
        first = f"{answer.first_chunk:.2f} s" if answer.first_chunk is not None else "-"
        detail = (
            f"{answer.chunks} chunk(s), first after {first}, finish {answer.finish}: "
            f"{clip(answer.text.strip(), 60)!r}"
        )
        return bool(answer.text.strip()), detail, None

    async def call() -> tuple[bool, str, ToolCallEvent | None]:
        answer = await _round(provider, [Message("user", ASK_FOR_CALL)], [ECHO])
        usages.append(answer.usage)
        if not answer.calls:
            return False, f"answered in text instead: {clip(answer.text.strip(), 60)!r}", None
        first = answer.calls[0]
        if first.error is not None:
            detail = f"{first.name} called with unusable arguments: {first.error} -- {BAD_ARGS}"
            return False, detail, None
        return True, f"{first.name}({clip(str(first.args), 60)})", first

    async def history(made: ToolCallEvent | None) -> tuple[bool, str, None]:
        made = made or ToolCallEvent("call_1", "echo", {"word": "ping"})
        messages = [
            Message("user", ASK_FOR_CALL),
            Message("assistant", "", tool_calls=(made,)),
            Message(
                "tool", tool_call_id=made.id, tool_name=made.name, tool_result={"echo": "ping"}
            ),
            Message("user", "What did the tool return? Answer in a few words."),
        ]
        answer = await _round(provider, messages, [ECHO])
        usages.append(answer.usage)
        said = clip(answer.text.strip(), 60) or f"{len(answer.calls)} more call(s)"
        return bool(answer.text.strip() or answer.calls), f"answered: {said!r}", None

    async def structured() -> tuple[bool, str, None]:
        schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {"color": {"type": "string"}},
            "required": ["color"],
        }
        reply = await provider.complete_structured(
            [Message("user", 'Give a JSON object with one key "color": a color name.')],
            schema,
            name="answer",
        )
        usages.append(reply.usage)
        ok = isinstance(reply.value.get("color"), str)
        return ok, f"{clip(str(reply.value), 60)}", None

    probe, _ = await _timed("text", timeout, text())
    diagnosis.probes.append(probe)
    probe, made = await _timed("tool call", timeout, call())
    diagnosis.probes.append(probe)
    probe, _ = await _timed("tool history", timeout, history(made))
    diagnosis.probes.append(probe)
    reported = [u for u in usages if u.input_tokens or u.output_tokens]
    diagnosis.probes.append(
        Probe(
            "usage",
            bool(reported),
            f"{len(reported)} of {len(usages)} request(s) reported tokens"
            + ("" if reported else f" -- {HINTS['usage']}"),
        )
    )
    probe, _ = await _timed("structured", timeout, structured())
    diagnosis.probes.append(probe)
    return diagnosis


def format_diagnosis(diagnosis: Diagnosis) -> str:
    """The probes as a plain table, then the verdict."""
    lines = [f"gmchat doctor: {diagnosis.provider}", ""]
    width = max(len(probe.name) for probe in diagnosis.probes)
    for probe in diagnosis.probes:
        mark = "ok  " if probe.passed else "FAIL"
        lines.append(f"{mark} {probe.name:<{width}}  {probe.seconds:5.1f} s  {probe.detail}")
    lines.append("")
    lines.append(
        "A chat turn can work with this provider."
        if diagnosis.ok
        else "A chat turn cannot work with this provider as configured (see FAIL above)."
    )
    return "\n".join(lines)

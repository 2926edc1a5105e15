"""IPython magics: ``%load_ext gmchat_nb`` registers ``%%gmchat`` and ``%gmchat config``.

``%%gmchat`` takes the cell body as the question, streams the answer below the cell (tool steps,
then the text) and binds the turn's DataFrames to ``_gm`` (a list, newest last) when it ends.
``%gmchat config`` shows the settings; ``%gmchat config key=value ...`` changes them (values are
read as YAML: ``max_results=50``, ``provider=openai:gpt-4.1-mini``).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import yaml
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import Markdown, display

from ..chat import Chat, Turn
from ..core.events import ChatEvent, Error, Notice, StreamReset, TextChunk, ToolCall, ToolResult

__all__ = ["GmchatMagics", "load_ipython_extension"]

UPDATE_SECONDS = 0.1


@magics_class
class GmchatMagics(Magics):
    """The ``%gmchat`` / ``%%gmchat`` magics; one chat per kernel, made on first use."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.overrides: dict[str, Any] = {}
        self.chat: Chat | None = None
        self.tasks: set[asyncio.Task[Any]] = set()

    def _chat(self) -> Chat:
        if self.chat is None:
            self.chat = Chat(**self.overrides)
        return self.chat

    @line_magic("gmchat")  # type: ignore[arg-type]
    def gmchat_line(self, line: str) -> None:
        """``%gmchat config [key=value ...]``."""
        words = line.split()
        if not words or words[0] != "config":
            print("usage: %gmchat config [key=value ...]   |   %%gmchat (cell: the question)")
            return
        changes: dict[str, Any] = {}
        for word in words[1:]:
            key, found, value = word.partition("=")
            if not found:
                print(f"%gmchat config: {word!r} is not key=value")
                return
            parsed = yaml.safe_load(value)
            # ":memory:" reads as a YAML mapping; anything but a plain value stays text.
            changes[key] = value if isinstance(parsed, dict) else parsed
        if changes:
            from ..core.settings import load_settings

            candidate = {**self.overrides, **changes}
            load_settings(**candidate)  # a bad key or value raises ChatConfigurationError here
            self.overrides = candidate
            self.chat = None  # the next question uses the new settings
        settings = self._chat().settings
        print(json.dumps(_masked(settings.to_dict()), indent=2, default=str))

    @cell_magic("gmchat")  # type: ignore[arg-type]
    def gmchat_cell(self, line: str, cell: str) -> None:
        """Ask the cell's text; the answer streams below; frames land in ``_gm``."""
        question = cell.strip()
        chat = self._chat()
        handle = display(Markdown("…"), display_id=True)
        run = self._run(chat, question, handle)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(run)  # a plain IPython terminal: answer before returning
            return
        task = loop.create_task(run)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, chat: Chat, question: str, handle: Any) -> Turn:
        steps: list[str] = []
        answer = ""
        shown = 0.0
        async for event in chat.stream(question):
            if isinstance(event, TextChunk):
                answer += event.content
            else:
                steps.append(_step(event))
            if isinstance(event, StreamReset):  # the broken answer is withdrawn
                answer = chat.turns[-1].answer if chat.turns else ""
            if not isinstance(event, TextChunk) or time.monotonic() - shown >= UPDATE_SECONDS:
                handle.update(Markdown(_render(steps, answer)))
                shown = time.monotonic()
        turn = chat.turns[-1]
        if self.shell is not None:
            self.shell.user_ns["_gm"] = turn.frames
        note = f"\n\n`_gm` holds {len(turn.frames)} DataFrame(s)." if turn.frames else ""
        handle.update(Markdown(_render(steps, answer) + note))
        return turn


def _step(event: ChatEvent) -> str:
    if isinstance(event, ToolCall):
        return f"→ `{event.name}` {json.dumps(event.args, ensure_ascii=False)[:120]}"
    if isinstance(event, ToolResult):
        result = event.result
        if isinstance(result, dict) and result.get("status") == "error":
            return f"  ✗ {result.get('code')}: {result.get('message')}"
        if event.frame is not None:
            return f"  {event.frame['rows']} row(s)"
        return "  ok"
    if isinstance(event, Error):
        return f"**{event.message}** (`{event.code}`)"
    if isinstance(event, StreamReset):
        return f"↺ an answer broke off ({event.reason}) and was withdrawn"
    if isinstance(event, Notice):
        return f"· {event.message}"
    return ""


def _render(steps: list[str], answer: str) -> str:
    tools = "\n".join(f"- {step.strip()}" for step in steps if step.strip())
    return (tools + "\n\n" if tools else "") + (answer or "…")


def _masked(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings for display: credentials in provider_config and headers hidden."""
    shown = dict(settings)
    for key in ("provider_config", "headers"):
        value = shown.get(key)
        if isinstance(value, dict):
            shown[key] = {
                name: "***"
                if any(
                    word in name.lower()
                    for word in ("key", "token", "secret", "authorization", "password")
                )
                else item
                for name, item in value.items()
            }
    return shown


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gmchat_nb``."""
    ipython.register_magics(GmchatMagics(ipython))

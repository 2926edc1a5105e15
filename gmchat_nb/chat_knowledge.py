"""``Chat.knowledge``: the notebook's way to what the assistant knows of its project.

Every method goes to the session's :class:`~gmchat_nb.core.knowledge.KnowledgeBook` (the same
one the widget, the server and ``gmchat knowledge`` use), as the chat's user. They are async, as
everything of :class:`~gmchat_nb.Chat` that needs the project connected::

    await chat.knowledge.add_definition("active project", "status active or planned")
    await chat.knowledge.save_turn(chat.turns[-1], name="titanium parts")
    await chat.knowledge.list()
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from .core.knowledge import Draft, ImportReport, KnowledgeBook, KnowledgeRecord, StaleEntry
from .core.knowledge.from_turn import turn_calls
from .core.knowledge.suggestions import suggest_turn
from .core.knowledge.yaml_io import dump, read, read_file
from .core.session import ChatSession

__all__ = ["AnsweredTurn", "ChatKnowledge"]


class _Chat(Protocol):
    """What of :class:`~gmchat_nb.Chat` the knowledge needs: its session."""

    async def session(self) -> ChatSession: ...


class AnsweredTurn(Protocol):
    """What of a :class:`~gmchat_nb.Turn` a save reads: its question and events."""

    # (read-only members: a Turn's ``events`` is a list of dicts, which a mutable
    # ``Sequence[Mapping]`` attribute would not accept)
    @property
    def question(self) -> str: ...
    @property
    def events(self) -> Sequence[Mapping[str, Any]]: ...


class ChatKnowledge:
    """One chat's view of its project's knowledge (see the module)."""

    def __init__(self, chat: _Chat) -> None:
        self._chat = chat

    async def book(self) -> KnowledgeBook:
        """The session's knowledge book (the project connected on first use)."""
        return (await self._chat.session()).knowledge

    async def add_verified_query(
        self,
        name: str,
        question: str,
        calls: builtins.list[dict[str, Any]],
        *,
        scope: str = "shared",
        confirm_flagged: bool = False,
    ) -> KnowledgeRecord:
        """Save ``calls`` (``[{"tool": "query", "arguments": {...}}]``) as answering ``question``."""
        return (await self.book()).add_verified_query(
            name, question, calls, scope=scope, confirm_flagged=confirm_flagged
        )

    async def save_turn(
        self,
        turn: AnsweredTurn,
        *,
        name: str,
        question: str | None = None,
        scope: str = "shared",
        confirm_flagged: bool = False,
    ) -> KnowledgeRecord:
        """Save a finished turn's queries (and chart) as a verified query: **Save as verified
        query**. ``question`` defaults to what was asked."""
        calls = turn_calls(turn.events)
        return await self.add_verified_query(
            name,
            turn.question if question is None else question,
            calls,
            scope=scope,
            confirm_flagged=confirm_flagged,
        )

    async def add_definition(
        self, term: str, text: str, *, confirm_flagged: bool = False
    ) -> KnowledgeRecord:
        """Add a term of the project's vocabulary (shared with the project)."""
        return (await self.book()).add_definition(term, text, confirm_flagged=confirm_flagged)

    async def add_note(self, text: str, *, confirm_flagged: bool = False) -> KnowledgeRecord:
        """Add a personal note (recalled only for this user)."""
        return (await self.book()).add_note(text, confirm_flagged=confirm_flagged)

    async def suggest(self, draft: Draft) -> KnowledgeRecord:
        """Queue a suggestion (never recalled until a person accepts it)."""
        return (await self.book()).suggest(draft)

    async def mark_right(self, turn: AnsweredTurn) -> KnowledgeRecord:
        """The user says this turn's answer is right: its queries become a *suggested* verified
        query, waiting for a person to accept it (``accept``) before it is ever recalled."""
        return suggest_turn(await self.book(), turn.events, turn.question)

    async def accept(self, entry_id: str, *, scope: str | None = None) -> KnowledgeRecord:
        """Accept a suggestion: it becomes active."""
        return (await self.book()).accept(entry_id, scope=scope)

    async def list(
        self, *, kind: str | None = None, status: str | None = None, search: str | None = None
    ) -> builtins.list[KnowledgeRecord]:
        """The entries this user may see, oldest first."""
        return (await self.book()).list(kind=kind, status=status, search=search)

    async def get(self, entry_id: str) -> KnowledgeRecord:
        return (await self.book()).get(entry_id)

    async def update(self, entry_id: str, **changes: Any) -> KnowledgeRecord:
        """Change an entry (``name``, ``text``, ``calls``, ``scope``, ``confirm_flagged``)."""
        return (await self.book()).update(entry_id, **changes)

    async def remove(self, entry_id: str) -> None:
        """Forget an entry: its row, its full-text entry and its vector."""
        (await self.book()).remove(entry_id)

    async def remove_mine(self) -> int:
        """Forget every entry this user wrote in the project; nobody else's."""
        return (await self.book()).remove_mine()

    async def export(self, path: str | Path | None = None) -> str:
        """The knowledge this user sees as YAML (written to ``path`` too when given)."""
        text = dump((await self.book()).export_data())
        if path is not None:
            await asyncio.to_thread(Path(path).write_text, text, encoding="utf-8")
        return text

    async def import_yaml(
        self, source: str | Path, *, confirm_flagged: bool = False
    ) -> ImportReport:
        """Import YAML text, or a file when ``source`` is a path: all or nothing."""
        data = read_file(source) if isinstance(source, Path) or _is_file(source) else read(source)
        return (await self.book()).import_data(data, confirm_flagged=confirm_flagged)

    async def check(self) -> builtins.list[StaleEntry]:
        """Compile every verified query against the current schema; the stale ones."""
        return (await self.book()).check()

    async def recall_in_conversation(self, mode: str | None) -> None:
        """Switch recall for the current conversation (``"off"``, ``"keyword"``, ``"hybrid"``;
        ``None``: as the settings say)."""
        session = await self._chat.session()
        if session.conversation_id is None:
            session.new_conversation()
        assert session.conversation_id is not None
        session.store.set_conversation_knowledge(session.conversation_id, mode)


def _is_file(source: str) -> bool:
    return "\n" not in source and len(source) < 4096 and Path(source).is_file()

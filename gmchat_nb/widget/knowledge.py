"""The widget's knowledge requests (``knowledge_*`` messages, see :mod:`.protocol`), answered
through :attr:`Chat.knowledge <gmchat_nb.Chat.knowledge>` as the chat's user.

Every answer is one ``knowledge`` message with the request's ``request`` id: the entries listed
(``items``), the entry written (``entry``), the id removed (``removed``), or ``error``
``{code, message, existing}`` -- the :class:`~gmchat_nb.core.knowledge.KnowledgeError` codes
(``invalid``, ``not_compiling``, ``duplicate``, ``flagged``, ``forbidden``, ``not_found``), or
``failed`` when something else went wrong (logged, never raised into the comm).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from ..core.knowledge import KnowledgeError, entry_json

if TYPE_CHECKING:
    from ..chat import Chat, Turn

__all__ = ["KNOWLEDGE_TYPES", "knowledge_answer"]

log = logging.getLogger(__name__)

KNOWLEDGE_TYPES = frozenset(
    {
        "knowledge_list",
        "knowledge_save_turn",
        "knowledge_add",
        "knowledge_update",
        "knowledge_remove",
        "knowledge_accept",
    }
)
_MAX_REQUEST_ID = 100


async def knowledge_answer(
    chat: Chat, message: Mapping[str, Any], turns: Mapping[int, Turn]
) -> dict[str, Any]:
    """The ``knowledge`` message answering ``message``; ``turns`` are the widget's finished turns
    by their index in the view (what ``knowledge_save_turn`` names)."""
    request = message.get("request")
    answer: dict[str, Any] = {
        "type": "knowledge",
        "request": request[:_MAX_REQUEST_ID] if isinstance(request, str) else None,
    }
    try:
        answer.update(await _HANDLERS[str(message.get("type"))](chat, message, turns))
    except KnowledgeError as error:
        answer["error"] = {"code": error.code, "message": error.message, "existing": error.existing}
    except Exception as error:  # a comm handler must answer, never raise
        log.exception("a knowledge request of the widget failed")
        answer["error"] = {
            "code": "failed",
            "message": f"The knowledge request failed: {type(error).__name__}: {error}"[:300],
        }
    return answer


def _text(message: Mapping[str, Any], key: str) -> str | None:
    """An optional text field; anything else but text is refused by name."""
    value = message.get(key)
    if value is None or isinstance(value, str):
        return value
    raise KnowledgeError("invalid", f"{key} must be text, not {type(value).__name__}")


def _either(message: Mapping[str, Any], first: str, second: str) -> str | None:
    """``first`` when it was sent, else ``second``."""
    return _text(message, first) if message.get(first) is not None else _text(message, second)


def _entry_id(message: Mapping[str, Any]) -> str:
    value = message.get("entry_id")
    if not isinstance(value, str) or not value:
        raise KnowledgeError("invalid", "entry_id must name an entry")
    return value


def _confirmed(message: Mapping[str, Any]) -> bool:
    return message.get("confirm_flagged") is True


async def _list(
    chat: Chat, message: Mapping[str, Any], _turns: Mapping[int, Turn]
) -> dict[str, Any]:
    records = await chat.knowledge.list(
        kind=_text(message, "kind") or None,
        status=_text(message, "status") or None,
        search=_text(message, "search") or None,
    )
    return {"items": [entry_json(record) for record in records]}


async def _save_turn(
    chat: Chat, message: Mapping[str, Any], turns: Mapping[int, Turn]
) -> dict[str, Any]:
    index = message.get("turn")
    turn = turns.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
    if turn is None:
        raise KnowledgeError(
            "not_found",
            "This turn's queries are not in the kernel (it was shown again from the "
            "conversation's history, or cleared): ask the question again to save its answer.",
        )
    record = await chat.knowledge.save_turn(
        turn,
        name=_text(message, "name") or "",
        question=_text(message, "question"),
        scope=_text(message, "scope") or "shared",
        confirm_flagged=_confirmed(message),
    )
    return {"entry": entry_json(record)}


async def _add(
    chat: Chat, message: Mapping[str, Any], _turns: Mapping[int, Turn]
) -> dict[str, Any]:
    kind = message.get("kind")
    confirmed = _confirmed(message)
    if kind == "verified_query":
        calls = message.get("calls")
        record = await chat.knowledge.add_verified_query(
            _text(message, "name") or "",
            _text(message, "question") or "",
            calls if isinstance(calls, list) else [],
            scope=_text(message, "scope") or "shared",
            confirm_flagged=confirmed,
        )
    elif kind == "definition":
        term = _text(message, "term") or _text(message, "name") or ""
        record = await chat.knowledge.add_definition(
            term, _text(message, "text") or "", confirm_flagged=confirmed
        )
    elif kind == "note":
        record = await chat.knowledge.add_note(
            _text(message, "text") or "", confirm_flagged=confirmed
        )
    else:
        raise KnowledgeError("invalid", "kind must be one of verified_query, definition, note")
    return {"entry": entry_json(record)}


async def _update(
    chat: Chat, message: Mapping[str, Any], _turns: Mapping[int, Turn]
) -> dict[str, Any]:
    # The book's ``text`` is a verified query's question too, and ``name`` a definition's term.
    # (a field sent empty stays empty, so the book refuses it by name)
    changes: dict[str, Any] = {
        "name": _either(message, "name", "term"),
        "text": _either(message, "question", "text"),
        "scope": _text(message, "scope"),
    }
    record = await chat.knowledge.update(
        _entry_id(message),
        **{key: value for key, value in changes.items() if value is not None},
        confirm_flagged=_confirmed(message),
    )
    return {"entry": entry_json(record)}


async def _remove(
    chat: Chat, message: Mapping[str, Any], _turns: Mapping[int, Turn]
) -> dict[str, Any]:
    entry_id = _entry_id(message)
    await chat.knowledge.remove(entry_id)
    return {"removed": entry_id}


async def _accept(
    chat: Chat, message: Mapping[str, Any], _turns: Mapping[int, Turn]
) -> dict[str, Any]:
    record = await chat.knowledge.accept(_entry_id(message), scope=_text(message, "scope"))
    return {"entry": entry_json(record)}


_Handler: TypeAlias = (
    "Callable[[Chat, Mapping[str, Any], Mapping[int, Turn]], Awaitable[dict[str, Any]]]"
)
_HANDLERS: dict[str, _Handler] = {
    "knowledge_list": _list,
    "knowledge_save_turn": _save_turn,
    "knowledge_add": _add,
    "knowledge_update": _update,
    "knowledge_remove": _remove,
    "knowledge_accept": _accept,
}

"""What knowledge is: the three kinds of entry, their shapes, their content hash and their JSON.

- a **verified query** (``verified_query``): a name, the question it answers and the tool calls
  that answer it (``query`` calls, and a ``chart`` intent if any); shared with the project or
  personal;
- a **definition** (``definition``): a term of the project's vocabulary and what it means;
  shared with the project;
- a **note** (``note``): one user's preference or correction; personal, only ever recalled for
  that user.

An entry is ``active`` (recalled), ``suggested`` (waiting for a person; never recalled) or
``stale`` (a verified query that no longer compiles against the schema; never recalled).
A :class:`Draft` is an entry before it is stored: checked for shape here, against the project
in :mod:`.checking`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ..charts.tool import CHART
from ..digest import digest
from ..project.tools import TOOLS
from ..store import KnowledgeRecord
from ..text import clean_text

__all__ = [
    "CALL_TOOLS",
    "KINDS",
    "SCOPES",
    "STATUSES",
    "Draft",
    "KnowledgeError",
    "content_hash",
    "entry_json",
    "parse_calls",
]

KINDS: Final = ("verified_query", "definition", "note")
SCOPES: Final = ("shared", "personal")
STATUSES: Final = ("active", "suggested", "stale")
CALL_TOOLS: Final = (TOOLS.query.name, CHART.name)  # what a verified query may hold
MAX_NAME: Final = 200
MAX_TEXT: Final = 4000
MAX_CALLS: Final = 8
MAX_CALL_JSON: Final = 8000


class KnowledgeError(ValueError):
    """Knowledge that cannot be written as asked. ``code``: ``invalid`` (its shape),
    ``duplicate`` (the same content is stored: ``existing`` names it), ``flagged`` (the scorer
    flagged it: save it again confirming it), ``not_compiling`` (a call the project refuses),
    ``not_found`` (no such entry for this user), ``forbidden`` (a shared entry this user may
    not write)."""

    def __init__(self, code: str, message: str, *, existing: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.existing = existing


def _text(value: Any, what: str, *, limit: int, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise KnowledgeError("invalid", f"{what} must be text, not {type(value).__name__}")
    text = clean_text(value).strip()
    if required and not text:
        raise KnowledgeError("invalid", f"{what} is empty")
    if len(text) > limit:
        raise KnowledgeError("invalid", f"{what} is longer than {limit} characters")
    return text


def parse_calls(value: Any) -> list[dict[str, Any]]:
    """A verified query's calls as ``[{"tool", "arguments"}]``: a non-empty list of at most
    :data:`MAX_CALLS` calls of :data:`CALL_TOOLS`, with at least one ``query``."""
    if not isinstance(value, list) or not value:
        raise KnowledgeError("invalid", "calls must be a non-empty list of tool calls")
    if len(value) > MAX_CALLS:
        raise KnowledgeError("invalid", f"a verified query holds at most {MAX_CALLS} calls")
    calls: list[dict[str, Any]] = []
    for position, call in enumerate(value, 1):
        if not isinstance(call, Mapping):
            raise KnowledgeError("invalid", f"call {position} must be a mapping")
        tool = call.get("tool", call.get("name"))
        arguments = call.get("arguments", call.get("args", {}))
        if tool not in CALL_TOOLS:
            raise KnowledgeError(
                "invalid", f"call {position}: tool must be one of {', '.join(CALL_TOOLS)}"
            )
        if not isinstance(arguments, Mapping):
            raise KnowledgeError("invalid", f"call {position}: arguments must be a mapping")
        try:
            encoded = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise KnowledgeError("invalid", f"call {position}: arguments must be JSON") from None
        if len(encoded) > MAX_CALL_JSON:
            raise KnowledgeError("invalid", f"call {position}: arguments are too long")
        calls.append({"tool": tool, "arguments": json.loads(clean_text(encoded))})
    if not any(call["tool"] == TOOLS.query.name for call in calls):
        raise KnowledgeError("invalid", "a verified query needs at least one query call")
    return calls


@dataclass(frozen=True, slots=True)
class Draft:
    """An entry before it is stored. ``name`` is a verified query's name, a definition's term
    and a note's first words; ``body`` its question, meaning or text."""

    kind: str
    name: str
    body: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    scope: str = "shared"

    @classmethod
    def verified_query(cls, name: Any, question: Any, calls: Any, scope: Any = "shared") -> Draft:
        return cls(
            "verified_query",
            _text(name, "name", limit=MAX_NAME),
            _text(question, "question", limit=MAX_TEXT),
            parse_calls(calls),
            _scope(scope, ("shared", "personal")),
        )

    @classmethod
    def definition(cls, term: Any, text: Any) -> Draft:
        return cls(
            "definition", _text(term, "term", limit=MAX_NAME), _text(text, "text", limit=MAX_TEXT)
        )

    @classmethod
    def note(cls, text: Any) -> Draft:
        body = _text(text, "text", limit=MAX_TEXT)
        return cls("note", body[:60], body, scope="personal")

    @classmethod
    def from_mapping(cls, kind: str, item: Any) -> Draft:
        """A draft from one YAML/JSON item of ``kind`` (the import format's keys)."""
        if not isinstance(item, Mapping):
            raise KnowledgeError("invalid", f"a {kind} must be a mapping")
        if kind == "verified_query":
            return cls.verified_query(
                item.get("name"),
                item.get("question"),
                item.get("calls"),
                item.get("scope", "shared"),
            )
        if kind == "definition":
            _scope(item.get("scope", "shared"), ("shared",))
            return cls.definition(item.get("term", item.get("name")), item.get("text"))
        if kind == "note":
            _scope(item.get("scope", "personal"), ("personal",))
            return cls.note(item.get("text"))
        raise KnowledgeError("invalid", f"kind must be one of {', '.join(KINDS)}")

    @property
    def hash(self) -> str:
        return content_hash(self.kind, self.name, self.body, self.calls)

    @property
    def searchable(self) -> str:
        """The text both searches index."""
        return f"{self.name}\n{self.body}"


def _scope(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise KnowledgeError("invalid", f"scope must be {' or '.join(allowed)}")
    return str(value)


def content_hash(kind: str, name: str, body: str, calls: list[dict[str, Any]]) -> str:
    """Same content, same hash: case and spacing of the texts do not matter, nor key order."""
    return digest(
        {
            "kind": kind,
            "name": " ".join(name.casefold().split()),
            "body": " ".join(body.casefold().split()),
            "calls": calls,
        }
    )


def _when(value: float | None) -> str | None:
    return None if value is None else datetime.fromtimestamp(value, UTC).isoformat()


def entry_json(record: KnowledgeRecord) -> dict[str, Any]:
    """An entry as the surfaces show it (``list --json``, the HTTP routes, the widget)."""
    item: dict[str, Any] = {
        "id": record.id,
        "kind": record.kind,
        "name": record.name,
        "status": record.status,
        "scope": record.scope,
        "owner": record.owner,
        "created_by": record.created_by,
        "created_at": _when(record.created_at),
        "updated_at": _when(record.updated_at),
    }
    if record.kind == "verified_query":
        item.update(
            question=record.body,
            calls=record.calls,
            verified_by=record.verified_by,
            verified_at=_when(record.verified_at),
        )
    else:
        item["text"] = record.body
    if record.kind == "definition":
        item["term"] = record.name
    if record.flags:
        item["flags"] = record.flags
    if record.stale_reason:
        item["stale_reason"] = record.stale_reason
    return item

"""What the assistant may suggest -- never store: a correction the user made, a turn the user
marked right.

A suggestion is written with status ``suggested`` and is never recalled until a person accepts
it (:meth:`~.book.KnowledgeBook.accept`). Suggestions come only from the user's own words or a
turn the user judged: never from recalled text or from tool results, so knowledge cannot feed on
itself (the 97.8%-junk failure of automatic extraction) and data cannot plant it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..store import KnowledgeRecord
from .book import KnowledgeBook
from .entries import Draft, KnowledgeError
from .from_turn import turn_calls

__all__ = ["correction_in", "suggest_correction", "suggest_turn"]

_CORRECTION: Final = re.compile(
    r"\bI\s+(?:mean|meant)\b|^\s*(?:no|nope|actually)\b[,.!:]?\s|\bnot\s+the\s+\w+(?:\s+\w+)?,?"
    r"\s+(?:but\s+)?the\b|\bwhen\s+I\s+say\b|\bby\s+\"?[\w ]{1,40}\"?\s+I\s+mean\b",
    re.IGNORECASE,
)
MAX_NOTE: Final = 400


def correction_in(texts: Sequence[str]) -> str | None:
    """The user's correction among their own words of a turn ("I mean the order date, not the
    delivery date"), or ``None``."""
    text = " ".join(" ".join(texts).split())
    if not text or len(text) > MAX_NOTE or not _CORRECTION.search(text):
        return None
    return text


def suggest_correction(book: KnowledgeBook, texts: Sequence[str]) -> KnowledgeRecord | None:
    """Queue the user's correction as a suggested personal note (once: the same words again
    add nothing)."""
    correction = correction_in(texts)
    if correction is None:
        return None
    try:
        return book.suggest(Draft.note(correction))
    except KnowledgeError:  # the same suggestion is queued already, or it is not one
        return None


def suggest_turn(
    book: KnowledgeBook, events: Iterable[Mapping[str, Any]], question: str
) -> KnowledgeRecord:
    """Queue a turn the user marked right as a suggested verified query (named by its
    question); a person accepts it, and may rename it, before it is ever recalled."""
    calls = turn_calls(events)
    name = " ".join(question.split())[:80] or "verified query"
    return book.suggest(Draft.verified_query(name, question, calls, "personal"))

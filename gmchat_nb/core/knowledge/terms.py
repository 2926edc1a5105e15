"""Search text as words: what full-text search is handed instead of the user's raw text.

Raw text breaks a full-text query: in FTS5 ``revenue by country?`` and ``what's churn`` are
syntax errors and ``net-revenue`` reads as a column filter; ``NEAR``, ``*``, quotes and ``-`` are
operators. :func:`search_terms` keeps only word tokens (letters and digits), folded to lower
case, without the words every question has ("which", "the", "show"), at most
:data:`MAX_TERMS` of them, so any text, however hostile or long, becomes a list of plain words
that the store quotes one by one. :func:`overlap` is how much of a question an entry's words
cover, the keyword search's minimum relevance.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final

from ..project.names import singular

__all__ = ["MAX_TERMS", "overlap", "search_terms", "stems"]

MAX_TERMS: Final = 24  # a 10 KB question is searched by its first distinct words, not all
MAX_SCANNED: Final = 20_000  # characters of a text read for words
_WORD: Final = re.compile(r"[^\W_]+")
_STOPWORDS: Final = frozenset(
    """
    a an the of in on at to for from by with into as and or but is are was were be been being
    am do does did have has had will would shall should can could may might must please
    which what who whom whose where when why how that this these those there here it its
    me my we our us you your i he she his her they them their
    show list give find get tell see display print return all any some each every
    s t d ll re ve m not no
    """.split()  # noqa: SIM905
)


def search_terms(text: str) -> list[str]:
    """The distinct words of ``text`` worth searching for, in order (lower case, at most
    :data:`MAX_TERMS`); ``[]`` for text with none."""
    seen: list[str] = []
    for match in _WORD.finditer(text[:MAX_SCANNED].casefold()):
        word = match.group()
        if word in _STOPWORDS or word in seen or len(word) > 64:
            continue
        seen.append(word)
        if len(seen) == MAX_TERMS:
            break
    return seen


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stem = singular(word)
    for suffix in ("ing", "ed"):
        if len(stem) > len(suffix) + 3 and stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return stem


def stems(words: Iterable[str]) -> frozenset[str]:
    """Words folded to a crude stem (singular, without -ing/-ed), for counting overlap."""
    return frozenset(_stem(word) for word in words)


@functools.lru_cache(maxsize=4096)
def text_stems(text: str) -> frozenset[str]:
    """The stems of every word of an entry's text (kept: recall reads the same entries again)."""
    return stems(match.group() for match in _WORD.finditer(text[:MAX_SCANNED].casefold()))


def overlap(question: Iterable[str], entry_text: str) -> float:
    """The share of the question's search terms an entry's text holds (0..1)."""
    asked = stems(question)
    if not asked:
        return 0.0
    return len(asked & text_stems(entry_text)) / len(asked)

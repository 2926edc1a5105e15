"""Keep server text that names a hidden manager away from the chat.

The index leaves hidden managers out of everything it builds, but a server's own error messages
are free text: ``"Material with id 99 does not exist."`` names a manager the chat must not know of,
and says which of its rows exist. :class:`HiddenNames` recognises a hidden manager (or a relation
that leads to one) in any spelling — ``Material``, ``materials``, ``MaterialType``,
``audit secret``, ``AUDIT_SECRET``, ``auditSecretList`` — so that such text can be replaced by a
neutral message. It errs on the side of redacting: a word that merely starts like a hidden name
(``materialistic``) counts too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .names import singular, split_words

__all__ = ["REDACTED", "HiddenNames"]

REDACTED = "The server rejected a value that refers to data this chat cannot see."
# Words that only say how a name is used (``auditSecretList``, ``materialId``), not what it names.
_USAGE_WORDS = frozenset({"id", "ids", "list", "type", "page"})


class HiddenNames:
    """The names of hidden managers and of the relations that lead to them, ready to spot."""

    def __init__(self, names: Iterable[str]) -> None:
        sequences: set[tuple[str, ...]] = set()
        for name in names:
            words = [singular(word) for word in split_words(name)]
            while len(words) > 1 and words[-1] in _USAGE_WORDS:
                words.pop()
            if words:
                sequences.add(tuple(words))
        # Several words are looked for in order (``audit secret``); every name is also looked
        # for as the start of one word (``auditsecretlist``, ``materialtype``).
        self._by_first: dict[str, list[tuple[str, ...]]] = {}
        for sequence in sequences:
            if len(sequence) > 1:
                self._by_first.setdefault(sequence[0], []).append(sequence)
        self._joined = frozenset("".join(sequence) for sequence in sequences)
        self._lengths = sorted({len(joined) for joined in self._joined})

    def __bool__(self) -> bool:
        return bool(self._joined)

    def mentioned_in(self, value: Any) -> bool:
        """True when ``value`` (a string, or any JSON value's text) names a hidden manager."""
        if not self._joined:
            return False
        text = value if isinstance(value, str) else repr(value)
        words = [singular(word) for word in split_words(text)]
        return any(self._starts_at(words, position) for position in range(len(words)))

    def redact(self, text: str) -> str:
        """``text``, or :data:`REDACTED` when it names a hidden manager."""
        return REDACTED if self.mentioned_in(text) else text

    def _starts_at(self, words: list[str], position: int) -> bool:
        word = words[position]
        if any(word[:length] in self._joined for length in self._lengths if length <= len(word)):
            return True
        for sequence in self._by_first.get(word, ()):
            size = len(sequence)
            window = words[position : position + size]
            if (
                len(window) == size
                and window[:-1] == list(sequence[:-1])
                and window[-1].startswith(sequence[-1])
            ):
                return True
        return False

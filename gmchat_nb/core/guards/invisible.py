"""Characters a person cannot see but a model reads, removed from tool results.

What: :func:`strip_invisible` copies a JSON-like value with every invisible character removed
from every string (dict keys included); :func:`has_invisible` says whether a string holds one;
:func:`reveal_invisible` writes them out as ``\\uXXXX`` so a person can see them (an excerpt on a
confirmation card, a log line).

Why: a row of data can carry text nobody sees in a table or a notebook but that a model reads as
plainly as any other: Unicode tag characters (U+E0000–U+E007F, which spell out ASCII invisibly,
"ASCII smuggling"), bidi controls that make text display in another order than it is read,
zero-width characters that split a word so a filter misses it, soft hyphens and variation
selectors. None of them carries meaning a user asked about, so they are removed before the model
sees a tool result, and the scorer reports that they were there.

What is removed: the ranges above and every other character of Unicode category Cf (format
characters: Arabic number signs, interlinear annotation marks, Egyptian hieroglyph format
controls …), hard-coded so the set does not depend on the Python build; a test checks that it
covers every Cf character the running ``unicodedata`` knows. U+200D (zero width joiner) goes
too, although emoji sequences use it: a family emoji then shows as its single people, which is
readable, and keeping it would leave a zero-width character to hide text in. Ordinary letters,
combining marks, spaces and line breaks are kept.

It never raises on strings: lone surrogates (``"\\ud800"``) pass through unchanged (see
``core/text.py`` for replacing them).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = [
    "HIDDEN_WARNING",
    "INVISIBLE_RANGES",
    "find_invisible",
    "has_invisible",
    "mark_invisible",
    "reveal_invisible",
    "strip_invisible",
]

INVISIBLE_RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x06DD, 0x06DD),  # Arabic end of ayah (Cf)
    (0x070F, 0x070F),  # Syriac abbreviation mark (Cf)
    (0x0890, 0x0891),  # Arabic pound/piastre mark above (Cf)
    (0x08E2, 0x08E2),  # Arabic disputed end of ayah (Cf)
    (0x180E, 0x180E),  # Mongolian vowel separator (Cf)
    (0x200B, 0x200F),  # zero width space/non-joiner/joiner, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated controls
    (0xFE00, 0xFE0F),  # variation selectors 1–16
    (0xFEFF, 0xFEFF),  # zero width no-break space (BOM)
    (0xFFF9, 0xFFFB),  # interlinear annotation controls
    (0x110BD, 0x110BD),  # Kaithi number sign (Cf)
    (0x110CD, 0x110CD),  # Kaithi number sign above (Cf)
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls (Cf, Unicode 14 and 15)
    (0x1BCA0, 0x1BCA3),  # shorthand format controls (Cf)
    (0x1D173, 0x1D17A),  # musical symbol format controls (Cf)
    (0xE0000, 0xE007F),  # tag characters: invisible ASCII
    (0xE0100, 0xE01EF),  # variation selectors 17–256
)
"""Inclusive code point ranges of the characters :func:`strip_invisible` removes."""

# One character class for all ranges: one C-level scan per string, no Python loop per character.
_CLASS: Final = "".join(
    re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
    for low, high in INVISIBLE_RANGES
)
_INVISIBLE: Final = re.compile(f"[{_CLASS}]")
# What reveal_invisible writes out: the invisible characters and lone surrogates (which cannot
# be encoded, so an excerpt holding one could not be shown or stored).
_HIDDEN: Final = re.compile(f"[{_CLASS}\ud800-\udfff]")


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds a character :func:`strip_invisible` would remove."""
    # Every invisible character is outside ASCII, and isascii() is O(1) in CPython.
    return not text.isascii() and _INVISIBLE.search(text) is not None


def find_invisible(text: str) -> int:
    """The index of the first invisible character in ``text``, ``-1`` when there is none."""
    match = None if text.isascii() else _INVISIBLE.search(text)
    return -1 if match is None else match.start()


def _strip_text(text: str) -> str:
    if text.isascii():
        return text  # the common case: the same object, nothing allocated
    return _INVISIBLE.sub("", text)


def strip_invisible(value: Any) -> Any:
    """A copy of the JSON-like ``value`` with invisible characters removed from every string.

    Dicts, lists and tuples are copied (tuples stay tuples); strings lose their invisible
    characters (an ASCII-only string comes back as the same object); other values come back
    as they are. Dict keys are cleaned too: two keys that differ only by invisible characters
    become one, the later value winning, as it would if the model read them.

    It walks with its own stack, not by recursion, so no depth of nesting exhausts Python's
    recursion limit; a dict or list met twice is copied once (a cycle stays a cycle, as with
    ``copy.deepcopy``), so it always ends.
    """
    if isinstance(value, str):
        return _strip_text(value)
    if not isinstance(value, dict | list | tuple):
        return value
    copies: dict[int, Any] = {}  # id of a dict or list -> its copy: shared and cyclic values
    pending: list[tuple[Any, Any]] = []  # (source container, its copy waiting to be filled)
    # Tuples are filled as lists and made tuples at the end, innermost first: (holder, slot,
    # the list), in the order they were met, which puts every tuple before those inside it.
    tuples: list[tuple[Any, Any, list[Any]]] = []

    def copy_of(item: Any) -> Any:
        if isinstance(item, str):
            return _strip_text(item)
        if isinstance(item, dict | list):
            if id(item) not in copies:
                copies[id(item)] = {} if isinstance(item, dict) else []
                pending.append((item, copies[id(item)]))
            return copies[id(item)]
        if isinstance(item, tuple):
            filling: list[Any] = []
            pending.append((item, filling))
            return filling
        return item

    root = copy_of(value)
    if isinstance(value, tuple):
        tuples.append(({0: root}, 0, root))
    while pending:
        source, target = pending.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                slot = _strip_text(key) if isinstance(key, str) else key
                target[slot] = copy_of(item)
                if isinstance(item, tuple):
                    tuples.append((target, slot, target[slot]))
        else:
            for item in source:
                target.append(copy_of(item))
                if isinstance(item, tuple):
                    tuples.append((target, len(target) - 1, target[-1]))
    done = root
    for holder, slot, filled in reversed(tuples):
        made = tuple(filled)
        if filled is root:
            done = made
        elif holder[slot] is filled:  # unless a later key of the same cleaned name replaced it
            holder[slot] = made
    return done


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _marked(match: re.Match[str]) -> str:
    return f"\u27e8U+{ord(match.group()):04X}\u27e9"


HIDDEN_WARNING: Final = (
    "This change holds characters that display differently from what is stored "
    "(shown as \u27e8U+\u2026\u27e9)."
)
"""What a confirmation says when :func:`mark_invisible` marked anything in it."""


def mark_invisible(text: str) -> tuple[str, bool]:
    """``text`` for a person deciding on it: each invisible, bidi or tag character and lone
    surrogate written as ``\u27e8U+202E\u27e9``, so a change cannot read differently from what
    is stored ("invoice\u27e8U+202E\u27e9fdp.exe", never "invoice…pdf"); and whether any was."""
    if text.isascii():
        return text, False
    shown, count = _HIDDEN.subn(_marked, text)
    return shown, count > 0


def reveal_invisible(text: str) -> str:
    """``text`` with each invisible character and lone surrogate written as ``\\uXXXX``
    (``\\UXXXXXXXX`` above U+FFFF), so a person sees what a model would read."""
    if text.isascii():
        return text
    return _HIDDEN.sub(_escape, text)

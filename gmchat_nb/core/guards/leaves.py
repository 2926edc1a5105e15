"""Every text of a tool result, each once: what the scan screens and what the number gate reads.

What: :func:`leaf_text` joins the distinct texts of a JSON-like value with NUL between them: its
strings and dict keys as they are, numbers as JSON writes them, any other leaf as its ``str()``
(what ``json.dumps(default=str)`` writes); ``None`` and booleans, which hold neither a word nor a
digit, are left out.

Why: two of a turn's defences ask a question of a result's texts, not of its shape: could any of
its strings be suspicious (:mod:`.scorer` screens this text before walking string by string), and
is a number of the answer written in it (:mod:`.gates`). Asked of the result's JSON text they cost
a turn more than the rest of its defences together: a result repeats the same keys and names in
every row (the typical 68-row benchmark turn: 11,700 characters of JSON, 2,400 of distinct
texts), and JSON's escapes (``\\n``, ``\\u000b``) would hide the whitespace between two words of a
phrase from the screen. NUL is neither a letter, a digit, a point nor whitespace, so no keyword and
no number runs from one text into the next.

Bounded: it walks with its own stack, so no depth of nesting exhausts the recursion limit, and it
visits each dict and list once, so a cycle ends (a value met twice adds no text of its own).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["SEPARATOR", "leaf_text"]

SEPARATOR: Final = "\x00"


def _odd_text(value: Any) -> str | None:
    """The text JSON would write for a leaf that is no plain ``str``, ``int`` or ``float``."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # as JSON writes an int subclass (an IntEnum: its number)
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    try:
        return str(value)
    except Exception:  # a broken __str__ is data nobody can read: no text
        return None


def leaf_text(value: Any) -> str:
    """The distinct texts of ``value`` (strings, dict keys, the JSON text of numbers and other
    leaves), joined by :data:`SEPARATOR`, in no particular order."""
    texts: set[Any] = set()
    ints: set[int] = set()  # numbers apart, so equal ones are written once
    floats: set[float] = set()
    later: list[Any] = []  # leaves of other types, written at the end
    seen: set[int] = set()  # ids of the dicts and lists walked
    stack = [value]
    # The plain types by identity, a dict's values where they are: a typical result is a list of
    # flat rows, and this walk is on every turn's path (about 0.6 µs a row of six fields).
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if (key := id(item)) in seen:
                continue
            seen.add(key)
            texts.update(item)  # keys: any that is no str is written below
            for leaf in item.values():
                leaf_kind = type(leaf)
                if leaf_kind is str:
                    texts.add(leaf)
                elif leaf_kind is int:
                    ints.add(leaf)
                elif leaf_kind is float:
                    floats.add(leaf)
                elif leaf is not None and leaf_kind is not bool:
                    stack.append(leaf)
        elif kind is str:
            texts.add(item)
        elif kind is list or kind is tuple:
            if (key := id(item)) in seen:
                continue
            seen.add(key)
            stack.extend(item)
        elif kind is int:
            ints.add(item)
        elif kind is float:
            floats.add(item)
        elif item is None or kind is bool:
            continue
        elif isinstance(item, dict | list | tuple):  # subclasses, walked as JSON would
            if id(item) not in seen:
                seen.add(id(item))
                stack.append(dict(item) if isinstance(item, dict) else list(item))
        else:
            later.append(item)
    texts.update(map(int.__repr__, ints))
    texts.update(map(float.__repr__, floats))
    texts.update(text for leaf in later if (text := _odd_text(leaf)) is not None)
    try:
        return SEPARATOR.join(texts)
    except TypeError:  # a dict key that is no str: written as JSON writes it, then joined again
        keys = [text for text in texts if type(text) is not str]
        texts.difference_update(keys)
        texts.update(text for key in keys if (text := _odd_text(key)) is not None)
        return SEPARATOR.join(texts)

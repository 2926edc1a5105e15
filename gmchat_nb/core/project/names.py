"""Name conventions shared by the schema index, the compiler and the tools.

GeneralManager derives GraphQL names from Python names (``unit_price`` -> ``unitPrice``,
``material__name__icontains`` -> ``material_Name_Icontains``); a language model writes whatever it
saw last. These helpers convert between the two worlds and suggest the closest valid name.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = [
    "ECHO_LENGTH",
    "MAX_NAME_LENGTH",
    "camel_case",
    "clip",
    "clip_repr",
    "did_you_mean",
    "normalize_key",
    "pascal_to_snake",
    "quoted_or",
    "singular",
    "split_words",
    "suggestion_hint",
]

# No schema name is longer; a longer caller string is unknown without any fuzzy matching.
MAX_NAME_LENGTH = 200
# Caller strings quoted back in error messages are cut to this many characters.
ECHO_LENGTH = 80
# Only strings this short are cached: a cache entry keeps its key alive, and callers send
# megabytes. Schema names are all shorter, so the index still splits each spelling once.
CACHED_LENGTH = 128

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")
_Result = TypeVar("_Result")


def _short_cached(function: Callable[[str], _Result]) -> Callable[[str], _Result]:
    """``function`` with an LRU cache for short arguments; long ones are computed every time."""
    cached = functools.lru_cache(maxsize=65536)(function)

    @functools.wraps(function)
    def call(text: str) -> _Result:
        return cached(text) if len(text) <= CACHED_LENGTH else function(text)

    return call


def clip(text: object, limit: int = ECHO_LENGTH) -> str:
    """``text`` as a string of at most ``limit`` characters, cut with "…" (for echoing input)."""
    try:
        value = text if isinstance(text, str) else str(text)
    except ValueError:  # an int with more digits than Python will print
        return "(a number too long to print)"
    return value if len(value) <= limit else value[: limit - 1] + "…"


def clip_repr(value: object, limit: int = ECHO_LENGTH) -> str:
    """``repr(value)`` cut like :func:`clip`, for echoing a value of any type."""
    try:
        return clip(repr(value), limit)
    except ValueError:
        return "(a number too long to print)"


def split_words(text: str) -> list[str]:
    """Split camelCase, PascalCase, snake_case and prose into lowercase words."""
    return list(_split_words(text))


@_short_cached
def _split_words(text: str) -> tuple[str, ...]:
    # Field names repeat across managers; the index splits each spelling once.
    return tuple(word.lower() for word in _WORD.findall(text))


def pascal_to_snake(name: str) -> str:
    """``PurchaseOrder`` -> ``purchase_order``."""
    return "_".join(split_words(name))


@_short_cached
def camel_case(snake: str) -> str:
    """``unit_price`` -> ``unitPrice``; names already in camelCase are kept."""
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest if part)


@_short_cached
def normalize_key(name: str) -> str:
    """A case- and separator-insensitive key: ``Unit_Price`` and ``unitPrice`` -> ``unitprice``."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


@_short_cached
def singular(word: str) -> str:
    """A cheap English singular for search and name matching (``parts`` -> ``part``)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def did_you_mean(name: str, candidates: Iterable[str], *, limit: int = 3) -> list[str]:
    """The candidates closest to ``name``, best first, compared case- and separator-blind.

    A ``name`` longer than :data:`MAX_NAME_LENGTH` is close to nothing: fuzzy matching costs grow
    with its length, and no schema name is that long.
    """
    if len(name) > MAX_NAME_LENGTH:
        return []
    by_key: dict[str, str] = {}
    for candidate in candidates:
        by_key.setdefault(normalize_key(candidate), candidate)
    wanted = normalize_key(name)
    if wanted in by_key:
        return [by_key[wanted]]
    keys = difflib.get_close_matches(wanted, list(by_key), n=limit, cutoff=0.6)
    prefixed = [key for key in by_key if wanted and (key.startswith(wanted) or wanted in key)]
    ordered = list(dict.fromkeys(keys + sorted(prefixed, key=len)))[:limit]
    return [by_key[key] for key in ordered]


def quoted_or(items: Iterable[str]) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``."""
    quoted = [f"'{item}'" for item in items]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def suggestion_hint(suggestions: list[str]) -> str:
    """`` Did you mean 'a' or 'b'?`` for error messages, or nothing when there is no suggestion."""
    return f" Did you mean {quoted_or(suggestions)}?" if suggestions else ""

"""Name conventions shared by the schema index, the compiler and the tools.

GeneralManager derives GraphQL names from Python names (``unit_price`` -> ``unitPrice``,
``material__name__icontains`` -> ``material_Name_Icontains``); a language model writes whatever it
saw last. These helpers convert between the two worlds and suggest the closest valid name.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable

__all__ = [
    "camel_case",
    "did_you_mean",
    "normalize_key",
    "pascal_to_snake",
    "quoted_or",
    "singular",
    "split_words",
    "suggestion_hint",
]

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_words(text: str) -> list[str]:
    """Split camelCase, PascalCase, snake_case and prose into lowercase words."""
    return list(_split_words(text))


@functools.lru_cache(maxsize=65536)
def _split_words(text: str) -> tuple[str, ...]:
    # Field names repeat across managers; the index splits each spelling once.
    return tuple(word.lower() for word in _WORD.findall(text))


def pascal_to_snake(name: str) -> str:
    """``PurchaseOrder`` -> ``purchase_order``."""
    return "_".join(split_words(name))


@functools.lru_cache(maxsize=65536)
def camel_case(snake: str) -> str:
    """``unit_price`` -> ``unitPrice``; names already in camelCase are kept."""
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest if part)


@functools.lru_cache(maxsize=65536)
def normalize_key(name: str) -> str:
    """A case- and separator-insensitive key: ``Unit_Price`` and ``unitPrice`` -> ``unitprice``."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


@functools.lru_cache(maxsize=65536)
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
    """The candidates closest to ``name``, best first, compared case- and separator-blind."""
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

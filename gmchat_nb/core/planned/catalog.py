"""The manager catalog and the ranking of manager candidates for a question.

``planned.catalog`` (a mapping, a callable returning one, or a dotted path to such a callable)
describes exposed managers in the business's words: ``domain``, ``aliases``, ``use_when`` and
``distinguish_from``. It only *ranks*: a candidate is always a manager the project's schema index
exposes, so an entry can never make a hidden manager visible, and an entry for a manager that is
not exposed is refused with the same message as one that does not exist (a settings error must
not confirm that a hidden manager exists).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..dotted import DottedPathError, resolve_dotted
from ..project.names import split_words
from ..project.project import Project
from ..settings import ChatConfigurationError

__all__ = ["Candidate", "Catalog", "CatalogEntry", "load_catalog", "rank_managers"]

MAX_CANDIDATES = 5
_ENTRY_KEYS = ("domain", "aliases", "use_when", "distinguish_from")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """Normalised words for one exposed manager."""

    domain: str = ""
    aliases: tuple[str, ...] = ()
    use_when: str = ""
    distinguish_from: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Catalog:
    entries: Mapping[str, CatalogEntry] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked manager and why (match-source categories, for audit and the planner)."""

    manager: str
    score: float
    sources: tuple[str, ...]


def _words(text: str) -> set[str]:
    found: set[str] = set()
    for word in split_words(text):
        found.add(word)
        if len(word) > 3 and word.endswith("s"):
            found.add(word[:-1])  # "parts" finds the alias "part"
    return found


def _strings(key: str, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ChatConfigurationError(
        f"Chat setting '{key}' must be a string or a list of strings.", key=key
    )


def _resolve_source(source: object) -> object:
    if isinstance(source, str):
        try:
            source = resolve_dotted(source, key="planned.catalog", want_callable=False)
        except DottedPathError as error:
            raise ChatConfigurationError(str(error), key=error.key) from None
    if callable(source):
        source = source()
    return source


def load_catalog(
    source: Mapping[str, Any] | Callable[..., Any] | str | None, project: Project
) -> Catalog:
    """The validated catalog (empty for ``None``); :class:`ChatConfigurationError` names the key."""
    if source is None:
        return Catalog()
    raw = _resolve_source(source)
    if not isinstance(raw, Mapping):
        raise ChatConfigurationError(
            "Chat setting 'planned.catalog' must give a mapping of manager name -> entry.",
            key="planned.catalog",
        )
    entries: dict[str, CatalogEntry] = {}
    for name, entry in raw.items():
        key = f"planned.catalog.{name}"
        if not isinstance(name, str) or name not in project.index.managers:
            raise ChatConfigurationError(
                f"Chat setting '{key}' names a manager the project does not expose.", key=key
            )
        if not isinstance(entry, Mapping):
            raise ChatConfigurationError(f"Chat setting '{key}' must be a mapping.", key=key)
        unknown = [item for item in entry if item not in _ENTRY_KEYS]
        if unknown:
            raise ChatConfigurationError(
                f"Unknown chat setting '{key}.{unknown[0]}'. Allowed: {', '.join(_ENTRY_KEYS)}.",
                key=f"{key}.{unknown[0]}",
            )
        entries[name] = CatalogEntry(
            " ".join(_strings(f"{key}.domain", entry.get("domain"))),
            tuple(item.lower() for item in _strings(f"{key}.aliases", entry.get("aliases"))),
            " ".join(_strings(f"{key}.use_when", entry.get("use_when"))),
            _strings(f"{key}.distinguish_from", entry.get("distinguish_from")),
        )
    return Catalog(MappingProxyType(entries))


def rank_managers(question: str, project: Project, catalog: Catalog) -> list[Candidate]:
    """Up to five exposed managers for ``question``, best first: the schema search's ranking with
    the catalog's words added (an exact alias outranks every schema match)."""
    scores: dict[str, float] = {}
    sources: dict[str, list[str]] = {}
    for hit in project.search.search(question, limit=10):
        scores[hit.manager.name] = hit.score
        sources[hit.manager.name] = [f"schema_{where}" for where in hit.matched]
    asked = _words(question)
    lowered = question.lower()
    for name, entry in catalog.entries.items():
        bonus = 0.0
        found: list[str] = []
        if any(alias and alias in lowered for alias in entry.aliases):
            exact = any(_words(alias) <= asked for alias in entry.aliases)
            bonus += 100.0 if exact else 5.0
            found.append("exact_alias" if exact else "catalog_alias")
        if entry.domain and _words(entry.domain) & asked:
            bonus += 2.0
            found.append("catalog_domain")
        overlap = len(_words(entry.use_when) & asked)
        if overlap:
            bonus += 0.5 * overlap
            found.append("catalog_use_when")
        if bonus:
            scores[name] = scores.get(name, 0.0) + bonus
            sources.setdefault(name, []).extend(found)
    ranked = sorted(scores, key=lambda name: (-scores[name], name))[:MAX_CANDIDATES]
    return [Candidate(name, round(scores[name], 2), tuple(sources[name])) for name in ranked]

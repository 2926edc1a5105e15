"""Ranked manager search for ``search_managers``.

Where a word is found decides how much it counts: in the manager's own name far more than in its
description, in its description more than in its field names, and in relation or filter names least
of all. A query that names a manager (any case, singular or plural, ``purchase orders``) puts it
first. GeneralManager counts every substring hit the same and breaks ties alphabetically, so
"parts" ranks Material above Part; here it cannot.

The index is inverted (word -> managers with the weight of their best hit) and keeps a sorted
vocabulary for prefix matches, so a query costs a few dictionary look-ups, not a scan.
"""

from __future__ import annotations

import bisect
import difflib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .index import ManagerInfo, SchemaIndex
from .names import normalize_key, singular, split_words

__all__ = ["MAX_QUERY_CHARS", "MAX_QUERY_WORDS", "ManagerSearch", "SearchHit", "query_note"]

NAME_EXACT = 1000.0
WEIGHT_NAME = 12.0
WEIGHT_DESCRIPTION = 4.0
WEIGHT_FIELD = 2.0
WEIGHT_RELATION = 1.0
PREFIX_FACTOR = 0.5
MAX_PREFIX_TOKENS = 64
# A search reads at most this much of its query: a question is short, and every word costs a
# look-up (and a typo one a fuzzy match), so a pasted document must not cost more than a question.
MAX_QUERY_CHARS = 1000
MAX_QUERY_WORDS = 32

STOPWORDS = frozenset(
    """a an and are as at be by do does for from give has have how i in is it list many me my
    of on or show that the their there these this those to us was we were what which who with
    all any find get tell about each every per our your data records record rows""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked match; ``matched`` says where the query words were found."""

    manager: ManagerInfo
    score: float
    matched: tuple[str, ...]


class ManagerSearch:
    """A prebuilt search over the exposed managers of a :class:`SchemaIndex`."""

    def __init__(self, index: SchemaIndex) -> None:
        self._managers: list[ManagerInfo] = list(index.managers.values())
        self._name_tokens: list[int] = []
        postings: dict[str, dict[int, tuple[float, str]]] = defaultdict(dict)
        self._exact: dict[str, int] = {}
        for position, info in enumerate(self._managers):
            name_words = split_words(info.name)
            self._name_tokens.append(len(name_words))
            for key in {normalize_key(info.name), "".join(name_words)}:
                self._exact.setdefault(key, position)
            weighted: list[tuple[Iterable[str], float, str]] = [
                (name_words, WEIGHT_NAME, "name"),
                (_words(info.description), WEIGHT_DESCRIPTION, "description"),
                (_words(*(f.name for f in info.fields)), WEIGHT_FIELD, "fields"),
                (_words(*(f.description for f in info.fields)), WEIGHT_FIELD / 2, "fields"),
                (
                    _words(*(r.name for r in info.relations), *(f.field for f in info.filters)),
                    WEIGHT_RELATION,
                    "relations",
                ),
            ]
            for words, weight, where in weighted:
                for word in words:
                    for token in {word, singular(word)}:
                        best = postings[token].get(position)
                        if best is None or best[0] < weight:
                            postings[token][position] = (weight, where)
        self._postings = dict(postings)
        self._vocabulary = sorted(self._postings)
        # Typos are looked for among words of about the same length (not numbers like 0001).
        self._fuzzy_vocabulary: dict[int, list[str]] = defaultdict(list)
        for token in self._vocabulary:
            if token.isalpha() and len(token) >= 4:
                self._fuzzy_vocabulary[len(token)].append(token)

    def search(self, query: str, *, limit: int = 10) -> list[SearchHit]:
        """The best ``limit`` managers for ``query``, best first; [] when nothing matches.

        Only the start of a long query counts (see :func:`query_note`).
        """
        query, words, _ = _bounded(query)
        if not words:
            return []
        scores: dict[int, float] = defaultdict(float)
        matched: dict[int, list[str]] = defaultdict(list)
        hits_per_manager: dict[int, int] = defaultdict(int)
        looked_up: dict[str, dict[int, tuple[float, str]]] = {}  # a repeated word costs once
        for order, word in enumerate(words):
            found = looked_up.get(word)
            if found is None:
                found = looked_up[word] = self._match_word(word) or self._match_fuzzy(word)
            # The row type is usually named first ("projects using aluminum parts").
            lead = 1.0 + 0.1 * (len(words) - order) / len(words)
            for position, (weight, where) in found.items():
                scores[position] += weight * lead if where == "name" else weight
                hits_per_manager[position] += 1
                if where not in matched[position]:
                    matched[position].append(where)
        for key in _name_keys(query, words):
            exact = self._exact.get(key)
            if exact is not None:
                scores[exact] += NAME_EXACT
                if "name" not in matched[exact]:
                    matched[exact].insert(0, "name")
        if not scores:
            return []
        # Managers that match every query word outrank partial matches of any weight.
        ranked = sorted(
            scores,
            key=lambda p: (
                -(hits_per_manager[p] == len(words)) - (scores[p] >= NAME_EXACT),
                -scores[p],
                self._name_tokens[p],
                self._managers[p].name,
            ),
        )
        return [
            SearchHit(self._managers[p], round(scores[p], 2), tuple(matched[p]))
            for p in ranked[:limit]
        ]

    def _match_word(self, word: str) -> dict[int, tuple[float, str]]:
        found: dict[int, tuple[float, str]] = {}
        for token in {word, singular(word)}:
            for position, hit in self._postings.get(token, {}).items():
                if position not in found or found[position][0] < hit[0]:
                    found[position] = hit
        if len(word) >= 3:
            start = bisect.bisect_left(self._vocabulary, word)
            for token in self._vocabulary[start : start + MAX_PREFIX_TOKENS]:
                if not token.startswith(word):
                    break
                if token == word:
                    continue
                for position, (weight, where) in self._postings[token].items():
                    scaled = weight * PREFIX_FACTOR
                    if position not in found or found[position][0] < scaled:
                        found[position] = (scaled, where)
        return found

    def _match_fuzzy(self, word: str) -> dict[int, tuple[float, str]]:
        """Typos (``matrial``): the closest vocabulary words, at a discount."""
        if len(word) < 4:
            return {}
        found: dict[int, tuple[float, str]] = {}
        candidates = [
            token
            for length in range(len(word) - 2, len(word) + 3)
            for token in self._fuzzy_vocabulary.get(length, ())
        ]
        for token in difflib.get_close_matches(word, candidates, n=3, cutoff=0.8):
            for position, (weight, where) in self._postings[token].items():
                scaled = weight * PREFIX_FACTOR
                if position not in found or found[position][0] < scaled:
                    found[position] = (scaled, where)
        return found


def query_note(query: str) -> str | None:
    """What a search left out of ``query``, in words for its result; None when it read it all."""
    _, _, cut = _bounded(query)
    if not cut:
        return None
    return (
        f"The query was long: only its first {MAX_QUERY_WORDS} words (at most "
        f"{MAX_QUERY_CHARS:,} characters) were searched. Search with a few words that name the "
        "data."
    )


def _bounded(query: str) -> tuple[str, list[str], bool]:
    """The part of ``query`` a search reads, its words, and whether anything was left out."""
    text = query[:MAX_QUERY_CHARS]
    all_words = split_words(text)
    words = [word for word in all_words if word not in STOPWORDS] or all_words
    cut = len(query) > MAX_QUERY_CHARS or len(words) > MAX_QUERY_WORDS
    return text, words[:MAX_QUERY_WORDS], cut


def _words(*texts: str) -> list[str]:
    return [word for text in texts for word in split_words(text) if word not in STOPWORDS]


def _name_keys(query: str, words: list[str]) -> set[str]:
    """Keys that mean "the query is a manager name": ``purchase orders`` -> ``purchaseorder``."""
    joined = "".join(words)
    keys = {normalize_key(query), joined, singular(joined)}
    for suffix in ("manager", "managers", "type"):
        for key in list(keys):
            if key.endswith(suffix) and len(key) > len(suffix):
                stem = key[: -len(suffix)]
                keys.update({stem, singular(stem)})
    return keys

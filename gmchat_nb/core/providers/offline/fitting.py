"""Whether a recalled verified query answers the question, and its calls for it.

Recall found the entry relevant; this decides, from the words alone and deterministically,
whether running its calls *answers this question*, and with which filter values:

* **Values.** A filter value the saved question spells out ("made of *titanium*") is a slot the
  question fills: it must name the same value, or another one in the same place -- the same
  word(s) before it, and the same word after it where the saved question had one ("made of
  *steel*", "which *steel* parts") -- which then replaces it, written in the saved value's case
  ("Steel"); a number takes the place of a number. A value the saved question does not spell out
  ("out of stock" for a quantity of 0) is part of its meaning and stays. A value that a recalled
  definition names counts as named when the question uses the definition's term ("active
  projects", defined as "active or planned", names ``planned``).
* **Nothing more.** A question that asks for more than the verified query holds goes the normal
  road: a reference to the previous answer ("those"), a comparison the saved question does not
  make, a number, a quoted value or a capitalised name the entry does not explain, a word right
  after "in", "from", "by", "at", "with", "named", "called" or "like" that it does not explain
  ("suppliers in *japan*" for a query without a country), a value joined by "and"/"or" to another
  ("titanium or steel"), a negation or a superlative the saved question does not have, or a chart
  when the verified query draws none.

What the question adds in other words ("components" for parts, "built from" for "made of") is
the paraphrase recall matched, and does not stop it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from ...charts import ChartIntent
from ...charts.tool import CHART
from ...project.errors import ToolError
from ...project.names import split_words
from ...project.tools import TOOLS
from .charting import asks_for_chart
from .comparisons import SUPERLATIVE, TOP_N, Comparison
from .question import QuestionText
from .words import NEGATIONS, REFERENCE_WORDS, STOPWORDS, Token, find_words, is_number, tokenize

__all__ = ["Calls", "canonical", "fitted_calls"]

MAX_VALUE_WORDS: Final = 4  # the words a replacing value may have
_PLACES: Final = frozenset({"in", "from", "by", "at", "with", "named", "called", "like"})
_DETERMINERS: Final = frozenset({"a", "an", "the", "our", "my", "their", "its", "his", "her"})
_JOINS: Final = frozenset({"and", "or"})
_DENIALS: Final = NEGATIONS | {"without", "except", "excluding", "nor"}
_GENERIC_KEYS: Final = frozenset({"name", "id"})  # "material__name" is named by "material"
_IMPLIED: Final = object()  # a value the saved question does not spell out

Calls = list[tuple[str, dict[str, Any]]]


def fitted_calls(
    question: str,
    entry: Mapping[str, Any],
    definitions: Sequence[Mapping[str, Any]] = (),
    *,
    charts: bool = True,
) -> Calls | None:
    """The recalled verified query ``entry``'s calls (``(tool, arguments)``, ``chart`` calls
    only when ``charts``) with the question's values, or ``None`` when it does not answer
    ``question`` (the rules in the module docstring)."""
    calls = entry.get("calls")
    if not isinstance(calls, list):
        return None
    saved_calls = [
        (str(call.get("tool")), dict(call.get("arguments") or {}))
        for call in calls
        if isinstance(call, Mapping) and isinstance(call.get("arguments") or {}, Mapping)
    ]
    if not any(tool == TOOLS.query.name for tool, _ in saved_calls):
        return None
    if any(tool not in (TOOLS.query.name, CHART.name) for tool, _ in saved_calls):
        return None
    fit = _Fit(question, str(entry.get("question") or ""), definitions)
    fit.explain(str(entry.get("name") or ""))
    fit.explain_arguments(args for _, args in saved_calls)
    fit.subject(args for tool, args in saved_calls if tool == TOOLS.query.name)
    adapted: Calls = []
    for tool, args in saved_calls:
        if tool == CHART.name:
            try:  # the query it draws is this turn's, named when the round is sent
                drawn = replace(ChartIntent.from_args(args), query=None).to_dict()
            except ToolError:
                return None
            if charts:
                adapted.append((tool, drawn))
            continue
        filled = fit.filled(args)
        if filled is None:
            return None
        adapted.append((tool, filled))
    if charts and asks_for_chart(question) and all(tool != CHART.name for tool, _ in saved_calls):
        return None
    return adapted if fit.holds_nothing_more() else None


def _bases(tokens: Iterable[Token]) -> set[str]:
    return {token.base for token in tokens}


def _words(text: str) -> set[str]:
    """The lower-case singular words of ``text`` and of the names in it (``material__name``,
    ``unitPrice``)."""
    words = _bases(tokenize(text))
    for part in text.replace("__", " ").replace(".", " ").split():
        words.update(_bases(tokenize(" ".join(split_words(part)))))
    return words


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif value is not None and not isinstance(value, bool):
        yield value


def _number_text(value: int | float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _styled(saved: str, typed: str) -> str:
    """A replacing value written as the saved value is (``Titanium`` -> ``Steel``), unless the
    question wrote it with capitals of its own."""
    if typed != typed.lower():
        return typed
    if saved.isupper():
        return typed.upper()
    if saved.islower():
        return typed
    if all(word[:1].isupper() for word in saved.split()):
        return " ".join(word[:1].upper() + word[1:] for word in typed.split())
    return typed


class _Fit:
    """One question read against one verified query: what the entry explains, and its values
    filled in from the question."""

    def __init__(self, question: str, saved: str, definitions: Sequence[Mapping[str, Any]]) -> None:
        self.question = QuestionText(question)
        self.saved = QuestionText(saved)
        self.tokens = self.question.tokens
        asked = _bases(self.tokens)
        self.defined: set[str] = set()  # the words of the definitions the question uses
        for definition in definitions:
            term = _bases(tokenize(str(definition.get("term") or "")))
            if term and term <= asked:
                self.defined |= term | _words(str(definition.get("text") or ""))
        self.explained = _bases(self.saved.tokens) | self.defined
        self.values: set[int] = set()  # the question's tokens that are filter values
        self.implied: list[str] = []  # the filters whose values the question did not name
        self.managers: set[str] = set()
        self.fields: set[str] = set()

    def explain(self, text: str) -> None:
        self.explained |= _words(text)

    def subject(self, arguments: Iterable[Mapping[str, Any]]) -> None:
        """What the queries read: their managers' words and their fields' words."""
        for args in arguments:
            self.managers |= _words(str(args.get("manager") or ""))
            self.fields |= {str(leaf) for leaf in _leaves(args.get("fields"))}
        self.fields = set().union(*(_words(name) for name in self.fields)) if self.fields else set()

    def explain_arguments(self, arguments: Iterable[Mapping[str, Any]]) -> None:
        for args in arguments:
            for leaf in _leaves(args):
                text = _number_text(leaf) if isinstance(leaf, int | float) else str(leaf)
                self.explain(text)

    # -- values ----------------------------------------------------------------------------

    def filled(self, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ``query`` arguments with the question's values, or ``None``."""
        filled = dict(args)
        for key in ("filters", "exclude"):
            value = args.get(key)
            if isinstance(value, Mapping):
                done = self._fill(value)
                if done is None:
                    return None
                filled[key] = done
        return filled

    def _fill(self, filters: Mapping[str, Any]) -> dict[str, Any] | None:
        filled: dict[str, Any] = {}
        for key, value in filters.items():
            if isinstance(value, Mapping):
                nested = self._fill(value)
                if nested is None:
                    return None
                filled[key] = nested
            elif isinstance(value, list):
                named = [self._named(item) for item in value if not isinstance(item, bool)]
                if False in named:
                    return None
                if None in named or not named:
                    self.implied.append(str(key))
                filled[key] = value
            elif isinstance(value, bool) or value is None:
                self.implied.append(str(key))
                filled[key] = value
            elif isinstance(value, str | int | float):
                slot = self._slot(value)
                if slot is None:
                    return None
                if slot is _IMPLIED:
                    self.implied.append(str(key))
                    slot = value
                filled[key] = slot
            else:
                filled[key] = value
        return filled

    def _named(self, value: Any) -> bool | None:
        """A list's value: named by the question or a definition it uses (``True``), not
        spelled out by the saved question (``None``: implied), or neither (``False``)."""
        words = [t.base for t in tokenize(str(value))]
        if not words or not find_words(self.saved.tokens, words):
            return None
        found = find_words(self.tokens, words)
        for start, end in found:
            self.values.update(range(start, end))
        return bool(found) or set(words) <= self.defined

    def _slot(self, value: str | int | float) -> Any:
        """The value the question puts in ``value``'s place (itself when it names it), or
        ``None`` when it names none."""
        text = _number_text(value) if not isinstance(value, str) else value
        words = [t.base for t in tokenize(text)]
        spans = find_words(self.saved.tokens, words) if words else []
        if not spans:
            return _IMPLIED  # not spelled out: part of what the saved question means
        found = find_words(self.tokens, words)
        if found or set(words) <= self.defined:
            for start, end in found:
                self.values.update(range(start, end))
            return value
        numeric = not isinstance(value, str)
        if not numeric and any(is_number(word) for word in words):
            return None  # "500 EUR": a measurement is named whole or not at all
        placed = self._placed(spans[0], numeric=numeric)
        if placed is None:
            return None
        start, end = placed
        self.values.update(range(start, end))
        typed = self.question.question[self.tokens[start].start : self.tokens[end - 1].end]
        self.explain(typed)
        if isinstance(value, str):
            return _styled(value, typed)
        number = float(typed)
        return int(number) if isinstance(value, int) and number.is_integer() else number

    def _placed(self, span: tuple[int, int], *, numeric: bool) -> tuple[int, int] | None:
        """Where the question has another value in the place the saved question has ``span``:
        after the same one or two words, before the same word when the saved one has a word
        after it."""
        saved = self.saved.tokens
        start, end = span
        after = saved[end].base if end < len(saved) else None
        for size in (2, 1):
            if start < size:
                continue
            before = [token.base for token in saved[start - size : start]]
            places = [e for _, e in find_words(self.tokens, before)]
            if len(places) != 1:
                continue
            first = places[0]
            last = first
            while (
                last < len(self.tokens)
                and last - first < (1 if numeric else MAX_VALUE_WORDS)
                and self.tokens[last].lower not in STOPWORDS
                and self.tokens[last].base != after
                and (numeric or not is_number(self.tokens[last].text))
            ):
                last += 1
            if last == first or (
                after is not None and last < len(self.tokens) and self.tokens[last].base != after
            ):
                return None
            if after is not None and last == len(self.tokens):
                return None
            chosen = self.tokens[first:last]
            if numeric and not is_number(chosen[0].text):
                return None
            if _bases(chosen) <= _bases(saved):
                return None  # words the saved question has are no new value
            return first, last
        return None

    # -- nothing more ----------------------------------------------------------------------

    def holds_nothing_more(self) -> bool:
        """Whether the question asks for nothing the verified query does not hold."""
        tokens = self.tokens
        lowered = [token.lower for token in tokens]
        saved = {token.lower for token in self.saved.tokens}
        if any(word in REFERENCE_WORDS for word in lowered):
            return False
        if any(w in _DENIALS or w.startswith("non-") for w in lowered if w not in saved):
            return False
        for pattern in (SUPERLATIVE, TOP_N):
            if pattern.search(self.question.question) and not pattern.search(self.saved.question):
                return False
        if not self._same_comparisons() or not self._carried():
            return False
        for phrase in self.question.quoted(set()):
            if not _bases(tokenize(phrase)) <= self.explained:
                return False
        for index, token in enumerate(tokens):
            unexplained = token.base not in self.explained and token.lower not in STOPWORDS
            if is_number(token.text) and token.base not in self.explained:
                return False
            if unexplained and index > 0 and token.text[:1].isupper():
                return False
            if unexplained and self._after_place(index):
                return False
            if unexplained and not is_number(token.text) and self._joined_to_value(index):
                return False
        return True

    def _carried(self) -> bool:
        """Whether the question says what the query reads and each of its filters whose value
        it does not name. The manager is said by its name or by a word of the question's own
        ("components" for parts); such a filter by one of its words ("urgent"), by a word the
        saved question has besides what it reads ("out of stock"), or by another word of the
        question's own ("rush orders"). "How many purchase orders are there?" says nothing of
        urgency, so it asks for every order, and "List all materials" names no part."""
        asked = {
            token.base
            for token in self.tokens
            if token.lower not in STOPWORDS and not is_number(token.text)
        }
        read = self.managers | self.fields
        distinctive = {
            token.base
            for token in self.saved.tokens
            if token.lower not in STOPWORDS and not is_number(token.text)
        } - read
        unnamed = [key for key in self.implied if not (_words(key) - _GENERIC_KEYS) & asked]
        filters = 1 if unnamed and not distinctive & asked else 0
        manager = 0 if _bases(self.tokens) & self.managers else 1
        own = asked - read - self.explained
        return len(own) >= filters + manager

    def _same_comparisons(self) -> bool:
        saved = [(c.lookup, c.value) for c in self.saved.comparisons(set())]
        lookups = {lookup for lookup, _ in saved}
        asked: list[Comparison] = self.question.comparisons(set())
        return all(c.lookup in lookups for c in asked)

    def _after_place(self, index: int) -> bool:
        before = index - 1
        while before >= 0 and self.tokens[before].lower in _DETERMINERS:
            before -= 1
        return before >= 0 and self.tokens[before].lower in _PLACES

    def _joined_to_value(self, index: int) -> bool:
        """``titanium or steel``: a word joined to a filter value by "and" or "or"."""
        return any(
            0 <= other < len(self.tokens)
            and self.tokens[join].lower in _JOINS
            and other in self.values
            for join, other in ((index - 1, index - 2), (index + 1, index + 2))
        )


def canonical(calls: Calls) -> str:
    """Calls as one comparable text (a round's calls are compared with the plan's)."""
    return json.dumps(calls, sort_keys=True, default=str)

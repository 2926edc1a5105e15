"""The question as text: write requests, manager names, quoted values, comparisons, value phrases.

:class:`QuestionText` reads the question without any schema: where it names a manager, which
values it quotes, which comparisons it writes, and the runs of content words left over once the
schema-aware reading has claimed what it understood.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...project.names import split_words
from .comparisons import BETWEEN, COMPARISON, DATE_WORDS, IN_YEAR, Comparison, parse_op, value_of
from .words import STOPWORDS, Token, find_words, is_number, tokenize, word_forms

__all__ = ["MAX_QUESTION_CHARS", "OPINION_QUESTION", "WRITE_REQUEST", "QuestionText"]

# The part of a question the planner reads. Every step re-reads the question against every
# manager it names, so a pasted document would cost seconds of a shared event loop per step.
MAX_QUESTION_CHARS = 1000

# A write request: an imperative (or polite) data-changing verb. Read questions phrase the same
# verbs in the past ("created", "updated"), which these patterns leave alone.
_WRITE_VERBS = (
    r"create|delete|remove|update|change|modify|rename|insert|edit|drop|erase|replace|archive"
)
WRITE_REQUEST = re.compile(
    rf"\b(?:{_WRITE_VERBS})\b"
    r"|\badd\s+(?:a|an|new|the|some|another|\d+)\b|\badd\b.+\bto\b"
    r"|\bset\b.+\bto\b|\bmark\b.+\bas\b",
    re.IGNORECASE,
)
OPINION_QUESTION = re.compile(
    r"\bwhy\b|\bshould\b|\bopinion\b|\brecommend|\bdo you (?:think|believe|feel)\b"
    r"|\bbest\b|\bworst\b|\bbetter\b|\bworse\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")


class QuestionText:
    """The part of a question the planner reads, as tokens, and what it says without a schema."""

    def __init__(self, question: str) -> None:
        question = question.strip()
        self.cut = len(question) > MAX_QUESTION_CHARS
        self.question = _start_of(question) if self.cut else question
        self.tokens = tokenize(self.question)

    def manager_spans(self, name: str) -> list[tuple[int, int]]:
        """Where the question names the manager ``name``, as token index ranges."""
        spans: list[tuple[int, int]] = []
        for words in word_forms(name):
            spans.extend(find_words(self.tokens, words))
            if len(words) > 1 and len(words[-1]) >= 4:
                # "orders" alone still names PurchaseOrder when nothing else claims the word.
                spans.extend(find_words(self.tokens, words[-1:]))
        return spans

    def named_in_order(self, names: Iterable[str]) -> list[str]:
        """The managers of ``names`` the question names, the first named first. A full-name
        mention beats a partial one at the same place ("purchase orders" against "orders"),
        and the earliest mention is the subject: "Which parts does project Apollo use?" lists
        parts."""
        positions: dict[str, int] = {}
        for name in names:
            spans = self.manager_spans(name)
            if spans:
                positions[name] = min(start for start, _ in spans)
        return sorted(positions, key=lambda name: (positions[name], -len(split_words(name))))

    def tokens_in(self, start: int, end: int) -> list[int]:
        """The indices of the tokens inside the characters ``start:end``."""
        return [
            i for i, token in enumerate(self.tokens) if token.start >= start and token.end <= end
        ]

    def quoted(self, used: set[int]) -> list[str]:
        """The values the question quotes (their tokens join ``used``)."""
        phrases: list[str] = []
        for match in _QUOTED.finditer(self.question):
            text = (match.group(1) or match.group(2) or "").strip()
            if text:
                phrases.append(text)
                used.update(self.tokens_in(match.start(), match.end()))
        return phrases

    def comparisons(self, used: set[int]) -> list[Comparison]:
        """Ranges, years and comparisons the question writes (their tokens join ``used``)."""
        found: list[Comparison] = []
        taken: list[tuple[int, int]] = []
        for match in BETWEEN.finditer(self.question):
            low, low_unit = value_of(match, "")
            high, high_unit = value_of(match, "2")
            kind = "date" if match.group("date") else "number"
            indices = self.tokens_in(match.start(), match.end())
            span = (min(indices, default=0), max(indices, default=0) + 1)
            unit = low_unit or high_unit
            found.append(Comparison(*span, "gte", kind, low, unit, None, match.group()))
            found.append(Comparison(*span, "lte", kind, high, unit, None, match.group()))
            taken.append((match.start(), match.end()))
            used.update(indices)
        for match in IN_YEAR.finditer(self.question):
            # "placed in 2025": the whole year on a date field
            year = match.group("year")
            indices = self.tokens_in(match.start(), match.end())
            span = (min(indices, default=0), max(indices, default=0) + 1)
            phrase = match.group()
            found.append(Comparison(*span, "gte", "date", f"{year}-01-01", None, None, phrase))
            found.append(Comparison(*span, "lte", "date", f"{year}-12-31", None, None, phrase))
            taken.append((match.start(), match.end()))
            used.update(indices)
        for match in COMPARISON.finditer(self.question):
            if any(start <= match.start() < end for start, end in taken):
                continue
            parsed = parse_op(match.group("op"))
            if parsed is None:
                continue
            lookup, hint = parsed
            value, unit = value_of(match, "")
            kind = "date" if match.group("date") else "number"
            if match.group("op").lower() == "on" and kind != "date":
                continue
            end = match.end("num") if kind == "number" and unit is None else match.end()
            op_words = set(match.group("op").lower().split())
            if kind == "number" and unit is None and op_words & DATE_WORDS:
                year = int(float(value)) if re.fullmatch(r"\d{4}", value) else None
                if year is not None:  # "before 2025": a year on a date field
                    kind = "date"
                    value = f"{year}-01-01" if lookup in ("lt", "gte") else f"{year}-12-31"
            indices = self.tokens_in(match.start(), end)
            if not indices:
                continue
            phrase = self.question[match.start() : end]
            found.append(
                Comparison(min(indices), max(indices) + 1, lookup, kind, value, unit, hint, phrase)
            )
            used.update(indices)
        return found

    def phrases(self, used: set[int]) -> list[str]:
        """Consecutive unclaimed content words: the values to locate."""
        phrases: list[str] = []
        current: list[Token] = []
        for index, token in enumerate(self.tokens):
            content = (
                index not in used
                and token.lower not in STOPWORDS
                and not is_number(token.text)
                and not (token.lower.endswith("n't"))
            )
            if content and current:
                previous = current[-1]
                punctuated = self.question[previous.end : token.start].strip() != ""
                # "Artemis planned" is a name and a word; "Germany, Sweden" two names.
                recased = previous.text[:1].isupper() != token.text[:1].isupper()
                if punctuated or recased:
                    phrases.append(" ".join(t.text for t in current))
                    current = []
            if content:
                current.append(token)
            elif current:
                phrases.append(" ".join(t.text for t in current))
                current = []
        if current:
            phrases.append(" ".join(t.text for t in current))
        return list(dict.fromkeys(phrases))


def _start_of(question: str) -> str:
    """The first :data:`MAX_QUESTION_CHARS` characters of ``question``, not ending mid-word."""
    start = question[:MAX_QUESTION_CHARS]
    space = start.rfind(" ")
    return start[:space] if space > MAX_QUESTION_CHARS // 2 else start

"""Answers that only repeat what the model was given: the question, its prompts, or both.

A small pretrained model asked a question answers by continuing its prompt; the answer-sense judge
(:func:`~.judges.judge_answer_sense`) fails such an answer with the reason :func:`echo_issue`
gives, and passes any answer that adds something of its own (a number, a negation, a name, an
expected value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["echo_issue", "plain_numbers"]

# a thousands separator between digit groups: "1,450", "1 450" (narrow/no-break spaces), "1'450"
_DIGIT_GROUP = re.compile(r"(?<=\d)[,\u00a0\u202f'](?=\d{3}(?!\d))")


def plain_numbers(text: str) -> str:
    """``text`` with thousands separators between digit groups removed."""
    return _DIGIT_GROUP.sub("", text)


# words that answer nothing: an echo of the question may add them ("Question: ...", "Sure, ...")
_FILLER = frozenset(
    """a an the is are was were be been being am of in on at to for from by with about as into and
    or but so then than that this these those there here it its what which who whom whose where
    when why how do does did can could would should will shall may might must i me my we our us
    you your they them their he she his her please tell show list give find know want need like
    let question answer user assistant system q ok okay sure well hi hello thanks
    thank""".split()  # noqa: SIM905
)
# first words of a question that is answered by yes or no ("Is Bolt made of steel?"): restating
# it as a statement ("Bolt is made of steel.") is an answer, not an echo
_YES_NO = frozenset(
    "is are was were am do does did can could has have had will would should".split()  # noqa: SIM905
)
_INTERROGATIVE = _YES_NO | frozenset(
    "what which who whom whose where when why how".split()  # noqa: SIM905
)
_ECHO_SHARE = 0.8  # at least this share of an echo's words are the question's
_MIN_QUESTION_WORDS = 3  # "Hello" answered "Hello" is a greeting, not an echo
_SHINGLE = 4  # words per shingle when comparing an answer with a system prompt
_MIN_PROMPT_ECHO = 6  # answers shorter than this (in words) are not compared with the prompt
_MOSTLY_ECHO = 0.6  # share of an answer copied from the question and prompts that makes an echo
_NEGATIONS = frozenset({"no", "not", "none", "nothing", "zero", "neither", "never", "nobody"})
_NAME = re.compile(r"\b[A-Z][^\W_]*\b(?!:)")


def _words(text: str) -> list[str]:
    """Lowercased words, punctuation and thousands separators dropped ("1,450" is one word)."""
    return re.findall(r"[^\W_]+(?:'[^\W_]+)*", plain_numbers(text.replace("\u2019", "'")).lower())


def _without_runs(words: Sequence[str], run: Sequence[str]) -> tuple[list[str], int]:
    """``words`` with every occurrence of the sequence ``run`` removed, and how many there were."""
    out: list[str] = []
    found = position = 0
    size = len(run)
    while position < len(words):
        if size and list(words[position : position + size]) == list(run):
            found += 1
            position += size
        else:
            out.append(words[position])
            position += 1
    return out, found


def _restates(words: Sequence[str], question: Sequence[str]) -> bool:
    """``words`` add nothing to ``question``: each is one of its words or a filler, at least
    ``_ECHO_SHARE`` of them are its words, and they read as the question (they open with its
    question word) or, unless it asks yes or no, carry all of its content words."""
    if not words:
        return False
    asked = set(question)
    if any(word not in asked and word not in _FILLER for word in words):
        return False
    if sum(word in asked for word in words) < _ECHO_SHARE * len(words):
        return False
    if words[0] == question[0] and question[0] in _INTERROGATIVE:
        return True
    content = {word for word in question if word not in _FILLER}
    said = {word for word in words if word not in _FILLER}
    return question[0] not in _YES_NO and bool(content) and said == content


def _shingles(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}


def _echoed_words(words: Sequence[str], sources: Iterable[str]) -> list[bool]:
    """For each word, whether a run of ``_SHINGLE`` answer words around it appears in one of
    ``sources`` (prompts the model was given)."""
    known: set[tuple[str, ...]] = set()
    for source in sources:
        known |= _shingles(_words(source))
    echoed = [False] * len(words)
    for start in range(len(words) - _SHINGLE + 1):
        if tuple(words[start : start + _SHINGLE]) in known:
            echoed[start : start + _SHINGLE] = [True] * _SHINGLE
    return echoed


def _mostly_echo(
    answer: str,
    rest: Sequence[str],
    prompts: Sequence[str],
    expected: Iterable[Any],
) -> bool:
    """At least ``_MOSTLY_ECHO`` of the answer is the question's runs and runs of its prompts,
    and what is left holds no number, negation, name or expected value: a small model that
    copies its prompt and trails off into junk ("... Records: [] iatrics") says nothing."""
    words = _words(answer)
    if len(words) < _MIN_PROMPT_ECHO:
        return False
    echoed = _echoed_words(rest, prompts)
    left = [word for word, copied in zip(rest, echoed, strict=True) if not copied]
    if len(left) > (1 - _MOSTLY_ECHO) * len(words):
        return False
    values = {word for value in expected for word in _words(str(value))}
    # a capitalised word that is no label ("Records:") may name a record: the answer gave data
    names = {name.lower() for name in _NAME.findall(answer)} - _FILLER
    return not any(
        word in values
        or word in names
        or word in _NEGATIONS
        or any(char.isdigit() for char in word)
        for word in left
    )


def _repeats_prompt(words: Sequence[str], prompt: str) -> bool:
    """At least ``_ECHO_SHARE`` of the answer's runs of ``_SHINGLE`` words are the prompt's."""
    if len(words) < _MIN_PROMPT_ECHO:
        return False
    mine = _shingles(words)
    return len(mine & _shingles(_words(prompt))) >= _ECHO_SHARE * len(mine)


def echo_issue(
    answer: str,
    question: str = "",
    system_prompts: Iterable[str] = (),
    expected_values: Iterable[Any] = (),
) -> str | None:
    """Why ``answer`` only repeats the question or a system prompt, or None when it does not.

    An echo is the question itself (case, white space and punctuation aside), the question
    repeated, or words that restate it adding none of their own (no value, number, name or
    negation that the question does not hold); or an answer whose runs of words mostly come
    from a system prompt; or an answer mostly copied from the question and the prompts whose
    remainder holds no number, negation or expected value. An answer that reuses the question's
    words to give the data ("Parts made of steel: Bolt, Nut.") is not an echo, nor a statement
    answering a yes-or-no question.
    """
    words = _words(answer)
    if not words:
        return None  # an empty answer is reported as missing, not as an echo
    rest = words
    asked = _words(question)
    if len(asked) >= _MIN_QUESTION_WORDS:
        rest, found = _without_runs(words, asked)
        if found and all(word in _FILLER for word in rest):
            return "the answer only repeats the question"
        if _restates(rest, asked):
            return "the answer only repeats the question"
    prompts = list(system_prompts)
    if any(_repeats_prompt(rest, prompt) for prompt in prompts):
        return "the answer only repeats the system prompt"
    if _mostly_echo(answer, rest, prompts, expected_values):
        return "the answer mostly repeats the question and the prompt, and adds nothing"
    return None

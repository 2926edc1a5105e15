"""What the offline assistant says: refusals, the long-question note, and the answer itself.

An answer comes from the final query's result alone; write requests and questions for reasons
or opinions get an honest refusal, since the assistant never calls ``mutate`` and only looks up
records.
"""

from __future__ import annotations

import re
from typing import Any

from ...charts import Table
from .conversation import Call
from .prose import describe_filter, humanize, manager_noun, row_text
from .question import MAX_QUESTION_CHARS
from .reading import RESULT_LIMIT, Reading

__all__ = [
    "LONG_QUESTION_NOTE",
    "OPINION_REFUSAL",
    "WRITE_REFUSAL",
    "answer_text",
    "query_answer",
    "write_refusal",
]

LONG_QUESTION_NOTE = (
    f"(Your question was long: I read only its first {MAX_QUESTION_CHARS:,} characters.)"
)

WRITE_REFUSAL = (
    "I can't do that: the offline assistant only reads data and never changes it (no creating, "
    "updating or deleting). Changing data needs a model-backed provider with the mutation "
    "allow-listed, and every change still waits for your confirmation."
)
# How much of the request a refusal repeats: enough to show what was understood ("update the
# Apollo record"), never a pasted paragraph.
_ECHO_CHARS = 80
_SENTENCE_END = re.compile(r"[.!?\n]")


def write_refusal(question: str, start: int) -> str:
    """The write refusal, naming what was asked from ``start`` (where the write verb begins) to
    the end of that sentence, so the user sees which change was understood and refused."""
    rest = question[start:]
    end = _SENTENCE_END.search(rest)
    sentence = rest[: end.start() if end else len(rest)]
    asked = " ".join("".join(c if c.isprintable() else " " for c in sentence).split())
    if len(asked) > _ECHO_CHARS:
        asked = asked[:_ECHO_CHARS].rsplit(" ", 1)[0] + "…"
    if not asked:
        return WRITE_REFUSAL
    asked = asked[0].lower() + asked[1:]
    return WRITE_REFUSAL.replace("I can't do that", f"I can't {asked}", 1)


OPINION_REFUSAL = (
    "I can't answer that: the offline assistant only looks up records in the project's data; it "
    "cannot explain reasons or give opinions. Ask which records match something instead, for "
    'example "Which parts are made of steel?".'
)


def answer_text(
    row: str,
    result: dict[str, Any],
    filters: dict[str, Any],
    label: str,
    shown: list[str],
    reading: Reading,
) -> str:
    """The answer to the question from the final query's ``result`` alone."""
    rows = [item for item in result.get("data") or () if isinstance(item, dict)]
    total = result.get("total_count")
    has_more = bool(result.get("has_more"))
    if len(rows) > reading.limit:  # "the densest material": asked for two, show one
        keep = reading.limit
        if reading.order is not None:  # a tie with the last shown row is shown too
            key = reading.order[0]
            while keep < len(rows) and rows[keep].get(key) == rows[keep - 1].get(key):
                keep += 1
        rows = rows[:keep]
        has_more = has_more or keep < len(result.get("data") or ())
    count = total if isinstance(total, int) else len(rows)
    conditions = " and ".join(describe_filter(key, value) for key, value in filters.items())
    if not rows:
        if conditions:
            return f"No {manager_noun(row, 2)} match {conditions}."
        return f"There are no {manager_noun(row, 2)}."
    at_least = "at least " if not isinstance(total, int) and has_more else ""
    verb = "is" if count == 1 else "are"
    head = f"There {verb} {at_least}{count} {manager_noun(row, count)}"
    if conditions:
        head += f" where {conditions}"
    if reading.order is not None:
        name, descending = reading.order
        words = ("latest", "earliest") if name in reading.dates else ("highest", "lowest")
        head += f", ordered by {humanize(name)} ({words[0] if descending else words[1]} first)"
    items = ", ".join(row_text(item, label, shown) for item in rows)
    text = f"{head}: {items}"
    if has_more:
        of = count if isinstance(total, int) else "more"
        text += f" (showing the first {len(rows)} of {of})"
    text += "."
    if reading.unordered is not None:
        text += (
            f' I could not tell what "{reading.unordered}" should sort by, so the list is '
            "not ordered."
        )
    if result.get("complete") is False and not has_more:
        text += " The server's answer may not be complete, so there may be more."
    return text


def query_answer(call: Call) -> str:
    """The answer from one ``query`` call whose arguments came from elsewhere (a planned turn's
    plan, a recalled verified query): no search or schema came before it, so the query's own
    arguments say what its rows are."""
    row = str(call.args.get("manager") or "")
    if not call.ok or not isinstance(call.result, dict):
        return f"The query on {row} failed: {call.error_message}"
    named = [name for name in call.args.get("fields") or () if isinstance(name, str)]
    filters = call.args.get("filters")
    reading = Reading()
    rows = Table(item for item in call.result.get("data") or () if isinstance(item, dict))
    reading.dates = frozenset(name for name, kind in rows.kinds.items() if kind == "temporal")
    order = call.args.get("order_by")
    if isinstance(order, list) and order and isinstance(order[0], str):
        reading.order = (order[0].removeprefix("-"), order[0].startswith("-"))
    limit = call.args.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        reading.limit = min(limit, RESULT_LIMIT)
    return answer_text(
        row,
        call.result,
        dict(filters) if isinstance(filters, dict) else {},
        named[0] if named else "id",
        named[1:],
        reading,
    )

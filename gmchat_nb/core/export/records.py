"""The Markdown cells of an exported conversation: the title, each question, each answer with
its evidence table, its "Verified query" mark and its caption (cost, model), and each change as a
record of what was changed, with which input, when, by whose decision and how it ended.

Every text from a model, from data or from a person goes through :mod:`.markdown` (a change's
input shown with the confirmation card's escapes first, :func:`mark_invisible`); the structure
around it (headings, tables, emphasis) is ours.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ..guards.invisible import HIDDEN_WARNING, mark_invisible
from ..providers.pricing import FREE_SOURCES
from ..turns import ChangeRecord
from . import markdown

__all__ = [
    "Change",
    "Evidence",
    "Header",
    "answer_cell",
    "change_cell",
    "cost_text",
    "moment",
    "question_cell",
    "title_cell",
]

_MAX_INPUT_ROWS: Final = 200  # a change's input shown key by key, at most this many values
_FREE: Final = frozenset(FREE_SOURCES.values())
_VIA: Final = {
    "browser": "a browser session",
    "token": "a request with the server's token",
    "kernel": "a notebook kernel",
    "socket": "the chat's WebSocket",
    "elicitation": "the agent host's prompt",
    "terminal": "the terminal",
}


@dataclass(frozen=True, slots=True)
class Header:
    """What the title cell says of the conversation and of the export."""

    title: str
    conversation_id: str
    project: str
    provider: str
    models: Sequence[str]
    started_at: float
    exported_at: float
    version: str
    turns: int
    unfinished: int
    executed: bool = False
    """The notebook is run at export and saved with its outputs."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """One query of an answer's evidence table: the DataFrame its cell makes (``None`` when no
    cell could be written), its manager, filters and rows."""

    frame: str | None
    manager: str
    filters: Any
    rows: int
    total_count: int | None


@dataclass(frozen=True, slots=True)
class Change:
    """One change a turn asked for, as the journal and the store's records tell it."""

    mutation: str
    input: Any
    confirmation_id: str | None
    """The confirmation's id (the call's), ``None`` for a change that asked nobody."""
    result: Any
    """The ``mutate`` call's result (``status`` executed, cancelled or error)."""
    record: ChangeRecord | None
    """Who decided it, how and when (the store keeps it past ``cleanup``)."""
    asked_by: str
    ended_at: float | None


def moment(at: float | None) -> str:
    """A time as a reader reads it, in UTC (``2026-05-01 09:30:12 UTC``); ``unknown`` for none."""
    if at is None or not math.isfinite(at):
        return "unknown"
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [_row(*head), _row(*("---" for _ in head)), *(_row(*row) for row in rows)]


def title_cell(header: Header) -> str:
    """The first cell: the conversation, where its project is (without a password), the
    provider and models, when it started and was exported, and gmchat_nb's version."""
    plain = markdown.plain
    models = ", ".join(header.models) or "none asked"
    rows = [
        ("project", plain(header.project)),
        ("provider", plain(header.provider)),
        ("models", plain(models)),
        ("conversation", plain(header.conversation_id)),
        ("started", moment(header.started_at)),
        ("exported", moment(header.exported_at)),
        ("gmchat_nb", plain(header.version)),
    ]
    lines = [
        f"# {plain(header.title or 'A gmchat_nb conversation')}",
        "",
        f"{header.turns} question{'' if header.turns == 1 else 's'} asked of the project, "
        "exported as a notebook: each query runs again on the project and compares its rows "
        "with those the chat read; each chart is drawn again from them. Set the project and its "
        "credentials in the parameters cell below, then run all cells.",
        "",
        *_table(("", ""), rows),
    ]
    if header.executed:
        lines += ["", "*Its outputs are what the project gave when it was exported.*"]
    if header.unfinished:
        lines += [
            "",
            f"*{header.unfinished} unfinished turn{'' if header.unfinished == 1 else 's'} "
            "(running, or waiting for a decision) not exported.*",
        ]
    return "\n".join(lines)


def question_cell(number: int, question: str) -> str:
    """A turn's question as a heading."""
    return f"## {number}. {markdown.plain(question) or '(no question stored)'}"


def answer_cell(
    answer: str,
    evidence: Sequence[Evidence],
    *,
    trusted: Mapping[str, Any] | None,
    error: Mapping[str, Any] | None,
    cost: Mapping[str, Any] | None,
    ended_at: float | None,
) -> str:
    """A turn's answer: the verified query it re-ran, the answer (Markdown, defused), the
    error that ended it, its evidence table and a caption (cost, models, when)."""
    lines: list[str] = []
    if trusted is not None and isinstance(trusted.get("name"), str):
        lines += [f"**Verified query: {markdown.plain(trusted['name'])}**", ""]
    if answer.strip():
        lines += [markdown.answer(answer), ""]
    if error is not None:
        message = str(error.get("message") or "The turn ended with an error.")
        code = str(error.get("code") or "chat_error")
        lines += [f"*The turn ended with an error ({markdown.plain(code)}): "
                  f"{markdown.plain(message)}*", ""]  # fmt: skip
    elif not answer.strip():
        lines += ["*No answer was written.*", ""]
    if evidence:
        rows = [
            (
                f"`{item.frame}`" if item.frame else "not re-run",
                markdown.plain(item.manager),
                markdown.plain(_json(item.filters)) if item.filters else "none",
                _rows(item.rows, item.total_count),
            )
            for item in evidence
        ]
        lines += _table(("data", "manager", "filters", "rows"), rows)
        lines.append("")
    lines.append(f"*{markdown.plain(_caption(cost, ended_at))}*")
    return "\n".join(lines)


def _rows(rows: int, total: int | None) -> str:
    return f"{rows} of {total}" if total is not None and total != rows else str(rows)


def _caption(cost: Mapping[str, Any] | None, ended_at: float | None) -> str:
    parts = [f"cost {cost_text(cost)}"]
    models = cost.get("models") if cost else None
    if isinstance(models, list) and models:
        parts.append(f"model {', '.join(str(model) for model in models)}")
    parts.append(f"answered {moment(ended_at)}")
    return " · ".join(parts)


def cost_text(cost: Mapping[str, Any] | None) -> str:
    """A turn's cost as the widget's header writes it: ``—`` when a price is unknown,
    ``$0.00 (offline)`` for providers that charge nothing, ``<$0.0001``, ``$0.0042``."""
    usd = cost.get("usd") if cost else None
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not math.isfinite(usd):
        return "—"
    if usd < 0:
        return "—"
    if usd == 0:
        raw = cost.get("sources") if cost else None
        sources = [str(source) for source in raw] if isinstance(raw, list) else []
        free = sources and all(source in _FREE for source in sources)
        return f"$0.00 ({', '.join(sources)})" if free else "$0.00"
    if usd < 0.0001:
        return "<$0.0001"
    if usd < 1:
        return f"${re.sub('0{1,2}$', '', f'{usd:.4f}')}"
    return f"${usd:,.2f}"


def change_cell(change: Change) -> str:
    """A change as a record, never code: what, with which input (every invisible character
    written out as on the confirmation card), when, by whose decision, with which
    confirmation, and how it ended."""
    record = change.record
    rows = [("change", markdown.plain(mark_invisible(change.mutation)[0]))]
    rows.append(("outcome", markdown.plain(_outcome(change))))
    if change.confirmation_id is None:
        ran = isinstance(change.result, Mapping) and change.result.get("status") == "executed"
        nobody = "the settings allow it without a confirmation" if ran else "it was refused first"
        rows.append(("decided by", f"nobody was asked: {nobody}"))
        rows.append(("asked by", markdown.plain(change.asked_by)))
    else:
        rows.append(("confirmation", markdown.plain(change.confirmation_id)))
        if record is not None:
            via = _VIA.get(record.decided_via, record.decided_via)
            rows.append(("decided by", markdown.plain(f"{record.decided_by}, in {via}")))
            rows.append(("decided at", moment(record.decided_at)))
        else:
            rows.append(("decided by", "nobody: no decision was recorded"))
    ended = record.resolved_at if record is not None and record.resolved_at else change.ended_at
    rows.append(("ended", moment(ended)))
    values, marked = _input_rows(change.input)
    lines = ["### A change to the project's data", "", *_table(("", ""), rows), ""]
    lines += _table(("input", "value"), values) if values else ["*No input.*"]
    if marked:
        lines += ["", f"> {markdown.plain(HIDDEN_WARNING)}"]
    return "\n".join(lines)


def _outcome(change: Change) -> str:
    result = change.result if isinstance(change.result, Mapping) else {}
    status, reason = result.get("status"), result.get("reason")
    state = change.record.state if change.record is not None else None
    if status == "executed":
        return "executed"
    if status == "cancelled" and reason == "user_rejected":
        return "declined: nothing was changed"
    if status == "cancelled":
        return f"cancelled ({reason or 'no reason given'}): nothing was changed"
    if status == "error":
        return f"not run: {result.get('code') or 'error'}"
    if state is not None:
        return state
    return "unknown: the turn ended before the change's result was recorded"


def _input_rows(value: Any) -> tuple[list[tuple[str, str]], bool]:
    """Each leaf of a change's input as (dotted path, JSON value), every invisible character
    written out; and whether any was."""
    rows: list[tuple[str, str]] = []
    marked_any = False
    stack: list[tuple[str, Any]] = [("", value)]
    while stack and len(rows) < _MAX_INPUT_ROWS:
        path, item = stack.pop()
        if isinstance(item, Mapping) and item:  # its keys in order: pushed last to first
            pairs = [(f"{path}.{key}" if path else str(key), v) for key, v in item.items()]
            stack.extend(reversed(pairs))
            continue
        if isinstance(item, list) and item:
            pairs = [(f"{path}.{n}" if path else str(n), v) for n, v in enumerate(item)]
            stack.extend(reversed(pairs))
            continue
        shown_path, path_marked = mark_invisible(path or "(the input)")
        shown_value, value_marked = mark_invisible(item if isinstance(item, str) else _json(item))
        marked_any = marked_any or path_marked or value_marked
        rows.append((markdown.plain(shown_path), markdown.plain(shown_value) or "(empty)"))
    if stack:
        rows.append(("…", f"{len(stack)} more values not shown"))
    return rows, marked_any


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)

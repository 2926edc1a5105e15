"""``gmchat ask``: one chat turn in a terminal — tool steps, tables, the streamed answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from .chat import Chat
from .core.events import (
    Chart,
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    Notice,
    Recall,
    StreamReset,
    TextChunk,
    ToolCall,
    ToolResult,
)
from .core.frames import flatten_row
from .core.guards.intent import UNREAD_REQUEST_NOTE
from .core.guards.invisible import HIDDEN_WARNING, mark_invisible

__all__ = ["ask_in_terminal", "recall_line", "render_table"]

TABLE_ROWS = 10
CELL_WIDTH = 28
CHART_TITLE = 120


async def ask_in_terminal(
    chat: Chat,
    question: str,
    *,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    decide: Callable[[ConfirmMutation], bool] | None = None,
) -> int:
    """Stream one turn to ``out``; returns 0 when it answered, 1 when it ended with an error.

    Confirmations are asked with ``decide`` (by default a y/N prompt on the terminal; without
    a terminal the answer is no).
    """
    decide = decide or _ask_yes_no
    failed = False
    numbers: dict[str, int] = {}  # tool call id -> its number in the turn, to pair results
    async for event in chat.stream(question):
        if as_json:
            print(json.dumps(event.to_dict(), default=str), file=out, flush=True)
        else:
            _render(event, out, numbers)
        if isinstance(event, ConfirmMutation):
            chat.confirm(event.id, decide(event), via="terminal")
        failed = failed or isinstance(event, Error)
    return 1 if failed else 0


def _render(event: ChatEvent, out: TextIO, numbers: dict[str, int]) -> None:
    RENDERERS[event.type](event, out, numbers)


def _text_chunk(event: TextChunk, out: TextIO, numbers: dict[str, int]) -> None:
    out.write(event.content)
    out.flush()


def _stream_reset(event: StreamReset, out: TextIO, numbers: dict[str, int]) -> None:
    # a terminal cannot take back what it printed: it says the text above is withdrawn
    print(f"\n[the answer above was withdrawn: {event.reason}; asking again]", file=out)


def _notice(event: Notice, out: TextIO, numbers: dict[str, int]) -> None:
    print(f"\n· {event.message}", file=out)


def _tool_call(event: ToolCall, out: TextIO, numbers: dict[str, int]) -> None:
    numbers[event.id] = number = len(numbers) + 1
    print(f"→ [{number}] {event.name} {json.dumps(event.args, ensure_ascii=False)}", file=out)


def _tool_result(event: ToolResult, out: TextIO, numbers: dict[str, int]) -> None:
    label = f"← [{numbers.get(event.id, '?')}] {event.name}"
    print(f"{label}\n{_result_text(event)}", file=out)


def _chart(event: Chart, out: TextIO, numbers: dict[str, int]) -> None:
    # a terminal cannot draw it: what it is and where to see it (the title is data: no control
    # characters reach the terminal)
    title = "".join(c if c.isprintable() else " " for c in event.title[:CHART_TITLE])
    mark = "".join(c for c in str(event.intent.get("mark", "chart"))[:20] if c.isprintable())
    count = f"{event.marks} mark{'' if event.marks == 1 else 's'}"
    print(f"▨ chart: {title} ({mark}, {count}); open the turn in a notebook to see it", file=out)


def _confirm_mutation(event: ConfirmMutation, out: TextIO, numbers: dict[str, int]) -> None:
    # every character as stored: a bidi override must not make ".exe" read as ".pdf"
    shown, marked = mark_invisible(
        f"{event.mutation} {json.dumps(event.input, ensure_ascii=False)}"
    )
    print(f"? {_printable(shown, 100_000)} needs your confirmation", file=out)
    if marked:
        print(f"  ! {HIDDEN_WARNING}", file=out)
    if (event.provenance or {}).get("request_unread") is True:
        print(f"  ! {UNREAD_REQUEST_NOTE}", file=out)


# how the recall line names each kind of entry: (one, several)
RECALLED_KINDS: dict[str, tuple[str, str]] = {
    "verified_query": ("verified query", "verified queries"),
    "definition": ("definition", "definitions"),
    "note": ("note", "notes"),
}
RECALLED_NAMES = 5  # names listed on the recall line; the rest are counted


def _printable(text: Any, limit: int) -> str:
    # names are people's data: no control character reaches the terminal
    return "".join(c if c.isprintable() else " " for c in str(text)[:limit])


def recall_line(items: list[dict[str, Any]]) -> str | None:
    """``Recalled 2 verified queries, 1 definition: name, name`` (``None`` when nothing was)."""
    if not items:
        return None
    counts: dict[str, int] = {}
    for item in items:
        counts[str(item.get("kind"))] = counts.get(str(item.get("kind")), 0) + 1
    parts = []
    ordered = [kind for kind in RECALLED_KINDS if kind in counts]  # kinds in one order
    ordered += [kind for kind in counts if kind not in RECALLED_KINDS]
    for kind in ordered:
        count = counts[kind]
        one, several = RECALLED_KINDS.get(kind, (kind, kind))
        parts.append(f"{count} {one if count == 1 else several}")
    names = [_printable(item.get("name", ""), 80) for item in items[:RECALLED_NAMES]]
    more = len(items) - len(names)
    listed = ", ".join(names) + (f" and {more} more" if more > 0 else "")
    return f"Recalled {', '.join(parts)}: {listed}"


def _recall(event: Recall, out: TextIO, numbers: dict[str, int]) -> None:
    line = recall_line(event.items)
    if line is not None:  # nothing relevant: nothing to say
        print(f"✦ {line}", file=out)


def _done(event: Done, out: TextIO, numbers: dict[str, int]) -> None:
    usage = event.usage
    print(file=out)  # the streamed answer ends without a newline
    if event.trusted:  # the answer re-ran a verified query (done.trusted)
        print(f"✓ Verified query: {_printable(event.trusted.get('name', ''), 200)}", file=out)
    print(
        f"[{usage.get('input_tokens', 0)} input / {usage.get('output_tokens', 0)} output tokens]",
        file=out,
    )


def _error(event: Error, out: TextIO, numbers: dict[str, int]) -> None:
    retry = f" (retry in {event.retry_after_seconds} s)" if event.retry_after_seconds else ""
    print(f"\n✗ {event.message} [{event.code}]{retry}", file=out)


# How the terminal shows each event type (tests/test_architecture.py checks that every public
# type of core/events.py has one here).
RENDERERS: dict[str, Callable[[Any, TextIO, dict[str, int]], None]] = {
    TextChunk.type: _text_chunk,
    ToolCall.type: _tool_call,
    ToolResult.type: _tool_result,
    ConfirmMutation.type: _confirm_mutation,
    Done.type: _done,
    Error.type: _error,
    StreamReset.type: _stream_reset,
    Notice.type: _notice,
    Chart.type: _chart,
    Recall.type: _recall,
}


def _result_text(event: ToolResult) -> str:
    result = event.result
    if isinstance(result, dict) and result.get("status") == "error":
        return f"  ✗ {result.get('code')}: {result.get('message')}"
    if isinstance(result, dict) and isinstance(result.get("data"), list):
        rows = result["data"]
        total = result.get("total_count")
        shown = f"{len(rows)} row(s)" + (f" of {total}" if total is not None else "")
        return render_table(rows) + f"\n  ({shown}{', complete' if result.get('complete') else ''})"
    if isinstance(result, list):
        return (
            "  "
            + ", ".join(str(item.get("manager", item)) for item in result if isinstance(item, dict))
            or "  (nothing)"
        )
    if isinstance(result, dict) and "path" in result:
        return f"  path: {result.get('path')}"
    if isinstance(result, dict) and "manager" in result:
        return f"  schema of {result['manager']}: {len(result.get('fields', {}))} fields, {len(result.get('relations', {}))} relations"
    return "  " + json.dumps(result, ensure_ascii=False, default=str)[:200]


def render_table(rows: list[dict[str, Any]], limit: int = TABLE_ROWS) -> str:
    """A plain-text table of the first ``limit`` rows (nested relations as dotted columns)."""
    flat = [flatten_row(row) for row in rows[:limit]]
    if not flat:
        return "  (no rows)"
    columns = list(dict.fromkeys(column for row in flat for column in row))
    cells = [[_cell(row.get(column)) for column in columns] for row in flat]
    widths = [
        max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)
    ]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  " + "  ".join("-" * w for w in widths))
    lines.extend(
        "  " + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells
    )
    if len(rows) > limit:
        lines.append(f"  … {len(rows) - limit} more")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, list):
        text = ", ".join("" if item is None else str(item) for item in value)
    else:
        text = "" if value is None else str(value)
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _ask_yes_no(event: ConfirmMutation) -> bool:
    if not sys.stdin.isatty():
        print("  (no terminal to confirm on: rejected)", file=sys.stderr)
        return False
    answer = input(f"  Run {event.mutation} {json.dumps(event.input)}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")

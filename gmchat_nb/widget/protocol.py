"""The messages between the chat widget's kernel side (Python) and its front end (chat.js).

Everything travels as anywidget custom messages (``widget.send`` / ``model.send``), never as
trait updates while a turn streams (a list trait would resend the whole transcript per chunk).
The kernel keeps the canonical state; a view that appears later (a page reload, a second view)
sends ``hello`` and receives a ``snapshot``.

Front end -> kernel (``type`` and fields):

* ``hello`` — a view was rendered; answer with a ``snapshot``.
* ``ask`` {text} — run a turn (refused with an ``error`` while one runs).
* ``stop`` — cancel the running turn.
* ``confirm`` {call_id, ok} — resolve a pending mutation confirmation (``call_id``, not ``id``:
  ipykernel routes comm replies by a top-level ``id``).
* ``to_frame`` {table, name?} — bind a query's DataFrame to a kernel variable (default: it is
  ``chat.frames[-1]`` anyway); answered with ``frame_bound``.
* ``table_page`` {table, offset, limit, sort?: {column, descending}} — rows of a result table.
* ``new_conversation``, ``list_conversations``, ``open_conversation`` {conversation_id},
  ``clear`` — conversation controls.

Kernel -> front end:

* ``snapshot`` {turns: [Turn], busy, provider, project, conversation_id, conversations}
* ``turn_start`` {turn: Turn} — a turn record with no events yet
* ``events`` {turn: index, events: [event JSON]} — batched (every ~40 ms or 200 characters);
  a tool card shows its ``tool_result``'s ``duration_ms`` (the kernel's measure of the tool's run).
  A planned (orchestrated) turn's ``tool_call``/``tool_result`` carry ``task_id`` (a badge on the
  card) and a query's result its ``evidence_id``; its ``done`` carries ``orchestration`` (a plan
  panel, a banner over a partial answer, calculations in the evidence panel). All optional.
* ``table`` {turn: index, table: Table} — after a successful query: the first page of its rows
  (rows, pages and sorting need no pandas; it is imported when ``to_frame`` asks for a DataFrame)
* ``turn_end`` {turn: Turn} — the full record (answer, usage, error, tables, evidence)
* ``table_page`` {table: key, offset, rows, total}
* ``frame_bound`` {table: key, name, shape: [rows, columns]}
* ``conversations`` {items: [{id, title, updated_at, messages}], current}
* ``error`` {message, code}

A Turn record: {index, question, events: [...], answer, usage, error: {code, message}|null,
tables: [Table], evidence: [Evidence], orchestration: {...}|null, running: bool} (``orchestration``:
the ``done`` event's, for a planned turn). A Table: {key, call_id, manager, columns,
rows (first page), total_rows, total_count, complete, page_size}. An Evidence row: {manager,
filters, rows, total_count, complete, document, variables, code, task_id?, evidence_id?} where
``code`` is a cell that re-runs exactly that query through ``gmchat_nb.connect(...)`` and returns
the DataFrame (the ids only for a planned turn's queries).
"""

from __future__ import annotations

__all__ = ["BATCH_CHARACTERS", "BATCH_SECONDS", "FRONT_END_TYPES", "PAGE_SIZE"]

BATCH_SECONDS = 0.04
BATCH_CHARACTERS = 200
PAGE_SIZE = 25
FRONT_END_TYPES = frozenset(
    {
        "hello",
        "ask",
        "stop",
        "confirm",
        "to_frame",
        "table_page",
        "new_conversation",
        "list_conversations",
        "open_conversation",
        "clear",
    }
)

"""The messages between the chat widget's kernel side (Python) and its front end (frontend/).

Everything travels as anywidget custom messages (``widget.send`` / ``model.send``), never as
trait updates while a turn streams (a list trait would resend the whole transcript per chunk).
The kernel keeps the canonical state; a view that appears later (a page reload, a second view,
a view whose kernel connection came back) sends ``hello`` and receives a ``snapshot``, or, when
it says what it already has, a ``replay`` of only what changed since (see "Cursors" below).

Front end -> kernel (``type`` and fields):

* ``hello`` {conversation_id?, after?, epoch?} — a view was rendered (or reconnected).
  Without a cursor, or with one that does not fit (another conversation or epoch, a
  position ahead of the journal or before what it still holds, or malformed: ``after`` must be
  a whole number >= 0, not a string, float or boolean), the answer is a ``snapshot``; with one
  that fits, a ``replay``.
* ``ask`` {text} — run a turn (refused with an ``error`` while one runs).
* ``stop`` — cancel the running turn.
* ``confirm`` {call_id, ok} — resolve a pending mutation confirmation (``call_id``, not ``id``:
  ipykernel routes comm replies by a top-level ``id``).
* ``to_frame`` {table, name?} — bind a query's DataFrame to a kernel variable (default: it is
  ``chat.frames[-1]`` anyway); answered with ``frame_bound``.
* ``table_page`` {table, offset, limit, sort?: {column, descending}} — rows of a result table.
* ``chart_request`` {table, intent?: {mark?, x?, y?, color?, aggregate?, limit?}} — a result
  table's **Chart** button (no ``intent``: the chart its columns suggest) and its mark, column
  and aggregate pickers (the intent chosen, as a ``chart`` call's arguments without ``query``);
  answered with ``chart_options``.
* ``chart_library`` — the chart library, asked once per view when its first chart is drawn;
  answered with ``chart_library``, or ``error`` ``charts_unavailable`` when it was not built.
* ``new_conversation``, ``list_conversations``, ``open_conversation`` {conversation_id},
  ``clear`` — conversation controls.
* ``export_notebook`` {request} — **Export as notebook** (:mod:`gmchat_nb.widget.export`): the
  kernel writes the current conversation with ``Chat.to_notebook`` into its working directory
  as ``<title>.ipynb`` (the name ``chat_export.notebook_filename`` makes of its title), or
  ``<title> 1.ipynb``, ``<title> 2.ipynb`` … when that exists: never over a file. ``request`` is
  an id of the view's choosing; answered with ``notebook_exported``.
* Knowledge (:mod:`gmchat_nb.widget.knowledge`, through ``Chat.knowledge`` as the chat's user).
  Each carries ``request``, an id of the view's choosing that its answer echoes; each is
  answered with one ``knowledge`` message. Entries are named by ``entry_id`` (not ``id``, as
  ``call_id`` above); ``confirm_flagged`` (true) saves an entry the data scorer flagged, after
  the person confirmed it.

  * ``knowledge_list`` {request, kind?, status?, search?} — the entries this user may see,
    oldest first; answered with ``items``.
  * ``knowledge_save_turn`` {request, turn, name, question?, scope?, confirm_flagged?} —
    **Save as verified query**: the finished turn ``turn`` (its index in the view)'s successful
    queries (and its chart) as a verified query; ``question`` defaults to what was asked,
    ``scope`` to ``shared``. A turn the kernel no longer holds (shown again from history,
    cleared) is ``not_found``.
  * ``knowledge_add`` {request, kind, name?, question?, calls?, scope?, term?, text?,
    confirm_flagged?} — ``verified_query`` (name, question, calls ``[{tool, arguments}]``,
    scope), ``definition`` (term, or name; text) or ``note`` (text).
  * ``knowledge_update`` {request, entry_id, name?, question?, term?, text?, scope?,
    confirm_flagged?} — a verified query's name and question, a definition's term and text, a
    note's text; checked again as a new entry would be.
  * ``knowledge_remove`` {request, entry_id} — forget the entry (row, full-text entry, vector).
  * ``knowledge_accept`` {request, entry_id, scope?} — a suggestion becomes active.

Kernel -> front end:

* ``snapshot`` {turns: [Turn], busy, provider, project, conversation_id, conversations, cursor}
* ``replay`` {conversation_id, after, cursor, turns: [Turn], busy, pending_confirmation,
  provider, project, conversations} — the answer to a ``hello`` whose cursor fits: ``turns``
  holds, whole and with their events, tables and evidence, only the turns that ended after
  ``after`` and the running one (empty when the view is up to date: nothing is rendered twice);
  ``pending_confirmation`` is the ``confirm_mutation`` event the running turn waits on, or null.
* ``turn_start`` {turn: Turn} — a turn record with no events yet
* ``events`` {turn: index, events: [event JSON]} — batched (every ~40 ms or 200 characters);
  a tool card shows its ``tool_result``'s ``duration_ms`` (the kernel's measure of the tool's run).
  A planned (orchestrated) turn's ``tool_call``/``tool_result`` carry ``task_id`` (a badge on the
  card) and a query's result its ``evidence_id``; its ``done`` carries ``orchestration`` (a plan
  panel, a banner over a partial answer, calculations in the evidence panel). All optional.
  A ``chart`` event (after its ``chart`` call's result) is drawn under the card of the query it
  names by ``evidence_id`` (the query's call id, or a planned evidence id), with a table/chart
  toggle; its spec is checked again before it is drawn, and drawing loads the chart library.
* ``table`` {turn: index, table: Table} — after a successful query: the first page of its rows
  (rows, pages and sorting need no pandas; it is imported when ``to_frame`` asks for a DataFrame)
* ``turn_end`` {turn: Turn, cursor} — the full record (answer, usage, error, tables, evidence);
  a view that saw the turn live takes ``cursor`` as its own
* ``table_page`` {table: key, offset, rows, total}
* ``frame_bound`` {table: key, name, shape: [rows, columns]}
* ``conversations`` {items: [{id, title, updated_at, messages}], current}
* ``chart_options`` {table: key, columns: [{name, kind}], marks, aggregates, intent: {...}|null,
  chart: Chart|null, error: {code, message}|null} — what a chart of the table may use (``kind``
  "quantitative", "temporal", "nominal", or "list": a to-many column, not chartable), the intent
  as applied and the chart drawn, or why not (an unknown column, a mark that does not fit, too
  many marks: the table's pickers show it); ``intent`` and ``chart`` are null when the columns
  suggest no chart. A Chart is the ``chart`` event's JSON (id ``suggested:<call_id>``).
* ``chart_library`` {source} — the chart library (Vega, Vega-Lite, vega-embed) as ES module text
  (``static/charts.js``, built by frontend/build.mjs beside chat.js), which the view imports from
  a Blob URL; sent only when asked, so chat.js stays small.
* ``knowledge`` {request, items?: [Entry], entry?: Entry, removed?: entry_id,
  error?: {code, message, existing}} — the answer to a knowledge request: what was listed,
  written or removed, or why not. ``error.code`` is ``invalid``, ``not_compiling``,
  ``duplicate`` (``existing``: the id of the entry with the same content, which ``message``
  names), ``flagged`` (send again with ``confirm_flagged`` once the person confirms),
  ``forbidden`` (a shared entry this user may not write), ``not_found``, or ``failed``. An
  Entry is ``gmchat_nb.core.knowledge.entry_json``'s: {id, kind, name, status, scope, owner,
  created_by, created_at, updated_at; question, calls, verified_by, verified_at for a verified
  query; text (and term) for a definition or note; flags?, stale_reason?}.
* ``notebook_exported`` {request, path?, error?: {code, message}} — the answer to
  ``export_notebook``: the absolute path of the notebook written, or why none was:
  ``not_found`` (no conversation yet), ``empty`` (no finished turn), ``exists`` (every
  numbered name taken), ``not_written`` (the folder cannot be written) or ``failed``.
* ``error`` {message, code}

A turn's events include ``recall`` {items: [{kind, id, name, score}]} first when recall is on
(empty ``items``: nothing relevant; the view shows "Recalled 2 verified queries, 1 definition",
or "Nothing recalled"), and its ``done`` carries ``trusted`` {id, name} when the answer re-ran a
recalled verified query (the view shows "Verified query: <name>").

A Turn record: {index, question, events: [...], answer, usage, error: {code, message}|null,
tables: [Table], evidence: [Evidence], orchestration: {...}|null, running: bool} (``orchestration``:
the ``done`` event's, for a planned turn). A Table: {key, call_id, manager, columns,
rows (first page), total_rows, total_count, complete, page_size}. An Evidence row: {call_id,
manager, filters, rows, total_count, complete, document, variables, code, task_id?,
evidence_id?} where ``code`` is a cell that re-runs exactly that query through
``gmchat_nb.demo_project(...)`` or ``gmchat_nb.connect(...)`` and returns the DataFrame (the ids
only for a planned turn's queries); the server's ``GET {url}conversations/{id}/turns/{turn_id}/
evidence`` answers the same rows (both from ``core/session/evidence.py``).

Cursors. The conversation's journal numbers every event the session stores with a gap-free
``position`` (what the server extension's event streams send as ``sequence``; an event's own
``sequence`` counts within its turn). A ``cursor`` is {conversation_id, position, epoch}:
the view has every turn of the widget through journal position ``position``. ``epoch`` is
a token the kernel changes when its turns stop being a plain run of one conversation's journal
(clear, a new or opened conversation, a turn the journal does not hold, such as one refused
before it started), so an older cursor gets a snapshot. A view sends its cursor back in
``hello`` as {conversation_id, after: position, epoch}. Once a turn has ended, its events
in ``snapshot`` and ``replay`` records carry their journal ``position``. Live ``events`` do not:
the session writes a turn's events in a few batches (at round starts, before effects, at the
end), after the widget has shown them, so positions are known at ``turn_end`` and cursors move
a whole turn at a time; a running turn is replayed whole and the front end skips the events it
has by their ``sequence``. The front end keeps its cursor and the turn records it rendered in
the tab's ``sessionStorage`` under the widget's ``storage_key`` trait and the conversation id,
so a reloaded page replays too; a saved view that is missing, too big or unreadable means a
snapshot (gmchat_nb/widget/replay.py and frontend/src/replay.ts say why and how).
"""

from __future__ import annotations

from .export import EXPORT_TYPE
from .knowledge import KNOWLEDGE_TYPES

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
        "chart_request",
        "chart_library",
        EXPORT_TYPE,
        *KNOWLEDGE_TYPES,
    }
)

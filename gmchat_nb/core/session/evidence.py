"""A turn's evidence: per successful query, its GraphQL document, its variables and a notebook
cell that re-runs exactly that query.

One builder for both surfaces that show it, so they show the same thing: the widget's evidence
panel (from the outcomes of the turn its kernel ran) and the server's
``GET {url}conversations/{id}/turns/{turn_id}/evidence`` (from the journal, on any server that
shares the store). A journaled query keeps its arguments (its ``tool_call``), its answer (its
``tool_result``: rows, total, completeness) and the request it sent (the result's ``query``:
document and variables, :class:`JournaledQuery`), which :func:`stored_evidence` shows as it ran,
without the project; a journal written before results carried it is compiled again from the
arguments with the project's own compiler
(:meth:`~gmchat_nb.core.project.Project.query_request`, what ``query`` itself runs).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from ..dsn import without_password
from ..events import JOURNALED_QUERY
from ..project import Project, QueryOutcome
from ..project.errors import ToolError
from ..project.targets import demo_name
from ..project.tools import DIRECT_PREFIX, TOOLS, direct_tool_name
from ..settings import ChatSettings
from ..toolcalls.evidence import journaled_query

__all__ = [
    "JournaledQuery",
    "evidence_code",
    "evidence_row",
    "frame_code",
    "planned_ids",
    "python_literal",
    "query_code",
    "stored_evidence",
    "surviving_events",
]

log = logging.getLogger(__name__)


def evidence_code(
    document: str,
    variables: Mapping[str, Any],
    settings: ChatSettings,
    *,
    pages: Sequence[Mapping[str, Any]] = (),
    window: tuple[int, int] | None = None,
) -> str:
    """A notebook cell that re-runs exactly this query (``document`` with ``variables``) on the
    settings' project and shows its DataFrame (the widget's "Copy as code"). A query the chat
    read in several pages gives the other pages' variables (``pages``), and one whose rows are a
    window of what the pages hold (an offset inside a page, a limit short of the last page) its
    ``window`` (start, end): the cell then reads every page and cuts the same rows."""
    target = settings.project
    demo = demo_name(target)
    if demo is not None:
        connect = f"project = gmchat_nb.demo_project({'' if demo == 'inventory' else repr(demo)})"
    else:
        exposed = list(settings.exposed_managers) if settings.exposed_managers is not None else None
        # The cell is shown to whoever reads the turn (over HTTP too): a password in the project's
        # URL stays on the server, and the cell says what to put back.
        shown = without_password(target) if isinstance(target, str) else target
        connect = f"project = await gmchat_nb.connect({shown!r}, exposed={exposed!r})"
        if shown != target:
            connect = "# the project URL's password is not shown: put it back for ***\n" + connect
    return f"import gmchat_nb\n\n{connect}\n{frame_code(document, variables, pages, window)}"


def frame_code(
    document: str,
    variables: Mapping[str, Any],
    pages: Sequence[Mapping[str, Any]] = (),
    window: tuple[int, int] | None = None,
    *,
    name: str = "frame",
) -> str:
    """The lines of :func:`evidence_code` after the connection: the query run on ``project``
    into the DataFrame ``name`` (every page, cut to its window), which the cell then shows.
    ``name`` must be a Python identifier of the caller's own (never text from data)."""
    if not name.isidentifier():
        raise ValueError(f"not a Python name: {name!r}")
    return (
        f"DOCUMENT = {document!r}\n"
        f"VARIABLES = {python_literal(dict(variables))}\n"
        f"{name} = await project.frame(DOCUMENT, VARIABLES)\n"
        f"{_more_pages(pages, window, name)}"
        f"{name}"
    )


def python_literal(value: Any) -> str:
    """``value`` as the JSON it was sent as, written as Python: ``True``, ``False`` and ``None``
    where JSON has ``true``, ``false`` and ``null`` (a cell holding JSON's words raises
    ``NameError``), strings escaped as Python escapes them, values JSON has no type for as their
    text, keys in order (the journal keeps them so: a cell is the same whether its query ran here
    or was read back). JSON's numbers beyond a float (``Infinity``, ``NaN``) are no Python
    literal: such a value is read back from its JSON text instead."""
    try:
        text = json.dumps(value, default=str, sort_keys=True)
    except TypeError:  # keys of several types cannot be ordered: as they are
        text = json.dumps(value, default=str)
    plain = json.loads(text)
    if _finite(plain):
        return repr(plain)
    return f"__import__('json').loads({json.dumps(plain)!r})"


def _finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _more_pages(
    pages: Sequence[Mapping[str, Any]], window: tuple[int, int] | None, name: str
) -> str:
    """The cell's lines that read the query's other pages and cut its window of rows."""
    if not pages and window is None:
        return ""
    lines = ["# the query's other pages, then its window of rows, as the chat read them"]
    if pages:
        more = python_literal([dict(page) for page in pages])
        lines += [
            "import pandas as pd",
            f"for page in {more}:",
            "    more = await project.frame(DOCUMENT, page)",
            f"    {name} = pd.concat([{name}, more], ignore_index=True)",
        ]
    if window is not None:
        start, end = int(window[0]), int(window[1])
        lines.append(f"{name} = {name}.iloc[{start}:{end}].reset_index(drop=True)")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class JournaledQuery:
    """The request a query sent, as its ``tool_result`` journals it (``query``): the manager,
    the GraphQL document, the first page's variables, the other pages' and the window of rows
    the chat kept of what the pages hold."""

    manager: str
    document: str
    variables: dict[str, Any]
    pages: tuple[dict[str, Any], ...] = ()
    window: tuple[int, int] | None = None

    @classmethod
    def of(cls, outcome: QueryOutcome) -> Self:
        """What ``outcome``'s query sent (as the evidence stage journals it)."""
        sent = journaled_query(outcome)
        window = sent.get("window")
        return cls(
            outcome.manager,
            sent["document"],
            dict(sent["variables"]),
            tuple(sent.get("pages", ())),
            (window[0], window[1]) if window else None,
        )

    @classmethod
    def read(cls, value: Any) -> Self | None:
        """The journaled request ``value`` holds (a ``tool_result``'s ``query``), or ``None``
        for anything else: a journal written before results carried it, or a shape this
        version did not write."""
        if not isinstance(value, Mapping):
            return None
        manager, document = value.get("manager"), value.get("document")
        variables, pages = value.get("variables"), value.get("pages", [])
        window = value.get("window")
        if not (isinstance(manager, str) and isinstance(document, str)):
            return None
        if not isinstance(variables, dict) or not isinstance(pages, list):
            return None
        if not all(isinstance(page, dict) for page in pages):
            return None
        if window is not None and not (
            isinstance(window, list)
            and len(window) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in window)
        ):
            return None
        return cls(
            manager, document, variables, tuple(pages), (window[0], window[1]) if window else None
        )

    @classmethod
    def of_event(cls, event: Mapping[str, Any]) -> Self | None:
        """The request a journaled ``tool_result`` event carries, if it carries one."""
        return cls.read(event.get(JOURNALED_QUERY))

    def code(self, settings: ChatSettings) -> str:
        """:func:`evidence_code` for this request: every page it read, and its window."""
        return evidence_code(
            self.document, self.variables, settings, pages=self.pages, window=self.window
        )

    def frame_code(self, name: str) -> str:
        """:func:`frame_code` for this request, into the DataFrame ``name``."""
        return frame_code(self.document, self.variables, self.pages, self.window, name=name)


def query_code(outcome: QueryOutcome, settings: ChatSettings) -> str:
    """:func:`evidence_code` for a query's outcome: every page it read, and its window."""
    return JournaledQuery.of(outcome).code(settings)


def evidence_row(
    call_id: str,
    outcome: QueryOutcome,
    settings: ChatSettings,
    planned: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One query of the evidence panel: ``{call_id, manager, filters, rows, total_count,
    complete, document, variables, code}`` (the first page's variables); ``planned`` adds a
    planned query's ``task_id`` and ``evidence_id`` (what its calculations and answer cite)."""
    counts = (len(outcome.rows), outcome.total_count, outcome.complete)
    return _row(call_id, JournaledQuery.of(outcome), counts, settings, planned)


def _row(
    call_id: str,
    query: JournaledQuery,
    counts: tuple[int, int | None, bool],
    settings: ChatSettings,
    planned: Mapping[str, str] | None,
) -> dict[str, Any]:
    rows, total_count, complete = counts
    return {
        "call_id": call_id,
        "manager": query.manager,
        "filters": query.variables.get("filter"),
        "rows": rows,
        "total_count": total_count,
        "complete": complete,
        "document": query.document,
        "variables": query.variables,
        "code": query.code(settings),
        **(planned or {}),
    }


def planned_ids(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Tool call id -> the ``task_id`` and ``evidence_id`` its result carried (planned turns)."""
    found: dict[str, dict[str, str]] = {}
    for event in events:
        if event.get("type") != "tool_result":
            continue
        ids = {key: str(event[key]) for key in ("task_id", "evidence_id") if event.get(key)}
        if ids:
            found[str(event.get("id"))] = ids
    return found


def surviving_events(payloads: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One turn's journaled events without those a crash cut off: the first event a new driver
    wrote after a crash drops the events numbered after its ``continues_after``."""
    kept: list[Mapping[str, Any]] = []
    for payload in payloads:
        cut = payload.get("continues_after")
        if isinstance(cut, int) and not isinstance(cut, bool):
            kept = [event for event in kept if _sequence(event) <= cut]
        kept.append(payload)
    return kept


async def stored_evidence(
    project: Project | None, settings: ChatSettings, payloads: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The evidence rows of one journaled turn (its events' payloads, in order): one per query
    that returned rows (a ``tool_result`` with a ``frame``, as only a query that ran has; a
    repeat answered from before or a planned read served from the turn's evidence has none),
    in the order of their results.

    A result that journaled its request (``query``) is shown as it ran, with no request to the
    project: a schema that drifted since or a project that is down does not change it. With a
    ``project``, one of a manager it no longer exposes is left out (nothing hidden is shown).
    An older result is compiled again from its call with ``project`` (without one it is left
    out); one the project cannot compile now — a manager or filter it no longer exposes — is
    left out too. An id look-up (a filter the server cannot nest) runs its sub-query again to
    fill in the variables; everything else is compiled without a request."""
    events = surviving_events(payloads)
    planned = planned_ids(events)
    calls: dict[str, Mapping[str, Any]] = {}  # the latest call of each id before its result
    rows: list[dict[str, Any]] = []
    for event in events:
        kind, call_id = event.get("type"), str(event.get("id"))
        if kind == "tool_call":
            calls[call_id] = event
            continue
        result = event.get("result")
        if kind != "tool_result" or not isinstance(event.get("frame"), dict):
            continue
        if not isinstance(result, dict) or not isinstance(result.get("data"), list):
            continue
        journaled = JournaledQuery.of_event(event)
        if journaled is not None:
            if project is None or project.index.find(journaled.manager) is not None:
                counts = _counts(result)
                rows.append(_row(call_id, journaled, counts, settings, planned.get(call_id)))
            continue
        call = calls.get(call_id)
        if call is None or project is None:
            continue
        outcome = await _rebuilt(project, call.get("name"), call.get("args"), result)
        if outcome is not None:
            rows.append(evidence_row(call_id, outcome, settings, planned.get(call_id)))
    return rows


def _counts(result: Mapping[str, Any]) -> tuple[int, int | None, bool]:
    """A stored query result's rows, total count and completeness."""
    total = result.get("total_count")
    return (
        len(result["data"]),
        total if isinstance(total, int) and not isinstance(total, bool) else None,
        result.get("complete") is True,
    )


async def _rebuilt(
    project: Project, name: Any, args: Any, result: Mapping[str, Any]
) -> QueryOutcome | None:
    """The outcome of a stored query call: its plan and variables compiled again, its rows and
    counts as its result gave them; None when the project cannot compile it now."""
    arguments = _query_arguments(project, name, args)
    if arguments is None:
        return None
    try:
        plan, variables = await project.query_request(arguments)
    except ToolError as error:  # a manager, field or filter the project does not expose now
        log.debug("a stored query's evidence cannot be compiled again: %s", error.code)
        return None
    _rows, total, complete = _counts(result)
    has_more = result.get("has_more")
    notes = result.get("notes")
    return QueryOutcome(
        manager=plan.manager.name,
        plan=plan,
        variables=variables,
        rows=list(result["data"]),
        total_count=total,
        has_more=has_more if isinstance(has_more, bool) else None,
        complete=complete,
        notes=[str(note) for note in notes] if isinstance(notes, list) else [],
    )


def _query_arguments(project: Project, name: Any, args: Any) -> dict[str, Any] | None:
    """The ``query`` arguments of a call of ``query`` or of a direct ``query_<manager>`` tool
    (as dispatch reads them), or None for any other call."""
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    if name == TOOLS.query.name:
        return dict(args)
    if name.startswith(DIRECT_PREFIX) and TOOLS.get(name) is None:
        manager = project.index.find(name[len(DIRECT_PREFIX) :])
        if manager is not None and direct_tool_name(manager.name) == name:
            return {**args, "manager": manager.name}
    return None


def _sequence(event: Mapping[str, Any]) -> int:
    value = event.get("sequence")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

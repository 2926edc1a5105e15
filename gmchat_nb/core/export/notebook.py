"""A conversation as a notebook that re-runs: built from the store alone, never the project.

First a title cell (:func:`.records.title_cell`), the parameters cell (tagged ``parameters``)
and the connection; then per finished turn, in order, the question as a heading, each query's
cell and its row count check, each chart's cell, each change as a Markdown record, and the
answer with its evidence table, its "Verified query" mark and a caption. The cells follow the
turn's journal, one reader per event type (:data:`READERS`); the notebook has no outputs
(``gmchat export --execute`` runs it and saves them).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any, Final

import nbformat

from ..events import answer_text
from ..project.tools import TOOLS
from ..session.evidence import JournaledQuery
from ..settings import ChatSettings
from ..turns import ChatStore
from . import cells, records
from .source import ExportedTurn, Source, read_source

__all__ = ["KERNELSPEC", "conversation_notebook", "notebook_text"]

KERNELSPEC: Final = {"name": "python3", "display_name": "Python 3", "language": "python"}


def conversation_notebook(
    store: ChatStore,
    conversation_id: str,
    *,
    settings: ChatSettings,
    execute_hint: bool = False,
    now: float | None = None,
) -> nbformat.NotebookNode:
    """The conversation ``conversation_id`` of ``store`` as a notebook (nbformat 4.5, no
    outputs) that runs top to bottom in a fresh kernel on ``settings``' project. Raises
    :class:`~.source.ExportError` (``not_found``, ``empty``); whether the conversation is the
    caller's to export is the caller's check. ``execute_hint``: the notebook is about to be run
    and saved with its outputs (the title cell says they are the project's at export). ``now``:
    the export's time (default: the clock's)."""
    source = read_source(store, conversation_id)
    exported_at = time.time() if now is None else now
    built = _Builder()
    for turn in source.turns:
        built.turn(turn, source)
    header = records.Header(
        title=source.conversation.title,
        conversation_id=conversation_id,
        project=cells.shown_project(settings),
        provider=_provider_name(settings.provider),
        models=list(built.models),
        started_at=source.conversation.created_at,
        exported_at=exported_at,
        version=_version(),
        turns=len(source.turns),
        unfinished=source.unfinished,
        executed=execute_hint,
    )
    return _from_dict(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {
                "kernelspec": dict(KERNELSPEC),
                "language_info": {"name": "python"},
                "gmchat_nb": {
                    "version": header.version,
                    "conversation_id": conversation_id,
                    "exported_at": datetime.fromtimestamp(exported_at, UTC).isoformat(),
                },
            },
            "cells": [
                _markdown_cell("title", records.title_cell(header)),
                _code_cell("parameters", cells.parameters_cell(settings), ["parameters"]),
                _code_cell("connection", cells.connection_cell(settings)),
                *built.cells,
            ],
        }
    )


# nbformat has no type hints: its two functions used here, typed
_from_dict: Callable[[dict[str, Any]], nbformat.NotebookNode] = nbformat.from_dict
_writes: Callable[[nbformat.NotebookNode], str] = nbformat.writes


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    """The notebook's ``.ipynb`` JSON (keys sorted, one space of indent: the same notebook is
    the same text)."""
    return _writes(notebook)


def _markdown_cell(cell_id: str, source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def _code_cell(cell_id: str, source: str, tags: list[str] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": cell_id,
        "metadata": {"tags": tags} if tags else {},
        "execution_count": None,
        "outputs": [],
        "source": source,
    }


@functools.cache
def _version() -> str:
    try:
        return metadata.version("gmchat_nb")
    except metadata.PackageNotFoundError:  # a checkout run without installing it
        return "unknown"


def _provider_name(provider: object) -> str:
    if isinstance(provider, str):
        return provider
    kind = provider if isinstance(provider, type) else type(provider)
    return f"{kind.__module__}.{kind.__qualname__}"


@dataclass(slots=True)
class _Turn:
    """What the cells of one turn need while its journal is read."""

    turn: ExportedTurn
    source: Source
    calls: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    asked: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # confirm_mutation by id
    frames: dict[str, str] = field(default_factory=dict)  # a query's call or evidence id -> frame
    evidence: list[records.Evidence] = field(default_factory=list)
    done: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    counter: int = 0


class _Builder:
    """The cells of every exported turn, in order."""

    def __init__(self) -> None:
        self.cells: list[dict[str, Any]] = []
        self.models: dict[str, None] = {}  # every model asked, in order of first use

    def add(self, state: _Turn, kind: str, text: str, *, code: bool = False) -> None:
        state.counter += 1
        cell_id = f"t{state.turn.number}-{state.counter}-{kind}"
        self.cells.append(_code_cell(cell_id, text) if code else _markdown_cell(cell_id, text))

    def turn(self, turn: ExportedTurn, source: Source) -> None:
        state = _Turn(turn, source)
        self.add(state, "question", records.question_cell(turn.number, turn.question))
        for event in turn.events:
            reader = READERS.get(str(event.get("type")))
            if reader is not None:
                reader(self, state, event)
        done = state.done or {}
        cost = done.get("cost") if isinstance(done.get("cost"), Mapping) else None
        for model in (cost or {}).get("models") or ():
            self.models.setdefault(str(model), None)
        trusted = done.get("trusted")
        answer = records.answer_cell(
            answer_text(turn.events),
            state.evidence,
            trusted=trusted if isinstance(trusted, Mapping) else None,
            error=state.error,
            cost=cost,
            ended_at=turn.ended_at,
        )
        self.add(state, "answer", answer)

    # -- one reader per event type ---------------------------------------------------------------

    def tool_call(self, state: _Turn, event: Mapping[str, Any]) -> None:
        state.calls[str(event.get("id"))] = event

    def confirm_mutation(self, state: _Turn, event: Mapping[str, Any]) -> None:
        state.asked[str(event.get("id"))] = event

    def tool_result(self, state: _Turn, event: Mapping[str, Any]) -> None:
        call_id = str(event.get("id"))
        if event.get("name") == TOOLS.mutate.name:
            self._change(state, call_id, event)
            return
        result, summary = event.get("result"), event.get("frame")
        if not isinstance(summary, Mapping) or not isinstance(result, Mapping):
            return  # not a query that ran (an error, a repeat answered from before, a schema)
        data = result.get("data")
        if not isinstance(data, list):
            return
        counted = summary.get("rows")
        recorded = counted if isinstance(counted, int) and not isinstance(counted, bool) else 0
        total = result.get("total_count")
        total = total if isinstance(total, int) and not isinstance(total, bool) else None
        query = JournaledQuery.of_event(event)
        if query is None:  # journaled before results carried their request
            self.add(
                state,
                "note",
                "*A query of this turn was journaled before gmchat_nb kept the request each "
                "query sends, so it has no cell here (the evidence panel compiles it again).*",
            )
            call = state.calls.get(call_id, {})
            args = call.get("args") if isinstance(call.get("args"), Mapping) else {}
            manager = str((args or {}).get("manager") or call.get("name") or "")
            state.evidence.append(records.Evidence(None, manager, None, recorded, total))
            return
        name = cells.frame_name(state.turn.number, len(state.frames) + 1)
        state.frames[call_id] = name
        evidence_id = event.get("evidence_id")
        if isinstance(evidence_id, str):
            state.frames[evidence_id] = name  # what a planned turn's chart names
        self.add(state, "read", cells.query_cell(query, name), code=True)
        self.add(state, "rows", cells.check_cell(name, recorded), code=True)
        filters = query.variables.get("filter")
        state.evidence.append(records.Evidence(name, query.manager, filters, recorded, total))

    def chart(self, state: _Turn, event: Mapping[str, Any]) -> None:
        name = state.frames.get(str(event.get("evidence_id")))
        intent = event.get("intent")
        code = cells.chart_cell(intent, name) if name and isinstance(intent, Mapping) else None
        if code is None:
            self.add(state, "note", "*A chart of this turn cannot be drawn again here: the "
                     "query it draws has no cell.*")  # fmt: skip
            return
        self.add(state, "chart", code, code=True)

    def done(self, state: _Turn, event: Mapping[str, Any]) -> None:
        state.done = event

    def error(self, state: _Turn, event: Mapping[str, Any]) -> None:
        state.error = event

    def _change(self, state: _Turn, call_id: str, event: Mapping[str, Any]) -> None:
        asked = state.asked.get(call_id)
        call = state.calls.get(call_id, {})
        args = call.get("args") if isinstance(call.get("args"), Mapping) else None
        source = asked if asked is not None else (args or {})
        change = records.Change(
            mutation=str(source.get("mutation") or ""),
            input=source.get("input"),
            confirmation_id=call_id if asked is not None else None,
            result=event.get("result"),
            record=state.source.changes.get(call_id) if asked is not None else None,
            asked_by=state.source.conversation.actor_id,
            ended_at=state.turn.ended_at,
        )
        self.add(state, "change", records.change_cell(change))


Reader = Callable[[_Builder, _Turn, Mapping[str, Any]], None]
READERS: Final[dict[str, Reader]] = {
    "tool_call": _Builder.tool_call,
    "confirm_mutation": _Builder.confirm_mutation,
    "tool_result": _Builder.tool_result,
    "chart": _Builder.chart,
    "done": _Builder.done,
    "error": _Builder.error,
}
"""The event types whose events make or shape cells (the answer's text is read whole, with
:func:`~gmchat_nb.core.events.answer_text`; recall and notices make none)."""

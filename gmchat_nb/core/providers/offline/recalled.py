"""The road a recalled verified query opens: its calls first, then the answer from their rows.

When the turn's context holds recalled knowledge (:func:`~gmchat_nb.core.guards.recalled.
recalled_in`) and a recalled verified query fits the question (:mod:`.fitting`: the first that
does, in recall's order), the turn's first response runs that query's ``query`` calls -- with the
question's value where it names another one -- and its ``chart`` call when charts are offered,
all in one round (the loop runs a round's charts after its reads), with no ``search_managers``,
``get_manager_schema`` or ``find_path``. The second response answers from those rows as the
normal road answers from its final query. Two model requests, and the turn re-runs the verified
query, so it is marked trusted.

Like the rest of the provider it keeps no state: each response recomputes the plan from the
question and the recalled data and compares it with the turn's first round, so a turn is on this
road exactly when that round is the plan's. A round whose query failed hands the turn to the
normal road, which plans as if the round had not been made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...charts import ChartIntent
from ...charts.tool import CHART
from ...guards.recalled import recalled_in
from ...project.tools import TOOLS
from ..base import Message
from .answers import query_answer
from .charting import chart_sentence
from .conversation import Call, Turn, call_id
from .fitting import Calls, canonical, fitted_calls
from .planner import Step
from .question import OPINION_QUESTION, WRITE_REQUEST

__all__ = ["Road", "planned_recall", "recalled_plan", "verified_road"]


@dataclass(frozen=True, slots=True)
class Road:
    """The recalled road's next ``step``; or the messages to plan from without its round
    (``rest``: its query failed); or neither (the question takes the normal road)."""

    step: Step | None = None
    rest: list[Message] | None = None


def recalled_plan(
    question: str, messages: Sequence[Message], *, charts: bool
) -> tuple[Mapping[str, Any], Calls] | None:
    """The first recalled verified query that fits ``question`` and its calls, or ``None``."""
    data = recalled_in(messages)
    if data is None:
        return None
    entries = data.get("verified_queries")
    definitions = [d for d in data.get("definitions") or () if isinstance(d, Mapping)]
    if not isinstance(entries, list):
        return None
    if WRITE_REQUEST.search(question) or OPINION_QUESTION.search(question):
        return None  # the normal road refuses these
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        calls = fitted_calls(question, entry, definitions, charts=charts)
        if calls is not None:
            return entry, calls
    return None


def planned_recall(
    question: str, messages: Sequence[Message]
) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """For a planned turn's plan: the query (and chart) of the recalled verified query that
    fits ``question``, when it reads once (the plan names one query per requirement)."""
    planned = recalled_plan(question, messages, charts=True)
    if planned is None:
        return None
    _, calls = planned
    queries = [args for tool, args in calls if tool == TOOLS.query.name]
    charts = [args for tool, args in calls if tool == CHART.name]
    if len(queries) != 1 or len(charts) > 1:
        return None
    return queries[0], charts[0] if charts else None


def verified_road(messages: Sequence[Message], turn: Turn, offered: frozenset[str]) -> Road:
    """Where this turn stands on the recalled road (see the module)."""
    if TOOLS.query.name not in offered or not turn.question.strip():
        return Road()
    planned = recalled_plan(turn.question, messages, charts=CHART.name in offered)
    if planned is None:
        return Road()
    _, calls = planned
    rounds = _rounds(messages)
    if not rounds:
        return Road(Step(calls=_numbered(calls, turn.next_id)))
    first, answered = rounds[0]
    sent = [(call.name, dict(call.args)) for call in first]
    if canonical(sent) != canonical(_numbered(calls, _first_number(first, turn))):
        return Road()  # the turn went another way: the normal road reads it
    queries = [call for call in first if call.name == TOOLS.query.name]
    if not all(call.ok for call in queries):
        return Road(rest=[m for m in messages if id(m) not in answered])
    text = " ".join(query_answer(call) for call in queries)
    drawn = [call for call in first if call.name == CHART.name]
    if drawn:
        text = f"{text} {chart_sentence(drawn[0], queries[-1])}"
    return Road(Step(text=text))


def _numbered(calls: Calls, first: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls as the provider sends them: a chart names the query before it by the id that
    query gets (``offline-<n>``) when a later query would otherwise be the latest."""
    numbered: list[tuple[str, dict[str, Any]]] = []
    last_query: str | None = None
    queries_left = sum(1 for tool, _ in calls if tool == TOOLS.query.name)
    for offset, (tool, args) in enumerate(calls):
        if tool == TOOLS.query.name:
            last_query = call_id(first + offset)
            queries_left -= 1
            numbered.append((tool, args))
        elif last_query is not None and queries_left:
            named = replace(ChartIntent.from_args(args), query=last_query)
            numbered.append((tool, named.to_dict()))
        else:
            numbered.append((tool, args))
    return numbered


def _first_number(calls: Sequence[_RoundCall], turn: Turn) -> int:
    """The number of a round's first call (its id's), so the plan's ids can be compared."""
    prefix_free = calls[0].id.rsplit("-", 1)[-1] if calls else ""
    return int(prefix_free) if prefix_free.isdigit() else turn.next_id


@dataclass(frozen=True, slots=True)
class _RoundCall(Call):
    id: str = ""


def _rounds(messages: Sequence[Message]) -> list[tuple[list[_RoundCall], set[int]]]:
    """The current turn's rounds of calls with their results, each with the ids (``id()``) of
    its messages (the assistant's and its tool results)."""
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None
    )
    if last_user is None:
        return []
    tail = messages[last_user + 1 :]
    results = {m.tool_call_id: m for m in tail if m.role == "tool" and m.tool_call_id is not None}
    rounds: list[tuple[list[_RoundCall], set[int]]] = []
    for message in tail:
        if message.role != "assistant" or not message.tool_calls:
            continue
        calls = []
        members = {id(message)}
        for call in message.tool_calls:
            answer = results.get(call.id)
            if answer is not None:
                members.add(id(answer))
            calls.append(
                _RoundCall(
                    call.name,
                    dict(call.args),
                    answer.tool_result if answer is not None else None,
                    answer is not None,
                    call.id,
                )
            )
        rounds.append((calls, members))
    return rounds

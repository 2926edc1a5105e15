"""The oracle as a provider (``--provider oracle``), for the legacy loop and for planned roles.

``evals/oracle/oracle.yaml`` holds, per case, the rounds a careful model plays in the legacy loop
(discover, query, answer). For the planned strategy the same knowledge plays the planner, the
executor and the synthesizer, one request after another in the order the engine makes them:

* the planner's plan names every query the oracle makes as a ``query`` requirement (grouped into
  one task per manager), so the engine runs them with no executor request;
* the oracle's discovery calls (``search_managers``, ``get_manager_schema``, ``find_path``)
  become a first task of ``schema``/``path`` requirements, which the query tasks depend on; its
  executor makes exactly those calls, then says ``complete`` (a turn that only discovers --
  "there is no employee data" -- has that task alone, and the search result is the evidence the
  answer stands on);
* a follow-up the oracle answered from the conversation alone plans the last query it made
  again: a planned turn answers from this turn's evidence only;
* the synthesizer gives the oracle's answer.

``evals/oracle/planned.yaml`` gives the planned rounds outright for cases whose plan is more than
the legacy calls (a calculation the engine must do). Tokens are estimated, legacy and planned
alike, at four characters a token of what each request sent and what came back, so a report
compares what the two strategies send.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ..core.charts.tool import CHART
from ..core.project.tools import TOOLS, ToolEvidence
from ..core.providers.base import (
    DoneEvent,
    Message,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from ..core.providers.scripted import ScriptedProvider
from .dataset import Case, dataset_dir

__all__ = [
    "ORACLE",
    "OracleProvider",
    "estimate_tokens",
    "is_oracle",
    "load_oracle",
    "oracle_provider",
    "planned_rounds",
    "split_turns",
]

ORACLE = "oracle"
LEAN = "oracle:lean"
# The discovery tools (they find managers and relations; query reads rows): each one's name, and
# the kind of requirement its calls become in a plan.
DISCOVERY: dict[str, ToolEvidence] = {
    tool.name: tool.evidence
    for tool in TOOLS
    if tool.evidence is not None and tool is not TOOLS.query
}
CHARS_PER_TOKEN = 4

Rounds = list[dict[str, Any]]


def oracle_dir() -> Path:
    return dataset_dir() / "oracle"


@functools.lru_cache(maxsize=8)
def _parsed(path: str, mtime_ns: int) -> dict[str, Rounds]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} must map case names to lists of rounds")
    return {str(name): list(rounds or []) for name, rounds in data.items()}


def load_oracle(name: str = "oracle.yaml") -> dict[str, Rounds]:
    """Case name -> rounds of ``evals/oracle/NAME`` (``oracle.yaml``: legacy rounds;
    ``planned.yaml``: planned rounds given outright)."""
    path = oracle_dir() / name
    if not path.is_file():
        return {}
    return copy.deepcopy(_parsed(str(path), path.stat().st_mtime_ns))


def split_turns(rounds: Sequence[Mapping[str, Any]]) -> list[Rounds]:
    """The rounds of each user turn: each ends with a text round that calls no tool."""
    turns: list[Rounds] = [[]]
    for round_ in rounds:
        turns[-1].append(dict(round_))
        if round_.get("text") and not round_.get("tool_calls"):
            turns.append([])
    return [turn for turn in turns if turn]


def _turn_plan(turn: Rounds, earlier_queries: list[dict[str, Any]], lean: bool) -> Rounds:
    calls = [call for round_ in turn for call in round_.get("tool_calls") or []]
    queries = [dict(call["args"]) for call in calls if call["name"] == TOOLS.query.name]
    # A chart the oracle drew becomes a chart of the query requirement before it.
    charts: dict[int, dict[str, Any]] = {}
    for call in calls:
        if call["name"] == CHART.name and queries:
            read = sum(1 for c in calls[: calls.index(call)] if c["name"] == TOOLS.query.name)
            charts[max(read - 1, 0)] = dict(call.get("args") or {})
    finding = [round_ for round_ in turn if _discovery(round_)]
    if lean and queries:
        finding = []  # the planner's candidates stand in for the discovery calls
    if not queries and not finding:
        if not earlier_queries:
            raise ValueError("a turn with no tool call and no earlier query cannot be planned")
        queries = [earlier_queries[-1]]  # the evidence the oracle's answer came from
    tasks: list[dict[str, Any]] = []
    executor: Rounds = []
    if finding:
        requirements: list[dict[str, Any]] = []
        for round_ in finding:
            for call in _discovery(round_):
                number = len(requirements) + 1
                requirements.append(
                    {
                        "requirement_id": f"find_{number}",
                        "kind": DISCOVERY[call["name"]],
                        "description": f"{call['name']} {json.dumps(call.get('args') or {})}",
                    }
                )
            executor.append({"tool_calls": _discovery(round_)})
        # The executor says when its task is done (the engine waits for it): GeneralManager's
        # complete action, citing the evidence its calls became (task_1:schema:1, ...).
        cited = [
            f"task_1:{item['kind']}:{number}" for number, item in enumerate(requirements, start=1)
        ]
        executor.append({"text": json.dumps({"action": "complete", "evidence_ids": cited})})
        tasks.append(
            {
                "task_id": "task_1",
                "objective": "Find the managers and relations the question needs",
                "depends_on": [],
                "requirements": requirements,
            }
        )
    by_manager: dict[str, list[tuple[dict[str, Any], dict[str, Any] | None]]] = {}
    for index, args in enumerate(queries):
        by_manager.setdefault(str(args.get("manager")), []).append((args, charts.get(index)))
    for manager, reads in by_manager.items():
        tasks.append(
            {
                "task_id": f"task_{len(tasks) + 1}",
                "objective": f"Read the {manager} records the question needs",
                "depends_on": ["task_1"] if finding else [],
                "requirements": [
                    {
                        "requirement_id": f"read_{number}",
                        "kind": TOOLS.query.evidence,
                        "query": args,
                        **({"chart": chart} if chart is not None else {}),
                    }
                    for number, (args, chart) in enumerate(reads, start=1)
                ],
            }
        )
    earlier_queries.extend(queries)
    answer = turn[-1]
    return [
        {"structured": {"intent": "read", "tasks": tasks}},
        *executor,
        {key: answer[key] for key in ("text", "chunks") if key in answer},
    ]


def _discovery(round_: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(call) for call in round_.get("tool_calls") or [] if call["name"] in DISCOVERY]


def planned_rounds(rounds: Sequence[Mapping[str, Any]], *, lean: bool = False) -> Rounds:
    """The oracle's legacy rounds as the planned strategy requests them (module docstring);
    ``lean`` leaves out the discovery of a turn that queries."""
    earlier: list[dict[str, Any]] = []
    return [item for turn in split_turns(rounds) for item in _turn_plan(turn, earlier, lean)]


def estimate_tokens(*parts: Any) -> int:
    """About one token per four characters of the parts' text (JSON for anything else)."""
    return max(1, math.ceil(sum(_chars(part) for part in parts) / CHARS_PER_TOKEN))


def _chars(part: Any) -> int:
    if isinstance(part, str):
        return len(part)
    if isinstance(part, Message):
        calls = sum(len(call.name) + len(_json(call.args)) for call in part.tool_calls)
        result = len(_json(part.tool_result)) if part.tool_result is not None else 0
        return len(part.role) + len(part.content) + calls + result
    if isinstance(part, ToolDefinition):
        return len(part.name) + len(part.description) + len(_json(part.input_schema))
    if isinstance(part, list | tuple):
        return sum(_chars(item) for item in part)
    return len(_json(part))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class OracleProvider(ScriptedProvider):
    """The oracle's rounds for one case, with estimated token usage."""

    name: ClassVar[str] = ORACLE
    description = (
        "scripted oracle (evals/oracle/): what a careful model calls and answers, case by case; "
        "tokens estimated at 4 characters each: not a real model"
    )

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        said: list[Any] = []
        async for event in super().complete(messages, tools):
            if isinstance(event, TextChunkEvent):
                said.append(event.content)
            elif isinstance(event, ToolCallEvent):
                said.append({"name": event.name, "args": event.args})
            elif isinstance(event, DoneEvent):
                usage = TokenUsage(estimate_tokens(messages, tools), estimate_tokens(said))
                event = DoneEvent(usage, event.finish_reason)
            yield event

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        reply = await super().complete_structured(messages, response_schema, name=name)
        sent = estimate_tokens(messages, dict(response_schema))
        return StructuredReply(reply.value, TokenUsage(sent, estimate_tokens(reply.value)))


def is_oracle(spec: Any) -> bool:
    """``oracle`` or ``oracle:lean`` (see :func:`oracle_provider`)."""
    return isinstance(spec, str) and spec.strip() in (ORACLE, LEAN)


def oracle_provider(case: Case, strategy: str = "legacy", spec: str = ORACLE) -> OracleProvider:
    """The oracle of ``case`` for ``strategy`` (a ValueError when it has none).

    ``spec`` ``oracle:lean`` plans a turn that queries without its discovery calls: the planner's
    candidate schemas already say where the data is. It shows what planned mode costs when the
    planner trusts them; cases whose expectations ask for the legacy loop's discovery fail it.
    """
    lean = spec.strip() == LEAN
    legacy = load_oracle().get(case.name)
    given = load_oracle("planned.yaml").get(case.name) if strategy == "planned" else None
    if given is None and legacy is None:
        raise ValueError(f"the oracle has no entry for {case.name!r} ({oracle_dir()})")
    if strategy != "planned":
        rounds = legacy or []
    else:
        rounds = given if given is not None else planned_rounds(legacy or [], lean=lean)
    return OracleProvider({"rounds": rounds, **({"model": "lean"} if lean else {})})

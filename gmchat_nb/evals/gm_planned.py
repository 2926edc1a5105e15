"""GeneralManager 0.87.1's planned-orchestration dataset, played through our planned engine.

``planned_orchestration.yaml`` ships inside GeneralManager's wheel (it is that project's file,
so it is read from the wheel, never copied here; ``scripts/fetch-generalmanager`` caches the
wheel). Each case scripts every role (:mod:`.role_scripts`) and stubs the tools' results; it is
played through the real :class:`~gmchat_nb.core.planned.turn.PlannedTurn`, without a project,
and judged on its ``expectations.planned``:

* ``coverage`` -- resolved and total root tasks (``0/0`` when no read plan ran);
* ``terminal_reason`` -- the error code of a turn that resolved nothing, else the first
  unresolved task's reason, else null; ``mutation`` when the plan handed the turn to the legacy
  loop, ``legacy`` for a case run on the legacy strategy (tag ``legacy`` or no scripts);
* ``tool_sequence`` -- the names of the planned engine's ``tool_call`` events in order (those
  with a ``task_id``): what the scheduler executed. A legacy turn's own discovery calls are not
  the planned engine's and are reported beside it;
* ``answer_tokens`` -- each in the answer, case-insensitive. A ``mutation`` or ``legacy`` case's
  answer is the legacy turn's, run with the offline provider on GeneralManager's toy fixture;
* and, from the synthesizer's script, every evidence id it cites must exist in the turn's
  evidence store (aliases of children's evidence included).

``python -m gmchat_nb.evals.gm_planned [WHEEL_OR_YAML]`` prints the report.

Over 400 lines: one GeneralManager dataset played end to end — loading it from the wheel,
staging its scripts, running and judging each case — kept apart from our own runner on purpose.
"""

from __future__ import annotations

import asyncio
import copy
import os
import sys
import zipfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.events import (
    ChatEvent,
    Done,
    Error,
    Notice,
    StreamReset,
    TextChunk,
    ToolCall,
    ToolResult,
    answer_text,
)
from ..core.planned.catalog import Catalog
from ..core.planned.roles import RoleProviders
from ..core.planned.turn import PlannedTurn
from ..core.planned.work import TurnWork
from ..core.project.tools import ToolRun
from ..core.providers.base import Message, TokenUsage
from ..core.settings.planned import planned_settings
from ..core.toolcalls import CallScope, ToolCallPipeline
from .dataset import Case, parse_cases
from .role_scripts import (
    ExecutorScript,
    FallbackScript,
    PlannerScript,
    RoleScript,
    SynthesizerScript,
)

__all__ = [
    "DATASET_MEMBER",
    "GM_VERSION",
    "GMPlannedResult",
    "gm_wheel_path",
    "load_gm_planned",
    "report",
    "run_gm_case",
    "run_gm_planned",
]

GM_VERSION = "0.87.1"
WHEEL_NAME = f"generalmanager-{GM_VERSION}-py3-none-any.whl"
DATASET_MEMBER = "general_manager/chat/evals/datasets/planned_orchestration.yaml"
ROLES = ("planner", "executor", "synthesizer", "fallback")
LEGACY_FIXTURE = "toy"  # GeneralManager's toy fixture: Apollo and Mercury come from its data


def gm_wheel_path() -> Path:
    """Where ``scripts/fetch-generalmanager`` caches the wheel."""
    cache = os.environ.get("GMCHAT_CACHE") or str(Path.home() / ".cache" / "gmchat_nb")
    return Path(cache) / WHEEL_NAME


def load_gm_planned(source: str | Path | None = None, member: str = DATASET_MEMBER) -> list[Case]:
    """The cases of GeneralManager's dataset, from its wheel (default: the cached one) or from
    an extracted YAML file. They parse as our own case format, unmodified."""
    path = Path(source) if source is not None else gm_wheel_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run scripts/fetch-generalmanager to download GeneralManager "
            f"{GM_VERSION}'s wheel"
        )
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as wheel:
            text = wheel.read(member).decode("utf-8")
        name = Path(member).stem
    else:
        text, name = path.read_text(encoding="utf-8"), path.stem
    return parse_cases(yaml.safe_load(text), name)


@dataclass
class GMPlannedResult:
    """One case: what happened, and each expectation's verdict (``checks``: name -> problem or
    None)."""

    case: Case
    strategy: str  # planned | legacy
    coverage: dict[str, int] = field(default_factory=lambda: {"resolved": 0, "total": 0})
    terminal_reason: str | None = None
    tool_sequence: list[str] = field(default_factory=list)
    legacy_tools: list[str] = field(default_factory=list)  # the legacy turn's own calls
    answer: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    orchestration: dict[str, Any] | None = None
    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    ledger: dict[str, int] = field(default_factory=dict)  # the engine's own request count
    executions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)  # evidence ids the synthesizer's script cites
    unplayed: dict[str, int] = field(default_factory=dict)  # script entries no request took
    evidence_ids: set[str] = field(default_factory=set)
    provider_errors: list[str] = field(default_factory=list)
    checks: dict[str, str | None] = field(default_factory=dict)
    error: str | None = None  # the harness failed (not a verdict)

    @property
    def passed(self) -> bool:
        return self.error is None and all(problem is None for problem in self.checks.values())

    @property
    def reasons(self) -> list[str]:
        found = [f"{name}: {problem}" for name, problem in self.checks.items() if problem]
        return ([f"error: {self.error}"] if self.error else []) + found

    def calculation(self, evidence_id: str) -> dict[str, Any] | None:
        """The engine's calculation with this evidence id, from ``done.orchestration``."""
        for item in (self.orchestration or {}).get("calculations", []):
            if item.get("evidence_id") == evidence_id:
                return dict(item)
        return None


class _IO:
    """What the planned turn needs of a session, kept in memory."""

    def __init__(self, result: GMPlannedResult) -> None:
        self.result = result
        self.persisted: list[Message] = []
        self.usage = TokenUsage()

    async def persist(self, message: Message, state: Any) -> None:
        self.persisted.append(message)

    def record_usage(self, usage: TokenUsage) -> None:
        self.usage = self.usage + usage

    def provider_failed(self, error: BaseException) -> None:
        self.result.provider_errors.append(str(error))


def _strategy(case: Case) -> str:
    planned = case.expectations.planned or {}
    return "legacy" if "legacy" in case.tags or "scripts" not in planned else "planned"


def _stub_tools(planned: Mapping[str, Any], result: GMPlannedResult) -> Any:
    """The case's ``tool_results`` as the tool runner: by the query's manager, else by the tool's
    name; anything else is an error result (as an unknown manager is)."""
    configured = planned.get("tool_results") or {}

    async def run(name: str, args: dict[str, Any]) -> ToolRun:
        result.executions.append((name, copy.deepcopy(args)))
        manager = args.get("manager")
        answer = configured.get(str(manager)) if manager is not None else None
        if answer is None:
            answer = configured.get(name)
        if answer is None:
            return ToolRun(
                {
                    "status": "error",
                    "code": "unresolved",
                    "message": f"the case stubs no result for {name} {manager or ''}".strip(),
                }
            )
        return ToolRun(copy.deepcopy(answer))

    return run


def _settings(planned: Mapping[str, Any], scripts: Mapping[str, RoleScript]) -> Any:
    block: dict[str, Any] = {
        "enabled": True,
        "roles": {
            "planner": "planner",
            "simple_executor": "executor",
            "complex_executor": "executor",
            "synthesizer": "synthesizer",
            "fallback_executor": "fallback",
        },
    }
    if isinstance(planned.get("subtree_round_limit"), int):
        block["max_rounds_per_task"] = planned["subtree_round_limit"]
    if planned.get("evidence_timeout_seconds") is not None:
        block["evidence_timeout_seconds"] = planned["evidence_timeout_seconds"]
    profiles = {
        role: {"provider": script, "trust_group": "local"} for role, script in scripts.items()
    }
    return planned_settings(block, profiles, scripts["planner"], {})


async def _legacy_events(
    question: str, provider: Any, history: Sequence[str]
) -> AsyncIterator[ChatEvent]:
    """A legacy turn on GeneralManager's toy fixture (earlier user turns asked first)."""
    from ..chat import Chat

    chat = Chat(project=LEGACY_FIXTURE, provider=provider, store=":memory:")
    try:
        for earlier in history:
            await chat.ask(earlier)
        async for event in chat.stream(question):
            yield event
    finally:
        await chat.aclose()


def _take_events(result: GMPlannedResult, events: list[dict[str, Any]]) -> None:
    for event in events:
        result.events.append(event)
        reader = PLANNED_TRACE_READERS.get(str(event.get("type")))
        if reader is not None:
            reader(result, event)
    result.answer = answer_text(result.events)


def _take_tool_call(result: GMPlannedResult, event: dict[str, Any]) -> None:
    if event.get("task_id") is not None:
        result.tool_sequence.append(str(event["name"]))
    else:
        result.legacy_tools.append(str(event["name"]))


def _take_tool_result(result: GMPlannedResult, event: dict[str, Any]) -> None:
    if event.get("evidence_id"):
        result.evidence_ids.add(str(event["evidence_id"]))


def _take_answer(result: GMPlannedResult, event: dict[str, Any]) -> None:
    """Text and its withdrawals: the answer is read whole once the events are in
    (:func:`answer_text`), since a ``stream_reset`` takes back chunks already read."""


def _take_notice(result: GMPlannedResult, event: dict[str, Any]) -> None:
    """Retries, fallbacks, guards: kept in ``result.events`` only."""


def _take_error(result: GMPlannedResult, event: dict[str, Any]) -> None:
    result.terminal_reason = str(event.get("code"))


def _take_done(result: GMPlannedResult, event: dict[str, Any]) -> None:
    if event.get("orchestration") is not None:
        result.orchestration = dict(event["orchestration"])


# What a planned case's trace takes from each event type (a planned read never asks for a
# confirmation: confirm_mutation stays in ``result.events`` only).
PLANNED_TRACE_READERS: dict[str, Callable[[GMPlannedResult, dict[str, Any]], None]] = {
    ToolCall.type: _take_tool_call,
    ToolResult.type: _take_tool_result,
    TextChunk.type: _take_answer,
    StreamReset.type: _take_answer,
    Notice.type: _take_notice,
    Error.type: _take_error,
    Done.type: _take_done,
}


async def _planned_turn(
    case: Case, question: str, history: list[Message], result: GMPlannedResult, legacy: Any
) -> None:
    planned = case.expectations.planned or {}
    raw = planned.get("scripts") or {}
    scripts: dict[str, RoleScript] = {
        "planner": PlannerScript(raw.get("planner") or []),
        "executor": ExecutorScript(raw.get("executor") or []),
        "synthesizer": SynthesizerScript(raw.get("synthesizer") or []),
        "fallback": FallbackScript(raw.get("fallback") or []),
    }
    settings = _settings(planned, scripts)
    roles = RoleProviders(settings, legacy=scripts["planner"], implicit=False, built=scripts)
    io = _IO(result)
    work = TurnWork(
        question="",
        settings=settings,
        roles=roles,
        # GeneralManager's stubbed world: its tools answer from the case, no defences of ours
        pipeline=ToolCallPipeline(
            CallScope(kind="turn", project=None, execute=_stub_tools(planned, result)),
            serial=True,
        ),
        io=io,
        state=None,
        emit=lambda event: None,
        project=None,  # GeneralManager's stubbed world: no schema, no catalog, stubbed tools
        explicit_completion=True,  # its executors say "complete"
    )
    turn = PlannedTurn(work, catalog=Catalog(), check_rate=_no_limits)
    handed_over = False
    asked = [m.content for m in history if m.role == "user"]

    def legacy_turn() -> AsyncIterator[ChatEvent]:
        nonlocal handed_over
        handed_over = True
        return _legacy_events(question, legacy, asked)

    messages = [*history, Message("user", question)]
    events = [event.to_dict() async for event in turn.events(messages, legacy_turn)]
    _take_events(result, events)
    runs = list(turn.runs.values())
    result.coverage = {
        "resolved": sum(run.status == "resolved" for run in runs),
        "total": len(runs),
    }
    if handed_over:
        result.terminal_reason = "mutation"
    elif result.terminal_reason is None:
        result.terminal_reason = next(
            (run.reason for run in runs if run.status != "resolved"), None
        )
    for role, script in scripts.items():
        result.requests[role] += script.requests
        result.tokens[role] += script.usage.input_tokens + script.usage.output_tokens
        if script.remaining:
            result.unplayed[role] = result.unplayed.get(role, 0) + script.remaining
    result.cited.extend(scripts["synthesizer"].evidence_ids)
    # An alias (task_1:child:...) is evidence too: ask the turn's own store.
    result.evidence_ids.update(item for item in result.cited if item in work.evidence)
    for role, count in roles.ledger.to_dict().items():
        result.ledger[role] = result.ledger.get(role, 0) + count


def _judge(result: GMPlannedResult) -> None:
    expected = result.case.expectations.planned or {}
    checks: dict[str, str | None] = {}
    coverage = expected.get("coverage")
    if coverage is not None:
        want = {"resolved": coverage.get("resolved"), "total": coverage.get("total")}
        checks["coverage"] = None if want == result.coverage else f"{result.coverage} != {want}"
    if "terminal_reason" in expected:
        want_reason = expected["terminal_reason"]
        checks["terminal_reason"] = (
            None
            if want_reason == result.terminal_reason
            else f"{result.terminal_reason!r} != {want_reason!r}"
        )
    if "tool_sequence" in expected:
        sequence = list(expected["tool_sequence"] or [])
        checks["tool_sequence"] = (
            None if sequence == result.tool_sequence else f"{result.tool_sequence} != {sequence}"
        )
    missing = [
        str(token)
        for token in expected.get("answer_tokens") or []
        if str(token).lower() not in result.answer.lower()
    ]
    checks["answer_tokens"] = f"missing {missing} in {result.answer!r}" if missing else None
    unknown = [item for item in result.cited if item not in result.evidence_ids]
    checks["evidence"] = f"cites unknown evidence {unknown}" if unknown else None
    result.checks = checks


async def run_gm_case(case: Case, legacy_provider: Any = "offline") -> GMPlannedResult:
    """Play one case (every user turn) and judge it."""
    result = GMPlannedResult(case, _strategy(case))
    history: list[Message] = []
    try:
        for question in case.conversation:
            result.answer = ""  # the judged answer is the last turn's
            if result.strategy == "legacy":
                asked = [m.content for m in history if m.role == "user"]
                events = [
                    event.to_dict()
                    async for event in _legacy_events(question, legacy_provider, asked)
                ]
                _take_events(result, events)
                result.terminal_reason = "legacy"
            else:
                await _planned_turn(case, question, history, result, legacy_provider)
            history += [Message("user", question), Message("assistant", result.answer)]
    except Exception as error:  # a harness failure is reported, not judged
        result.error = f"{type(error).__name__}: {error}"
    _judge(result)
    return result


async def run_gm_planned(
    source: str | Path | None = None, legacy_provider: Any = "offline"
) -> list[GMPlannedResult]:
    """Every case of the dataset, one after another (deadlines are part of some cases)."""
    return [await run_gm_case(case, legacy_provider) for case in load_gm_planned(source)]


def report(results: Sequence[GMPlannedResult]) -> str:
    """A table: status, coverage, terminal reason, planned tool calls, requests and tokens per
    role (planner/executor/synthesizer/fallback), then each failure's reasons."""
    head = f"{'Case':<32}{'Status':>7}{'Cover':>7}  {'Terminal':<19}{'Tools':>6}"
    lines = [head + f"{'Req p/e/s/f':>14}{'Tokens p/e/s/f':>17}", "-" * (len(head) + 31)]
    for r in results:
        cover = f"{r.coverage['resolved']}/{r.coverage['total']}"
        requests = "/".join(str(r.requests[role]) for role in ROLES)
        tokens = "/".join(str(r.tokens[role]) for role in ROLES)
        lines.append(
            f"{r.case.name[:31]:<32}{'PASS' if r.passed else 'FAIL':>7}{cover:>7}  "
            f"{str(r.terminal_reason)[:18]:<19}{len(r.tool_sequence):>6}{requests:>14}{tokens:>17}"
        )
    passed = sum(r.passed for r in results)
    lines.append("-" * (len(head) + 31))
    total_requests = {role: sum(r.requests[role] for r in results) for role in ROLES}
    total_tokens = {role: sum(r.tokens[role] for r in results) for role in ROLES}
    lines.append(f"Passed {passed} of {len(results)} (GeneralManager {GM_VERSION})")
    lines.append("Requests per role: " + ", ".join(f"{k} {v}" for k, v in total_requests.items()))
    lines.append("Tokens per role: " + ", ".join(f"{k} {v}" for k, v in total_tokens.items()))
    failed = [r for r in results if not r.passed]
    if failed:
        lines.append("Failures:")
        for r in failed:
            lines.append(f"  {r.case.name}:")
            lines.extend(f"    {reason}" for reason in r.reasons)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report; 0 when every case passed."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        results = asyncio.run(run_gm_planned(args[0] if args else None))
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())


async def _no_limits() -> None:
    """GeneralManager's stubbed world has no budgets."""
    return None

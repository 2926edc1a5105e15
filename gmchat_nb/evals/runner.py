"""Run eval cases against one or more providers, concurrently, and judge them.

A case whose dataset names knowledge (``knowledge:``, :mod:`.dataset`) runs with it imported
into its chat's store, for the run's project and user, before its first question; a run may
compare knowledge modes (``off``, ``keyword``, ``hybrid``: the chat's ``knowledge`` setting), a
column per provider and mode.

Over 400 lines: running a case (its knowledge, its provider requests counted) and reading its
trace for the judges are one run's work; the trace readers are a table of small functions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.events import (
    Chart,
    ConfirmMutation,
    Done,
    Error,
    Notice,
    Recall,
    StreamReset,
    TextChunk,
    ToolCall,
    ToolResult,
    answer_text,
)
from ..core.knowledge import KnowledgeError
from ..core.providers.base import BaseLLMProvider
from ..core.providers.registry import check_ready, create_provider, provider_label
from .costs import judge_budget, unsaid_cost
from .counting import CountingProvider
from .dataset import Case
from .figures import names_expected_managers
from .judges import TurnData, Verdict, judge_case
from .oracle import is_oracle, oracle_provider
from .strategy import minus_roles, planned_settings_block, sum_roles

__all__ = [
    "KNOWLEDGE_MODES",
    "CaseResult",
    "CountingProvider",
    "ResultCallback",
    "TurnRecord",
    "open_project",
    "provider_note",
    "run_case",
    "run_cases",
]

# error codes that are not the model's fault: the case is UNSCORED instead of FAIL
UNSCORED_CODES = frozenset({"rate_limited", "chat_error", "confirmation_unavailable"})
KNOWLEDGE_MODES = ("off", "keyword", "hybrid")  # recall before each turn, compared by a run

ResultCallback = Callable[["CaseResult"], None]
"""Called with each :class:`CaseResult` as soon as its case finishes (in completion order)."""


@dataclass
class TurnRecord(TurnData):
    requests: int = 0
    # streamed requests that offered tools, and the tool calls the provider returned to them
    tool_offers: int = 0
    provider_tool_calls: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    seconds: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # requests and tokens per role (planner, executor, synthesizer, legacy, summary)
    roles: dict[str, dict[str, int]] = field(default_factory=dict)
    orchestration: dict[str, Any] | None = None  # a planned turn's done.orchestration
    # the done event's defences and provider attempts (None when it had none): the loop guard
    # and injection scorer (``guards``), the completion gates' verdicts on the answer
    # (``gates``), the retries (``attempts``) and the switches to a fallback provider
    guards: dict[str, Any] | None = None
    gates: list[dict[str, Any]] | None = None
    attempts: dict[str, int] | None = None
    fallbacks: list[dict[str, str]] | None = None
    # the done event's ``cost`` (None when it said none) and what the turn cost in US dollars:
    # None when a price is unknown, or when a turn that asked a priced model ended without saying
    # (an error); 0.0 for a turn that asked no model, or only free ones (offline, scripted,
    # local). ``cost_sources`` say where the prices came from.
    cost: dict[str, Any] | None = None
    cost_usd: float | None = None
    cost_sources: list[str] = field(default_factory=list)
    # the knowledge recalled before the turn (its ``recall`` event's items; None: recall was
    # off), the verified query the answer re-ran (``done.trusted``), and the characters of the
    # messages the turn's model requests were sent
    recalled: list[dict[str, Any]] | None = None
    trusted: dict[str, str] | None = None
    prompt_characters: int = 0

    @property
    def tokens(self) -> int:
        """Input and output tokens together (what a token budget counts)."""
        return int(self.usage.get("input_tokens", 0)) + int(self.usage.get("output_tokens", 0))

    @property
    def stopped_by(self) -> str | None:
        """Why the loop guard ended the turn with a forced answer, or None."""
        reason = (self.guards or {}).get("stopped_by")
        return str(reason) if reason else None

    @property
    def failed_gates(self) -> list[str]:
        """The completion gates the turn's answer still failed (shown with a warning)."""
        return [str(gate.get("name")) for gate in self.gates or () if not gate.get("passed", True)]


@dataclass
class CaseResult:
    """One case run against one provider: its turns, verdicts, status and cost.

    ``provider_note`` is the provider's own ``description`` (a replay cassette says what it
    recorded), so a report can say when a column is not a real model. ``right_manager`` says
    whether the model's query calls named the manager the expectations name for a query (None
    when they name none, or the case did not get that far): see :func:`.names_expected_managers`.
    """

    case: Case
    provider: str
    status: str = "fail"  # pass | fail | unscored
    turns: list[TurnRecord] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    error: str | None = None
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0
    provider_note: str | None = None
    strategy: str = "legacy"
    right_manager: bool | None = None
    knowledge: str | None = None  # the recall mode the run compared (None: the settings')

    @property
    def roles(self) -> dict[str, dict[str, int]]:
        """Requests and tokens per role over the turns."""
        return sum_roles(*(t.roles for t in self.turns))

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def requests(self) -> int:
        return sum(t.requests for t in self.turns)

    @property
    def usage(self) -> dict[str, int]:
        return {
            "input_tokens": sum(t.usage.get("input_tokens", 0) for t in self.turns),
            "output_tokens": sum(t.usage.get("output_tokens", 0) for t in self.turns),
        }

    @property
    def tokens(self) -> int:
        """Input and output tokens of every turn."""
        return sum(t.tokens for t in self.turns)

    @property
    def cost_usd(self) -> float | None:
        """What the turns cost in US dollars, summed; None when any turn's cost is unknown."""
        costs = [t.cost_usd for t in self.turns]
        return None if None in costs else float(sum(c for c in costs if c is not None))

    @property
    def cost_sources(self) -> list[str]:
        """Where the turns' prices came from (``genai-prices X.Y.Z``, ``offline``, ...)."""
        return sorted({source for t in self.turns for source in t.cost_sources})

    @property
    def answer(self) -> str:
        return self.turns[-1].answer if self.turns else ""

    @property
    def tool_calls(self) -> int:
        """The tool calls the turns made."""
        return sum(len(t.tool_calls) for t in self.turns)

    @property
    def prompt_characters(self) -> int:
        """The characters of the messages every model request of the case was sent."""
        return sum(t.prompt_characters for t in self.turns)


def _turn_from_events(user: str, events: Sequence[Mapping[str, Any]]) -> TurnRecord:
    turn = TurnRecord(user=user, events=[dict(e) for e in events])
    args_by_id: dict[str, dict[str, Any]] = {}
    for event in events:
        TRACE_READERS.get(str(event.get("type")), _skip)(turn, event, args_by_id)
    turn.answer = answer_text(events)
    return turn


def _read_tool_call(
    turn: TurnRecord, event: Mapping[str, Any], args_by_id: dict[str, dict[str, Any]]
) -> None:
    args = dict(event.get("args") or {})
    args_by_id[str(event.get("id"))] = args
    turn.tool_calls.append({"id": event.get("id"), "name": event["name"], "args": args})


def _read_tool_result(
    turn: TurnRecord, event: Mapping[str, Any], args_by_id: dict[str, dict[str, Any]]
) -> None:
    turn.tool_results.append(
        {
            "id": event.get("id"),
            "name": event["name"],
            "args": args_by_id.get(str(event.get("id")), {}),
            "result": event.get("result"),
        }
    )


def _read_chart(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """A chart the turn drew: its intent as applied, its spec and how many marks (the chart
    expectation is judged from these, never from pixels)."""
    intent, spec = event.get("intent"), event.get("spec")
    turn.charts.append(
        {
            "intent": dict(intent) if isinstance(intent, Mapping) else {},
            "spec": dict(spec) if isinstance(spec, Mapping) else {},
            "marks": event.get("marks"),
        }
    )


def _read_answer(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """Text and its withdrawals: the answer is read whole after the trace (:func:`answer_text`),
    since a ``stream_reset`` takes back chunks already read."""


def _read_notice(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """Retries, fallbacks and guards said while the turn ran: kept in the trace (``done`` carries
    their counts)."""


def _read_confirm_mutation(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """Kept in the trace only: an eval turn never waits for a human (the case's confirmations
    decide, and the mutate call's result is what the judges read)."""


def _read_recall(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """What recall found before the turn (kind, id, name, score of each entry)."""
    turn.recalled = [dict(item) for item in event.get("items") or () if isinstance(item, Mapping)]


def _read_error(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    turn.error = str(event.get("code") or "error")


def _read_done(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    if event.get("orchestration") is not None:
        turn.orchestration = dict(event["orchestration"])
    turn.guards = dict(event["guards"]) if event.get("guards") else None
    turn.trusted = dict(event["trusted"]) if event.get("trusted") else None
    turn.gates = [dict(gate) for gate in event["gates"]] if event.get("gates") else None
    turn.attempts = dict(event["attempts"]) if event.get("attempts") else None
    turn.fallbacks = (
        [dict(switch) for switch in event["fallbacks"]] if event.get("fallbacks") else None
    )
    cost = event.get("cost")
    if isinstance(cost, Mapping):
        turn.cost = dict(cost)
        usd = cost.get("usd")
        turn.cost_usd = None if usd is None else float(usd)
        turn.cost_sources = [str(source) for source in cost.get("sources") or ()]
    usage = event.get("usage") or {}
    turn.usage = {
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
    }


def _skip(turn: TurnRecord, event: Mapping[str, Any], _: Any) -> None:
    """An event type this runner does not know (a newer server's): kept in the trace only."""


# How an eval trace reads each event type into the judges' turn (tests/test_architecture.py
# checks that every public type of core/events.py has one here); unknown types are skipped.
TRACE_READERS: dict[str, Callable[[TurnRecord, Mapping[str, Any], Any], None]] = {
    ToolCall.type: _read_tool_call,
    ToolResult.type: _read_tool_result,
    TextChunk.type: _read_answer,
    StreamReset.type: _read_answer,
    Notice.type: _read_notice,
    ConfirmMutation.type: _read_confirm_mutation,
    Error.type: _read_error,
    Done.type: _read_done,
    Chart.type: _read_chart,
    Recall.type: _read_recall,
}


async def open_project(target: Any, exposed: Sequence[str] | None = None) -> Any:
    """The project a case runs against: a GraphQL URL, a demo name (``inventory``, ``large``),
    or a schema object (graphql-core or graphene, connected afresh for every case).

    ``exposed`` limits the managers the chat sees. A GraphQL server cannot tell which of its
    managers GeneralManager marks ``chat_exposed``, so URL targets usually need it.
    """
    from ..core.session import connect_project
    from ..core.settings import load_settings

    settings = load_settings(exposed_managers=list(exposed) if exposed is not None else None)
    return await connect_project(settings, target)


def _fallback_label(provider: Any) -> str:
    if isinstance(provider, str):
        return provider
    if isinstance(provider, type):  # a class's ``label`` is the property object, not a name
        return provider.__name__
    return provider_label(provider)


def _label(provider: Any, config: Mapping[str, Any] | None = None) -> str:
    """The report column: the built provider's own label (``openai:gpt-4.1-mini``, a cassette's
    recorded label), else the spec or class name when it cannot be built."""
    try:
        return provider_label(create_provider(provider, config))
    except Exception:  # run_case reports why it cannot be built; the column keeps the spec
        return _fallback_label(provider)


def provider_note(provider: Any) -> str | None:
    """The provider's ``description`` when it has a non-empty text one, else None."""
    note = getattr(provider, "description", None)
    return note.strip() if isinstance(note, str) and note.strip() else None


async def run_case(
    case: Case,
    provider: Any,
    *,
    provider_config: Mapping[str, Any] | None = None,
    project: Any = None,
    exposed: Sequence[str] | None = None,
    label: str | None = None,
    strategy: str | None = None,
    prices: Mapping[str, Any] | None = None,
    knowledge: str | None = None,
) -> CaseResult:
    """Run one case's conversation in one fresh Chat (fresh project, in-memory store).

    ``project`` (a GraphQL URL or demo name) overrides the case's own; ``exposed`` limits the
    managers the chat sees there. ``strategy`` (``legacy``, the default, or ``planned``) applies
    unless the case names its own; a planned case's ``providers`` pin roles to other providers.
    ``provider`` ``"oracle"`` (or ``"oracle:lean"``) is the case's scripted oracle
    (:mod:`.oracle`), played for the strategy the case runs with. ``prices`` is the chat's
    ``prices`` setting (a model's price by provider label or model name): the turns' costs use
    it. A case with a ``budget`` gets a ``Budget`` verdict (:func:`.costs.judge_budget`).
    ``knowledge`` is the recall mode (:data:`KNOWLEDGE_MODES`; ``None``: the settings'); the
    case's dataset knowledge is imported before its first question whatever the mode (``off``
    keeps it from being recalled), and knowledge the project refuses leaves the case unscored.
    """
    from ..chat import Chat

    result = CaseResult(case=case, provider=label or _fallback_label(provider))
    result.knowledge = knowledge
    result.strategy = case.strategy or strategy or "legacy"
    planned = result.strategy == "planned"
    started = time.perf_counter()
    try:
        built: BaseLLMProvider
        if is_oracle(provider):
            built = oracle_provider(case, result.strategy, provider)
        else:
            built = create_provider(provider, provider_config)
        result.provider = label or provider_label(built)
        result.provider_note = provider_note(built)
        check_ready(built)  # missing credentials, say: no request could succeed
        pinned = {
            key: CountingProvider(create_provider(spec))
            for key, spec in (case.providers.items() if planned else ())
        }
        for pin in pinned.values():
            check_ready(pin.inner)
    except Exception as error:  # a provider that cannot be built or used is not the model's fault
        result.status, result.error = "unscored", "provider_unavailable"
        result.reasons.append(f"provider_unavailable: {error}")
        return result
    counter = CountingProvider(built)
    counters = [counter, *pinned.values()]
    settings = planned_settings_block(counter, pinned) if planned else None
    if prices:
        settings = {**(settings or {}), "prices": dict(prices)}
    if knowledge is not None:
        settings = {**(settings or {}), "knowledge": knowledge}
    target = project or case.project
    opened = None
    chat = None
    try:
        opened = await open_project(target, exposed)
        chat = Chat(project=opened, provider=counter, store=":memory:", settings=settings)
        session = await chat.session()
        resolve = _resolver(session.project)
        if case.knowledge is not None:
            session.knowledge.import_data(case.knowledge)
        for user in case.conversation:
            asked = [c.requests for c in counters]
            sent = sum(c.prompt_characters for c in counters)
            offers_before = sum(c.tool_offers for c in counters)
            calls_before = sum(c.tool_calls for c in counters)
            for c in counters:
                c.take_system_prompts()  # what opening the session sent is not this turn's
            roles_before = [c.roles.snapshot() for c in counters]
            tick = time.perf_counter()
            turn = await chat.ask(user)
            record = _turn_from_events(user, turn.events)
            record.requests = sum(c.requests for c in counters) - sum(asked)
            record.tool_offers = sum(c.tool_offers for c in counters) - offers_before
            record.provider_tool_calls = sum(c.tool_calls for c in counters) - calls_before
            record.prompt_characters = sum(c.prompt_characters for c in counters) - sent
            record.system_prompts = [p for c in counters for p in c.take_system_prompts()]
            record.roles = sum_roles(
                *(
                    minus_roles(c.roles.snapshot(), earlier)
                    for c, earlier in zip(counters, roles_before, strict=True)
                )
            )
            record.seconds = time.perf_counter() - tick
            if record.cost is None:  # it ended without saying (an error), or asked no model
                used = [c for c, n in zip(counters, asked, strict=True) if c.requests > n]
                record.cost_usd, record.cost_sources = unsaid_cost(used, prices)
            result.turns.append(record)
            if record.error:
                result.error = record.error
                if record.error in UNSCORED_CODES:
                    break
        result.verdicts = judge_case(case.expectations, result.turns, resolve)
        result.right_manager = names_expected_managers(case.expectations, result.turns, resolve)
    except KnowledgeError as error:  # the dataset's knowledge, not the model, is at fault
        result.status, result.error = "unscored", "knowledge_invalid"
        result.reasons.append(f"knowledge_invalid: {error.message}")
    except Exception as error:
        result.status, result.error = "unscored", "chat_error"
        result.reasons.append(f"chat_error: {type(error).__name__}: {error}")
    finally:
        result.seconds = time.perf_counter() - started
        if chat is not None:
            await chat.aclose()
        if opened is not None:
            await opened.aclose()
    if result.status == "unscored":
        return result
    if result.error in UNSCORED_CODES:
        result.status = "unscored"
        result.reasons.append(f"error: {result.error}")
        return result
    if result.error:
        result.reasons.append(f"error: {result.error}")
    if case.budget is not None:
        result.verdicts.append(judge_budget(case.budget, result))
    for verdict in result.verdicts:
        result.reasons.extend(f"{verdict.dimension}: {r}" for r in verdict.reasons)
        result.reasons.extend(f"strategy: {d}" for d in verdict.deviations)
    result.status = "pass" if all(v.passed for v in result.verdicts) else "fail"
    if result.error and not result.verdicts:
        result.status = "fail"
    return result


def _resolver(project: Any) -> Any:
    index = getattr(project, "index", None)
    if index is None:
        return None

    def resolve(name: str) -> str | None:
        found = index.find(name)
        return None if found is None else str(found.name)

    return resolve


async def run_cases(
    cases: Sequence[Case],
    providers: Sequence[Any],
    *,
    concurrency: int = 4,
    provider_config: Mapping[str, Any] | None = None,
    project: Any = None,
    exposed: Sequence[str] | None = None,
    on_result: ResultCallback | None = None,
    strategy: str | None = None,
    prices: Mapping[str, Any] | None = None,
    knowledge: Sequence[str] | None = None,
) -> list[CaseResult]:
    """Every case against every provider (and knowledge mode), at most ``concurrency`` at a
    time, in input order.

    ``on_result`` is called with each result as its case finishes (a progress bar, a live table);
    an exception it raises ends the run. ``strategy`` and ``prices`` are :func:`run_case`'s.
    ``knowledge``: the recall modes to run every case with (:data:`KNOWLEDGE_MODES`; ``None``:
    once, as the settings say); with more than one, each provider's label names the mode
    (``offline [hybrid]``), a report column each.
    """
    semaphore = asyncio.Semaphore(max(1, concurrency))
    modes: list[str | None] = list(knowledge) if knowledge else [None]

    runs: list[tuple[Any, str, str | None]] = []
    labels: list[str] = []
    for provider in providers:
        base = _label(provider, provider_config)
        for mode in modes:
            named = f"{base} [{mode}]" if len(modes) > 1 else str(base)
            label, number = named, 1
            while label in labels:
                number += 1
                label = f"{named}#{number}"
            labels.append(label)
            runs.append((provider, label, mode))

    async def one(case: Case, provider: Any, label: str, mode: str | None) -> CaseResult:
        async with semaphore:
            result = await run_case(
                case,
                provider,
                provider_config=provider_config,
                project=project,
                exposed=exposed,
                label=label,
                strategy=strategy,
                prices=prices,
                knowledge=mode,
            )
        if on_result is not None:
            on_result(result)
        return result

    jobs = [one(case, provider, label, mode) for provider, label, mode in runs for case in cases]
    return list(await asyncio.gather(*jobs))

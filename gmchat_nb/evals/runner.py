"""Run eval cases against one or more providers, concurrently, and judge them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.providers.base import BaseLLMProvider, Message, ProviderEvent, ToolDefinition
from ..core.providers.registry import create_provider, provider_label
from .dataset import Case
from .judges import TurnData, Verdict, judge_case

__all__ = ["CaseResult", "CountingProvider", "TurnRecord", "run_case", "run_cases"]

# error codes that are not the model's fault: the case is UNSCORED instead of FAIL
UNSCORED_CODES = frozenset({"rate_limited", "chat_error", "confirmation_unavailable"})


class CountingProvider(BaseLLMProvider):
    """Wraps a provider and counts its ``complete`` calls (provider requests)."""

    name = "counting"

    def __init__(self, inner: Any) -> None:
        super().__init__(dict(getattr(inner, "provider_config", {}) or {}))
        self.inner = inner
        self.requests = 0

    @property
    def label(self) -> str:
        return provider_label(self.inner)

    @property
    def timeout_seconds(self) -> float:
        return float(getattr(self.inner, "timeout_seconds", 60))

    @property
    def stream_timeout_seconds(self) -> float:
        return float(getattr(self.inner, "stream_timeout_seconds", 30))

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        self.requests += 1
        async for event in self.inner.complete(messages, tools):
            yield event


@dataclass
class TurnRecord(TurnData):
    user: str = ""
    requests: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    seconds: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)


@dataclass
class CaseResult:
    case: Case
    provider: str
    status: str = "fail"  # pass | fail | unscored
    turns: list[TurnRecord] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    error: str | None = None
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0

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
    def answer(self) -> str:
        return self.turns[-1].answer if self.turns else ""


def _turn_from_events(user: str, events: Sequence[Mapping[str, Any]]) -> TurnRecord:
    turn = TurnRecord(user=user, events=[dict(e) for e in events])
    args_by_id: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "tool_call":
            args = dict(event.get("args") or {})
            args_by_id[str(event.get("id"))] = args
            turn.tool_calls.append({"id": event.get("id"), "name": event["name"], "args": args})
        elif kind == "tool_result":
            turn.tool_results.append(
                {
                    "id": event.get("id"),
                    "name": event["name"],
                    "args": args_by_id.get(str(event.get("id")), {}),
                    "result": event.get("result"),
                }
            )
        elif kind == "text_chunk":
            turn.answer += str(event.get("content", ""))
        elif kind == "error":
            turn.error = str(event.get("code") or "error")
        elif kind == "done":
            usage = event.get("usage") or {}
            turn.usage = {
                "input_tokens": int(usage.get("input_tokens", 0)),
                "output_tokens": int(usage.get("output_tokens", 0)),
            }
    return turn


async def _open_project(target: str) -> Any:
    from ..core.project import connect, demo_project

    if "://" in target:
        return await connect(target)
    return demo_project(target.removeprefix("demo:"))


async def run_case(
    case: Case,
    provider: Any,
    *,
    provider_config: Mapping[str, Any] | None = None,
    project: str | None = None,
    label: str | None = None,
) -> CaseResult:
    """Run one case's conversation in one fresh Chat (fresh project, in-memory store)."""
    from ..chat import Chat

    name = label or (provider if isinstance(provider, str) else provider_label(provider))
    result = CaseResult(case=case, provider=str(name))
    started = time.perf_counter()
    try:
        built = create_provider(provider, provider_config)
    except Exception as error:  # a provider that cannot be constructed is not the model's fault
        result.status, result.error = "unscored", "provider_unavailable"
        result.reasons.append(f"provider_unavailable: {error}")
        return result
    counter = CountingProvider(built)
    target = project or case.project
    opened = None
    chat = None
    try:
        opened = await _open_project(target)
        chat = Chat(project=opened, provider=counter, store=":memory:")
        session = await chat.session()
        resolve = _resolver(session.project)
        for user in case.conversation:
            before = counter.requests
            tick = time.perf_counter()
            turn = await chat.ask(user)
            record = _turn_from_events(user, turn.events)
            record.requests = counter.requests - before
            record.seconds = time.perf_counter() - tick
            result.turns.append(record)
            if record.error:
                result.error = record.error
                if record.error in UNSCORED_CODES:
                    break
        result.verdicts = judge_case(case.expectations, result.turns, resolve)
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
    project: str | None = None,
) -> list[CaseResult]:
    """Every case against every provider, at most ``concurrency`` at a time, in input order."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    labels: list[str] = []
    for provider in providers:
        base = provider if isinstance(provider, str) else provider_label(provider)
        label, number = str(base), 1
        while label in labels:
            number += 1
            label = f"{base}#{number}"
        labels.append(label)

    async def one(case: Case, provider: Any, label: str) -> CaseResult:
        async with semaphore:
            return await run_case(
                case, provider, provider_config=provider_config, project=project, label=label
            )

    jobs = [
        one(case, provider, label)
        for provider, label in zip(providers, labels, strict=True)
        for case in cases
    ]
    return list(await asyncio.gather(*jobs))

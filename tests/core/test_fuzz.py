"""Seeded fuzzing of the five tools and of whole turns with adversarial input (deep nesting, lone
surrogates, megabyte strings, wrong types, hidden manager names): nothing raises, every error is
a result the model can read, every turn ends with exactly one terminal event, and no hidden
manager shows — not by name, and not by answering differently than for a manager that does not
exist at all. Real demo projects (graphql-core over SQLite), the real loop and session."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gmchat_nb import Chat
from gmchat_nb.core.project import LocalExecutor, Project
from gmchat_nb.core.project.demo import DemoSpec, build_demo, demo_spec
from gmchat_nb.core.providers.scripted import ScriptedProvider

from ..adversarial import EXPOSED, HIDDEN, leaked, text, tool_calls

WRITES = ["createPart", "updatePart", "createProject"]
FUZZ = settings(
    derandomize=True,  # seeded: the same examples on every run and machine
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def fuzz(examples: int) -> settings:
    """:data:`FUZZ` with this many examples."""
    return settings(FUZZ, max_examples=examples)


def without(spec: DemoSpec, gone: set[str]) -> DemoSpec:
    """The spec as if the ``gone`` managers had never been written: no rows, no relations."""
    managers = []
    for manager in spec.managers:
        if manager.name in gone:
            continue
        dropped = {r.name for r in manager.relations if r.target in gone}
        managers.append(
            dataclasses.replace(
                manager,
                relations=tuple(r for r in manager.relations if r.target not in gone),
                rows=tuple(
                    {k: v for k, v in row.items() if k not in dropped} for row in manager.rows
                ),
            )
        )
    return dataclasses.replace(spec, managers=tuple(managers))


@pytest.fixture(scope="module")
def projects() -> Iterator[tuple[asyncio.Runner, Project, Project]]:
    """The inventory demo with three managers hidden, and the same demo without them."""
    spec = demo_spec("inventory")
    with asyncio.Runner() as runner:
        hidden = Project(
            LocalExecutor(build_demo(spec).schema), exposed=EXPOSED, allowed_mutations=WRITES
        )
        absent = Project(
            LocalExecutor(build_demo(without(spec, set(HIDDEN))).schema),
            exposed=EXPOSED,
            allowed_mutations=WRITES,
        )
        yield runner, hidden, absent
        runner.run(hidden.aclose())
        runner.run(absent.aclose())


@fuzz(400)
@given(call=tool_calls)
def test_tools_answer_every_call_and_never_reveal_a_hidden_manager(
    projects: tuple[asyncio.Runner, Project, Project], call: tuple[Any, Any]
) -> None:
    runner, hidden, absent = projects
    name, args = call
    result = runner.run(hidden.call_tool(name, args))
    assert isinstance(result, dict | list) or result is None
    encoded = json.dumps(result)  # a model can receive it
    assert len(encoded) < 300_000, "a tool result must not grow with the input"
    if isinstance(result, dict) and result.get("status") == "error":
        assert isinstance(result.get("code"), str) and result["code"] != "tool_failed", result
        assert isinstance(result.get("message"), str) and len(result["message"]) < 4_000
    assert leaked(result, call) == []
    # Invisible means: the same answer as a project where those managers never existed.
    assert result == runner.run(absent.call_tool(name, args))


@fuzz(40)
@given(
    rounds=st.lists(
        st.one_of(
            text.map(lambda t: {"text": t}),
            tool_calls.map(lambda call: {"tool_calls": [_scripted_call(*call)]}),
            st.lists(tool_calls, min_size=2, max_size=3).map(
                lambda calls: {"tool_calls": [_scripted_call(*c) for c in calls]}
            ),
        ),
        min_size=1,
        max_size=5,
    ),
    question=text,
)
def test_every_fuzzed_turn_ends_with_exactly_one_terminal_event(
    rounds: list[dict[str, Any]], question: str
) -> None:
    async def play() -> list[list[dict[str, Any]]]:
        chat = Chat(
            project=Project(
                LocalExecutor(build_demo(demo_spec("inventory")).schema), exposed=EXPOSED
            ),
            provider=ScriptedProvider({"rounds": rounds}),
            store=":memory:",
            allowed_mutations=WRITES,
            max_retries_per_message=5,
        )
        try:
            first = await chat.ask(question)
            second = await chat.ask("And now?")  # never poisoned by the first
            return [first.events, second.events]
        finally:
            await chat.aclose()

    for events in asyncio.run(play()):
        kinds = [e["type"] for e in events]
        assert kinds.count("done") + kinds.count("error") == 1, kinds
        assert kinds[-1] in ("done", "error"), kinds
        assert leaked(events, [rounds, question]) == []
        json.dumps(events)


def _scripted_call(name: Any, args: Any) -> dict[str, Any]:
    """A scripted tool call; names a script cannot hold become text (the model wrote them)."""
    return {"name": name if isinstance(name, str) else json.dumps(name), "args": args}

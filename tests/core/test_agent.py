"""The MCP server's core, :class:`AgentToolbox`, over the real inventory demo and a real SQLite
store: the tools an agent is offered and their hints, the shape of every result, bad arguments
of every kind answered as results (never raised), hidden managers answering exactly as managers
that never existed, the request budget, audit and hooks, and data changes as turns of the actor
— run at once, confirmed by the agent's user, declined, left pending and decided by a person in
another session, claimed at most once, expired — plus a seeded fuzz of ``call``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gmchat_nb.core.agent import AgentResult, AgentToolbox, PendingChange
from gmchat_nb.core.events import ChatEvent, ToolResult
from gmchat_nb.core.project import LocalExecutor, Project
from gmchat_nb.core.project.demo import build_demo, demo_spec
from gmchat_nb.core.project.tools import TOOLS
from gmchat_nb.core.session.actor import Actor
from gmchat_nb.core.session.compose import (
    build_provider,
    connect_project,
    open_session,
    open_store,
)
from gmchat_nb.core.settings import ChatSettings, load_settings
from gmchat_nb.core.store import ChatStore

from ..adversarial import EXPOSED, HIDDEN, Nested, leaked, tool_calls
from .test_fuzz import fuzz, without

ALICE = Actor("agent-test:alice", "alice")
BOB = Actor("agent-test:bob", "bob")
ANONYMOUS = Actor("agent-test:anonymous", authenticated=False)
WRITES = {"allowed_mutations": ["createPart", "createProject"], "confirm_mutations": []}
CONFIRMED = {
    "allowed_mutations": ["createPart", "createProject"],
    "confirm_mutations": ["createProject"],
}
READS = ["search_managers", "get_manager_schema", "find_path", "query"]


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


class Bench:
    """Settings, projects, stores and toolboxes of one test (one SQLite store file)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path / "chat.sqlite3")
        self.projects: list[Project] = []
        self.stores: list[ChatStore] = []

    def settings(self, **overrides: Any) -> ChatSettings:
        overrides.setdefault("exposed_managers", EXPOSED)
        return load_settings(None, project="demo", store=self.path, **overrides)

    async def project(self, settings: ChatSettings, target: Any = None) -> Project:
        project = await connect_project(settings, target)
        self.projects.append(project)
        return project

    def store(self, settings: ChatSettings) -> ChatStore:
        """A store object of its own over the test's file (as another process would open it)."""
        store = open_store(settings)
        self.stores.append(store)
        return store

    async def toolbox(
        self,
        settings: ChatSettings | None = None,
        *,
        project: Project | None = None,
        actor: Actor = ALICE,
        clock: Clock | None = None,
    ) -> AgentToolbox:
        settings = settings or self.settings()
        project = project or await self.project(settings)
        extra = {"clock": clock} if clock is not None else {}
        return AgentToolbox(project, settings, store=self.store(settings), actor=actor, **extra)

    async def close(self) -> None:
        for store in self.stores:
            store.close()
        for project in self.projects:
            await project.aclose()


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    bench = Bench(tmp_path)
    yield bench
    await bench.close()


def absent_project(settings: ChatSettings) -> Project:
    """The inventory demo as if its hidden managers had never been written (as
    :func:`connect_project` would connect the demo)."""
    spec = without(demo_spec("inventory"), set(HIDDEN))
    return Project(
        LocalExecutor(build_demo(spec).schema),
        exposed=EXPOSED,
        allowed_mutations=settings.allowed_mutations,
        max_results=settings.max_results,
        max_page_size=spec.max_page_size,
        query_timeout=settings.query_timeout_seconds,
        label="demo:inventory",
    )


async def rows(toolbox: AgentToolbox, manager: str, name: str) -> list[dict[str, Any]]:
    """The rows of ``manager`` named ``name``, as the agent reads them."""
    answer = await toolbox.call(
        "query",
        {"manager": manager, "fields": ["id", "name"], "filters": {"name": name}, "limit": 50},
    )
    assert not answer.is_error, answer.text
    return list(answer.structured["rows"])


def sendable(answer: AgentResult) -> None:
    """What a transport must be able to send: JSON in UTF-8, text and structured alike."""
    assert isinstance(answer, AgentResult)
    json.dumps(answer.structured, ensure_ascii=False).encode("utf-8")
    answer.text.encode("utf-8")
    if answer.is_error:
        assert answer.structured["status"] == "error"
        assert isinstance(answer.structured["code"], str)
        assert isinstance(answer.structured["message"], str)
        assert answer.structured["code"] in answer.text


# -- the tools offered -------------------------------------------------------------------------


async def test_reads_are_offered_with_their_hints_and_mutate_only_when_mutations_are_allowed(
    bench: Bench,
) -> None:
    reading = await bench.toolbox()
    assert [tool.name for tool in reading.tools()] == READS
    for tool in reading.tools():
        assert tool.annotations["readOnlyHint"] is True
        assert tool.annotations["openWorldHint"] is False
        assert tool.input_schema["type"] == "object"
        assert tool.description and tool.title
    query = next(tool for tool in reading.tools() if tool.name == "query")
    assert query.annotations["idempotentHint"] is True
    assert query.output_schema is not None
    assert set(query.output_schema["required"]) <= set(query.output_schema["properties"])

    writing = await bench.toolbox(bench.settings(**WRITES))
    mutate = next(tool for tool in writing.tools() if tool.name == "mutate")
    assert [tool.name for tool in writing.tools()] == [*READS, "mutate"]
    assert mutate.annotations == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert mutate.input_schema["properties"]["confirmation_id"]["type"] == "string"
    assert {"mutation", "input"} <= set(mutate.input_schema["properties"])
    assert mutate.input_schema["required"] == []  # either a change or a confirmation_id
    assert "confirmation_id" in mutate.description
    # hidden managers stay out of every declaration
    assert leaked([dataclasses.asdict(tool) for tool in writing.tools()], "") == []


async def test_direct_strategy_adds_a_query_tool_per_exposed_manager(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(tool_strategy="direct"))
    direct = [tool for tool in toolbox.tools() if tool.name.startswith("query_")]
    assert sorted(tool.name for tool in direct) == [f"query_{name.lower()}" for name in EXPOSED]
    for tool in direct:
        assert tool.annotations == {
            "readOnlyHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        }
        assert tool.output_schema is not None
    answer = await toolbox.call("query_part", {"fields": ["name"], "limit": 2})
    assert not answer.is_error
    assert len(answer.structured["rows"]) == 2 and answer.structured["has_more"] is True
    assert (await toolbox.call("query_supplier", {"fields": ["name"]})).is_error


# -- results -----------------------------------------------------------------------------------


async def test_each_read_answers_its_json_and_a_text(bench: Bench) -> None:
    toolbox = await bench.toolbox()
    query = await toolbox.call("query", {"manager": "Part", "fields": ["name"], "limit": 3})
    assert not query.is_error
    assert set(query.structured) >= {"rows", "total", "has_more", "complete"}
    assert query.structured["rows"] == [{"name": "Bolt"}, {"name": "Bearing"}, {"name": "Gear"}]
    assert query.structured["total"] == 28
    assert query.structured["has_more"] is True and query.structured["complete"] is False
    assert query.text.splitlines() == [
        "3 rows of 28; more with a larger offset.",
        '{"name": "Bolt"}',
        '{"name": "Bearing"}',
        '{"name": "Gear"}',
    ]
    whole = await toolbox.call(
        "query", {"manager": "Material", "fields": ["name"], "filters": {"name": "Steel"}}
    )
    assert whole.structured["complete"] is True and whole.structured["has_more"] is False
    assert whole.structured["rows"] == [{"name": "Steel"}]

    search = await toolbox.call("search_managers", {"query": "parts in stock"})
    assert not search.is_error
    assert search.structured["result"][0]["manager"] == "Part"
    assert json.loads(search.text) == search.structured["result"]

    schema = await toolbox.call("get_manager_schema", {"manager": "Part"})
    assert not schema.is_error and schema.structured["manager"] == "Part"
    assert "name" in schema.structured["fields"]
    assert json.loads(schema.text) == schema.structured
    assert toolbox.manager_schema("Part") == schema.structured

    path = await toolbox.call("find_path", {"from_manager": "Project", "to_manager": "Material"})
    assert not path.is_error, path.text
    assert "Material" in path.text

    assert [manager["name"] for manager in toolbox.managers()] == EXPOSED
    for answer in (query, whole, search, schema, path):
        sendable(answer)


# -- bad arguments -----------------------------------------------------------------------------

BAD_CALLS: list[tuple[Any, Any, str]] = [
    ("query", {"manager": "Part", "fields": "name"}, "invalid_arguments"),
    ("query", {"manager": 3, "fields": ["name"]}, "invalid_arguments"),
    ("query", {"manager": "Part", "fields": ["name"], "limit": "ten"}, "invalid_arguments"),
    ("query", {"manager": "Part", "fields": ["name"], "bogus": 1}, "invalid_arguments"),
    ("query", [1, 2], "invalid_arguments"),
    ("search_managers", "parts", "invalid_arguments"),
    ("search_managers", 42, "invalid_arguments"),
    ("get_manager_schema", {}, "invalid_arguments"),
    ("find_path", {"from_manager": ["Part"], "to_manager": None}, "invalid_arguments"),
    ("query", {"manager": Nested(40), "fields": ["name"]}, "invalid_arguments"),
    (
        "query",
        {"manager": "Part", "fields": ["name"], "filters": Nested(5_000)},
        "invalid_arguments",
    ),
    ("get_manager_schema", {"manager": "Part\ud800"}, ""),
    ("query", {"manager": "Pa\udfffrt", "fields": ["name\ud83d"]}, ""),
    ("search_managers", {"query": "steel " * 200_000}, ""),
    ("get_manager_schema", {"manager": "x" * 1_000_000}, ""),
    ("delete_everything", {}, "unknown_tool"),
    (None, {}, "unknown_tool"),
    (42, {"manager": "Part"}, "unknown_tool"),
    ("query\ud800", {}, "unknown_tool"),
    ("mutate", {"mutation": "createPart", "input": {"name": "Bolt"}}, ""),  # not offered
]


@pytest.mark.parametrize(("name", "args", "code"), BAD_CALLS, ids=range(len(BAD_CALLS)))
async def test_bad_calls_are_results_the_agent_can_read(
    bench: Bench, name: Any, args: Any, code: str
) -> None:
    toolbox = await bench.toolbox(bench.settings(rate_limit={"requests": None}))
    answer = await toolbox.call(name, args)
    sendable(answer)
    assert len(answer.text) < 300_000, "an answer must not grow with the input"
    if code:
        assert answer.is_error and answer.structured["code"] == code, answer.text
    elif answer.is_error:  # a long or odd name may be refused or answered as unknown
        assert answer.structured["code"] != "tool_failed"
    if name == "mutate":
        assert answer.is_error
        assert await rows(toolbox, "Part", "Bolt") == [{"id": "1", "name": "Bolt"}]


async def test_mutate_arguments_are_checked_before_anything_runs(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**WRITES))
    bad = [
        ({}, "invalid_arguments"),
        ({"mutation": "createPart", "input": {"name": "X"}, "extra": 1}, "invalid_arguments"),
        ({"input": {"name": "X"}}, "invalid_arguments"),
        ({"mutation": "deletePart", "input": {"id": "1"}}, "mutation_not_allowed"),
        ({"mutation": "createPart", "input": {"name": 7}}, ""),
        ({"mutation": "createPart", "input": {"nom": "X"}}, ""),
        ({"mutation": "createPart", "input": "X"}, ""),
        ({"confirmation_id": 5}, "invalid_arguments"),
        ({"confirmation_id": "mcp-x", "mutation": "createPart"}, "invalid_arguments"),
        ({"confirmation_id": "mcp-nothing"}, "unknown_confirmation"),
    ]
    for args, code in bad:
        answer = await toolbox.call("mutate", args)
        sendable(answer)
        assert answer.is_error, (args, answer.text)
        if code:
            assert answer.structured["code"] == code, (args, answer.text)
    # nothing was stored: a mistake is not a turn
    assert toolbox.store.conversations(ALICE.id) == []
    assert await rows(toolbox, "Part", "X") == []


# -- hidden managers ---------------------------------------------------------------------------

HIDDEN_PROBES: list[tuple[str, dict[str, Any]]] = [
    ("get_manager_schema", {"manager": "Supplier"}),
    ("get_manager_schema", {"manager": "supplier"}),
    ("get_manager_schema", {"manager": "PurchaseOrder"}),
    ("get_manager_schema", {"manager": "AuditSecret"}),
    ("query", {"manager": "Supplier", "fields": ["name"]}),
    ("query", {"manager": "PurchaseOrder", "fields": ["number"]}),
    ("query", {"manager": "Part", "fields": ["name", {"supplier": ["name"]}]}),
    ("query", {"manager": "Part", "fields": ["name"], "filters": {"supplier__name": "Acme"}}),
    ("query", {"manager": "Part", "fields": ["name"], "root": "supplierList"}),
    ("find_path", {"from_manager": "Part", "to_manager": "Supplier"}),
    ("find_path", {"from_manager": "PurchaseOrder", "to_manager": "Part"}),
    ("search_managers", {"query": "supplier purchase orders audit secrets"}),
    ("mutate", {"mutation": "createPurchaseOrder", "input": {"number": "PO-1"}}),
    ("mutate", {"mutation": "createPart", "input": {"name": "Bolt 2", "supplier": "1"}}),
    ("query_supplier", {"fields": ["name"]}),
]


async def test_hidden_managers_answer_exactly_like_managers_that_do_not_exist(
    bench: Bench,
) -> None:
    settings = bench.settings(**WRITES, rate_limit={"requests": None})
    hidden = await bench.toolbox(settings)
    absent = await bench.toolbox(
        settings, project=await bench.project(settings, absent_project(settings)), actor=BOB
    )
    for name, args in HIDDEN_PROBES:
        answer = await hidden.call(name, args)
        assert leaked([answer.structured, answer.text], [name, args]) == [], (name, args)
        assert answer == await absent.call(name, args), (name, args)
    for name in [*HIDDEN, "supplier", "SupplierType", "Nowhere"]:
        assert hidden.manager_schema(name) is None
        assert absent.manager_schema(name) is None
    assert hidden.managers() == absent.managers()
    assert hidden.tools() == absent.tools()


# -- budgets, audit, hooks ---------------------------------------------------------------------


async def test_the_request_budget_refuses_the_fourth_call(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(rate_limit={"requests": 3}))
    read = {"manager": "Part", "fields": ["name"], "limit": 1}
    for limit in (1, 2, 3):  # distinct reads (the same one again is the loop guard's)
        assert not (await toolbox.call("query", {**read, "limit": limit})).is_error
    refused = await toolbox.call("query", read)
    assert refused.is_error and refused.structured["code"] == "rate_limited"
    assert isinstance(refused.structured["retry_after_seconds"], int | float)
    assert refused.structured["retry_after_seconds"] > 0
    # the budget is the actor's, kept in the store: a new toolbox of the same actor is refused
    again = await bench.toolbox(bench.settings(rate_limit={"requests": 3}))
    assert (await again.call("search_managers", {"query": "part"})).structured[
        "code"
    ] == "rate_limited"
    other = await bench.toolbox(bench.settings(rate_limit={"requests": 3}), actor=BOB)
    assert not (await other.call("query", read)).is_error


async def test_a_change_counts_against_the_budget_too(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**WRITES, rate_limit={"requests": 2}))
    assert not (await toolbox.call("query", {"manager": "Part", "fields": ["name"]})).is_error
    made = await toolbox.call("mutate", {"mutation": "createPart", "input": {"name": "Budget"}})
    assert made.structured["status"] == "executed", made.text
    refused = await toolbox.call(
        "mutate", {"mutation": "createPart", "input": {"name": "Budget 2"}}
    )
    assert refused.is_error and refused.structured["code"] == "rate_limited"
    assert len(await _rows_unlimited(bench, "Part", "Budget")) == 1
    assert await _rows_unlimited(bench, "Part", "Budget 2") == []


async def _rows_unlimited(bench: Bench, manager: str, name: str) -> list[dict[str, Any]]:
    """Rows read by another actor on the first toolbox's project (its budget untouched)."""
    project = bench.projects[0]
    reader = await bench.toolbox(
        bench.settings(rate_limit={"requests": None}), project=project, actor=BOB
    )
    return await rows(reader, manager, name)


async def test_calls_are_audited_and_hooked_with_the_actor(bench: Bench) -> None:
    audited: list[dict[str, Any]] = []
    hooked: list[dict[str, Any]] = []
    settings = bench.settings(
        **WRITES,
        audit={"enabled": True, "level": "tool_calls", "logger": audited.append},
        hooks={"tool_called": lambda **payload: hooked.append(payload)},
    )
    toolbox = await bench.toolbox(settings)
    read = {"manager": "Part", "fields": ["name"], "limit": 1, "filters": {"name": "Bolt"}}
    await toolbox.call("query", read)
    await toolbox.call("mutate", {"mutation": "createPart", "input": {"name": "Audited"}})
    calls = [event for event in audited if event["event_type"] == "tool_call"]
    results = [event for event in audited if event["event_type"] == "tool_result"]
    assert [event["tool_name"] for event in calls] == ["query", "mutate"]
    assert calls[0]["args"] == read
    assert calls[1]["args"] == {"mutation": "createPart", "input": {"name": "Audited"}}
    assert "Bolt" in results[0]["result"] and "Audited" in results[1]["result"]
    assert [payload["tool_name"] for payload in hooked] == ["query", "mutate"]
    assert all(payload["actor"] == ALICE for payload in hooked)
    assert hooked[1]["result"]["status"] == "executed"
    # a bad call runs no tool: nothing to audit as a tool call, and nothing raised
    await toolbox.call("query", "not an object")
    assert len([e for e in audited if e["event_type"] == "tool_call"]) == 2


# -- changes -----------------------------------------------------------------------------------


async def test_a_change_that_needs_no_confirmation_runs_once_as_a_turn_of_the_actor(
    bench: Bench,
) -> None:
    toolbox = await bench.toolbox(bench.settings(**WRITES))
    asked: list[PendingChange] = []

    async def ask(change: PendingChange) -> bool:
        asked.append(change)
        return True

    answer = await toolbox.call(
        "mutate", {"mutation": "createPart", "input": {"name": "Widget"}}, ask=ask
    )
    assert not answer.is_error, answer.text
    assert answer.structured["status"] == "executed"
    assert answer.structured["data"]["Part"]["name"] == "Widget"
    assert asked == []  # only confirm-listed changes are asked about
    assert len(await rows(toolbox, "Part", "Widget")) == 1
    [conversation] = toolbox.store.conversations(ALICE.id)
    events = toolbox.store.events(conversation.id)
    kinds = [event["type"] for event in events]
    assert "tool_call" in kinds and "tool_result" in kinds and kinds[-1] == "done"
    assert "confirm_mutation" not in kinds
    tool_messages = [m for m in toolbox.store.messages(conversation.id) if m.role == "tool"]
    assert [m.tool_result["status"] for m in tool_messages] == ["executed"]


async def _pending(
    toolbox: AgentToolbox, name: str, ask: bool | None = None
) -> tuple[AgentResult, list[PendingChange]]:
    asked: list[PendingChange] = []

    async def record(change: PendingChange) -> bool | None:
        asked.append(change)
        return ask

    answer = await toolbox.call(
        "mutate", {"mutation": "createProject", "input": {"name": name}}, ask=record
    )
    return answer, asked


async def test_a_confirmed_change_the_user_accepts_runs_once(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**CONFIRMED))
    answer, asked = await _pending(toolbox, "Apollo II", ask=True)
    assert answer.structured["status"] == "executed", answer.text
    [change] = asked
    assert change.mutation == "createProject" and change.input["name"] == "Apollo II"
    assert change.confirmation_id.startswith("mcp-")
    assert len(await rows(toolbox, "Project", "Apollo II")) == 1
    events = toolbox.store.events(change.conversation_id)
    assert [e["type"] for e in events].count("confirm_mutation") == 1
    # asked again later: the recorded result, nothing runs again
    outcome = await toolbox.call("mutate", {"confirmation_id": change.confirmation_id})
    assert outcome.structured == answer.structured
    assert len(await rows(toolbox, "Project", "Apollo II")) == 1


async def test_a_confirmed_change_the_user_declines_never_runs(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**CONFIRMED))
    answer, [change] = await _pending(toolbox, "Declined", ask=False)
    assert not answer.is_error
    assert answer.structured["status"] == "cancelled"
    assert answer.structured["reason"] == "user_rejected"
    assert await rows(toolbox, "Project", "Declined") == []
    outcome = await toolbox.call("mutate", {"confirmation_id": change.confirmation_id})
    assert outcome.structured["status"] == "cancelled"
    assert outcome.structured["reason"] == "user_rejected"


async def test_an_unanswered_change_stays_pending_until_a_person_confirms_it(
    bench: Bench,
) -> None:
    settings = bench.settings(**CONFIRMED)
    toolbox = await bench.toolbox(settings)
    answer, [change] = await _pending(toolbox, "Pending", ask=None)
    pending = answer.structured
    assert not answer.is_error
    assert pending["status"] == "pending_confirmation"
    assert pending["confirmation_id"] == change.confirmation_id
    assert pending["conversation_id"] == change.conversation_id
    assert pending["input"] == {"name": "Pending"}
    assert 0 < pending["expires_in_seconds"] <= settings.confirm_timeout_seconds
    assert await rows(toolbox, "Project", "Pending") == []
    # without a way to ask (no ask given) it still waits
    waiting = await toolbox.call("mutate", {"confirmation_id": change.confirmation_id})
    assert waiting.structured["status"] == "pending_confirmation"

    # a person decides in another session over the same store, as the confirm route does
    events = await _resume(bench, settings, ALICE, pending["conversation_id"], change, True)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.result["status"] for r in results] == ["executed"]
    assert len(await rows(toolbox, "Project", "Pending")) == 1

    outcome = await toolbox.call("mutate", {"confirmation_id": change.confirmation_id})
    assert outcome.structured["status"] == "executed"
    assert outcome.structured["data"]["Project"]["name"] == "Pending"
    assert outcome.structured == results[0].result


async def _resume(
    bench: Bench,
    settings: ChatSettings,
    actor: Actor,
    conversation_id: str,
    change: PendingChange,
    confirmed: bool,
) -> list[ChatEvent]:
    session = open_session(
        bench.projects[0],
        build_provider(settings),
        settings,
        store=bench.store(settings),
        actor=actor,
        conversation_id=conversation_id,
    )
    return [
        event async for event in session.resume(change.confirmation_id, confirmed, transport="sse")
    ]


async def test_a_change_claimed_twice_runs_once(bench: Bench) -> None:
    settings = bench.settings(**CONFIRMED)
    toolbox = await bench.toolbox(settings)
    _, [change] = await _pending(toolbox, "Twice", ask=None)
    first, second = await asyncio.gather(
        _resume(bench, settings, ALICE, change.conversation_id, change, True),
        _resume(bench, settings, ALICE, change.conversation_id, change, True),
    )
    executed = [
        e for e in [*first, *second] if isinstance(e, ToolResult) and e.id == change.confirmation_id
    ]
    assert len(executed) == 1 and executed[0].result["status"] == "executed"
    assert len(await rows(toolbox, "Project", "Twice")) == 1
    # the agent's own user accepting afterwards runs nothing more
    answer, asked = await _confirmation(toolbox, change.confirmation_id, True)
    assert answer.structured["status"] == "executed" and asked == []
    assert len(await rows(toolbox, "Project", "Twice")) == 1


async def _confirmation(
    toolbox: AgentToolbox, confirmation_id: Any, answer: bool | None
) -> tuple[AgentResult, list[PendingChange]]:
    asked: list[PendingChange] = []

    async def ask(change: PendingChange) -> bool | None:
        asked.append(change)
        return answer

    result = await toolbox.call("mutate", {"confirmation_id": confirmation_id}, ask=ask)
    return result, asked


async def test_a_pending_change_can_be_accepted_when_the_agent_asks_again(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**CONFIRMED))
    _, [change] = await _pending(toolbox, "Later", ask=None)
    answer, asked = await _confirmation(toolbox, change.confirmation_id, True)
    assert [c.confirmation_id for c in asked] == [change.confirmation_id]
    assert answer.structured["status"] == "executed", answer.text
    assert len(await rows(toolbox, "Project", "Later")) == 1
    again, asked = await _confirmation(toolbox, change.confirmation_id, True)
    assert again.structured == answer.structured and asked == []
    assert len(await rows(toolbox, "Project", "Later")) == 1


async def test_another_actors_confirmation_is_unknown(bench: Bench) -> None:
    settings = bench.settings(**CONFIRMED)
    alice = await bench.toolbox(settings)
    bob = await bench.toolbox(settings, project=bench.projects[0], actor=BOB)
    _, [change] = await _pending(alice, "Alice's", ask=None)
    answer, asked = await _confirmation(bob, change.confirmation_id, True)
    assert answer.is_error and answer.structured["code"] == "unknown_confirmation"
    assert asked == []
    # nor can Bob decide it in a session of his own
    with pytest.raises(KeyError):
        await _resume(bench, settings, BOB, change.conversation_id, change, True)
    assert await rows(alice, "Project", "Alice's") == []
    still = await alice.call("mutate", {"confirmation_id": change.confirmation_id})
    assert still.structured["status"] == "pending_confirmation"


async def test_an_expired_change_reports_it_and_can_no_longer_run(bench: Bench) -> None:
    clock = Clock()
    settings = bench.settings(**CONFIRMED, confirm_timeout_seconds=60)
    toolbox = await bench.toolbox(settings, clock=clock)
    answer, [change] = await _pending(toolbox, "Too late", ask=None)
    assert answer.structured["expires_in_seconds"] == 60
    clock.now += 61
    expired, asked = await _confirmation(toolbox, change.confirmation_id, True)
    assert asked == []  # nobody is asked about a change that can no longer run
    assert expired.structured["status"] == "cancelled"
    assert expired.structured["reason"] == "confirmation_timed_out"
    events = await _resume(bench, settings, ALICE, change.conversation_id, change, True)
    assert [e.to_dict()["type"] for e in events] == ["error"]
    again = await toolbox.call("mutate", {"confirmation_id": change.confirmation_id})
    assert again.structured["reason"] == "confirmation_timed_out"
    assert await rows(toolbox, "Project", "Too late") == []


async def test_an_unauthenticated_actor_cannot_change_anything(bench: Bench) -> None:
    toolbox = await bench.toolbox(bench.settings(**WRITES), actor=ANONYMOUS)
    # not offered what would always fail, and refused when called all the same
    assert TOOLS.mutate.name not in [tool.name for tool in toolbox.tools()]
    answer = await toolbox.call("mutate", {"mutation": "createPart", "input": {"name": "Anon"}})
    assert answer.is_error and answer.structured["code"] == "unknown_tool"
    assert await rows(toolbox, "Part", "Anon") == []
    assert toolbox.store.conversations(ANONYMOUS.id) == []
    # reads stay open to it
    assert not (await toolbox.call("query", {"manager": "Part", "fields": ["name"]})).is_error


# -- fuzz --------------------------------------------------------------------------------------

FUZZ_NAMES = st.one_of(
    st.sampled_from(["mutate", "query_part", "query_supplier", "query_purchase_order"]),
    st.text(max_size=12),
)


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[asyncio.Runner, AgentToolbox, AgentToolbox]]:
    """A toolbox over the demo with hidden managers, and one over the demo without them."""
    path = tmp_path_factory.mktemp("agent-fuzz")
    settings = load_settings(
        None,
        project="demo",
        store=str(path / "chat.sqlite3"),
        exposed_managers=EXPOSED,
        allowed_mutations=["createPart", "updatePart", "createProject"],
        rate_limit={"requests": None},
    )
    with asyncio.Runner() as runner:
        hidden_project = runner.run(connect_project(settings))
        absent_project_ = runner.run(connect_project(settings, absent_project(settings)))
        store = open_store(settings)
        hidden = AgentToolbox(hidden_project, settings, store=store, actor=ALICE)
        absent = AgentToolbox(absent_project_, settings, store=store, actor=BOB)
        yield runner, hidden, absent
        store.close()
        runner.run(hidden_project.aclose())
        runner.run(absent_project_.aclose())


@fuzz(150)
@given(call=st.one_of(tool_calls, st.tuples(FUZZ_NAMES, st.just({}))))
def test_fuzzed_calls_are_answered_and_hide_what_is_hidden(
    fuzzed: tuple[asyncio.Runner, AgentToolbox, AgentToolbox], call: tuple[Any, Any]
) -> None:
    runner, hidden, absent = fuzzed
    name, args = call
    answer = runner.run(hidden.call(name, args))
    sendable(answer)
    assert len(answer.text) < 300_000, "an answer must not grow with the input"
    if answer.is_error:
        assert answer.structured["code"] != "tool_failed", answer.text
        assert len(answer.structured["message"]) < 4_000
    assert leaked([answer.structured, answer.text], call) == []
    # invisible: the same answer as where those managers never existed
    assert answer == runner.run(absent.call(name, args))

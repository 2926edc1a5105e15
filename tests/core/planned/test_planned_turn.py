"""Planned turns end to end: real demo project, real store, scripted roles (the outside world).

Each test plays the planner, executors and synthesizer with :class:`ScriptedProvider` rounds and
checks what a user relies on: the events and their task ids, the requests each role made, the
engine's numbers, coverage, the stable error codes, and that mutations never reach an executor.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb import Chat
from gmchat_nb.core.planned.plan import PlanValidationError, validate_plan
from gmchat_nb.core.settings import ChatConfigurationError, ChatSettings


def script(tmp_path: Path, rounds: list[dict[str, Any]], name: str = "roles.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(rounds))
    return f"scripted:{path}"


def plan(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {"structured": {"intent": "read", "tasks": list(tasks)}}


def query_task(task_id: str, query: dict[str, Any], **extra: Any) -> dict[str, Any]:
    requirements = [{"requirement_id": f"{task_id}_rows", "kind": "query", "query": query}]
    requirements += extra.pop("calculations", [])
    return {
        "task_id": task_id,
        "objective": f"objective {task_id}",
        "requirements": requirements,
        **extra,
    }


async def run(chat: Chat, question: str) -> list[dict[str, Any]]:
    return [event.to_dict() async for event in chat.stream(question)]


def planned_chat(provider: str, **planned: Any) -> Chat:
    return Chat(provider=provider, planned={"enabled": True, **planned}, store=":memory:")


async def test_a_simple_read_is_two_requests_with_task_ids_and_evidence(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [
            plan(
                query_task(
                    "task_1",
                    {"manager": "Material", "fields": ["name"], "filters": {"hazardous": True}},
                )
            ),
            {"text": "Hazardous: Lead [task_1:query:1]."},
        ],
    )
    events = await run(planned_chat(provider), "Which materials are hazardous?")
    kinds = [event["type"] for event in events]
    assert kinds == ["tool_call", "tool_result", "text_chunk", "done"]
    call, result, _, done = events
    assert call["task_id"] == result["task_id"] == "task_1"
    assert result["evidence_id"] == "task_1:query:1"
    assert [row["name"] for row in result["result"]["data"]] == ["Lead"]
    orchestration = done["orchestration"]
    assert orchestration["status"] == "complete"
    assert orchestration["coverage"] == {"resolved": 1, "total": 1}
    assert orchestration["requests"] == {"planner": 1, "executor": 0, "synthesizer": 1}
    assert orchestration["cited"] == ["task_1:query:1"]


async def test_numbers_come_from_the_engine_in_decimal_with_units(tmp_path: Path) -> None:
    calculation = {
        "requirement_id": "value",
        "kind": "calculation",
        "operation": "sum_products",
        "binding": {
            "source_requirement_ids": ["task_1_rows"],
            "value_paths": [["quantity"], ["unitPrice"]],
        },
    }
    query = {
        "manager": "Part",
        "fields": ["name", "quantity", "unitPrice"],
        "filters": {"material__name": "Steel"},
    }
    provider = script(
        tmp_path,
        [
            plan(query_task("task_1", query, calculations=[calculation])),
            {"text": "Steel stock is Bolt."},
        ],
    )
    events = await run(planned_chat(provider), "What is our steel stock worth?")
    rows = events[1]["result"]["data"]
    expected = sum(row["quantity"] * row["unitPrice"]["value"] for row in rows)
    done = events[-1]
    [calc] = done["orchestration"]["calculations"]
    assert calc["evidence_id"] == "task_1:calculation:2"
    assert calc["unit"] == "EUR" and float(calc["value"]) == pytest.approx(expected)
    # The model did not quote the number, so the engine's value is appended with its id.
    answer = "".join(event["content"] for event in events if event["type"] == "text_chunk")
    assert f"{calc['text']} [task_1:calculation:2]" in answer


async def test_count_uses_the_servers_total_beyond_the_row_cap(tmp_path: Path) -> None:
    count = {
        "requirement_id": "n",
        "kind": "calculation",
        "operation": "count",
        "binding": {"source_requirement_ids": ["task_1_rows"]},
    }
    provider = script(
        tmp_path,
        [
            plan(
                query_task(
                    "task_1",
                    {"manager": "Part", "fields": ["name"], "limit": 3},
                    calculations=[count],
                )
            ),
            {"text": "Counted."},
        ],
    )
    events = await run(planned_chat(provider), "How many parts are there?")
    total = events[1]["result"]["total_count"]
    assert len(events[1]["result"]["data"]) == 3 < total
    assert events[-1]["orchestration"]["calculations"][0]["value"] == str(total)


async def test_independent_tasks_run_and_a_dependent_one_is_blocked_when_its_parent_fails(
    tmp_path: Path,
) -> None:
    provider = script(
        tmp_path,
        [
            plan(
                query_task("task_1", {"manager": "Material", "fields": ["name"]}),
                query_task("task_2", {"manager": "NoSuchManager", "fields": ["name"]}),
                query_task(
                    "task_3", {"manager": "Part", "fields": ["name"]}, depends_on=["task_2"]
                ),
            ),
            # task_2's direct query fails; its executor gives up.
            {"text": '{"action": "block", "reason": "manager_unresolved"}'},
            {"text": "Materials listed; the rest could not be found."},
        ],
    )
    events = await run(planned_chat(provider), "Materials, vehicles and their parts")
    done = events[-1]
    assert done["type"] == "done"
    orchestration = done["orchestration"]
    assert orchestration["status"] == "partial"
    assert orchestration["coverage"] == {"resolved": 1, "total": 3}
    assert orchestration["unresolved"] == [
        {"task_id": "task_2", "reason": "manager_unresolved"},
        {"task_id": "task_3", "reason": "dependency_blocked"},
    ]
    # The dependent task never ran a tool.
    assert all(event.get("task_id") != "task_3" for event in events if event["type"] == "tool_call")
    # Nothing leaks: the unknown manager's name is in the tool result the user sees, not in done.
    assert "NoSuchManager" not in str(orchestration["unresolved"])


async def test_identical_calls_are_served_once(tmp_path: Path) -> None:
    same = {"manager": "Material", "fields": ["name"]}
    provider = script(
        tmp_path,
        [
            plan(query_task("task_1", same), query_task("task_2", dict(reversed(same.items())))),
            {"text": "ok"},
        ],
    )
    events = await run(planned_chat(provider, max_concurrent_tasks=1), "Materials twice")
    results = [event for event in events if event["type"] == "tool_result"]
    assert [r["evidence_id"] for r in results] == ["task_1:query:1", "task_1:query:1"]
    assert "duration_ms" in results[0] and "duration_ms" not in results[1]  # nothing ran again


async def test_no_resolved_task_is_one_stable_error(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [
            plan(query_task("task_1", {"manager": "Vehicle", "fields": ["name"]})),
            {"text": '{"action": "block", "reason": "manager_unresolved"}'},
        ],
    )
    events = await run(planned_chat(provider), "Show the vehicles")
    assert events[-1] == {
        "type": "error",
        "message": "I could not resolve the required application data.",
        "code": "manager_unresolved",
        "sequence": len(events),
    }
    assert sum(event["type"] in ("done", "error") for event in events) == 1


async def test_an_invalid_plan_is_corrected_once_then_refused(tmp_path: Path) -> None:
    bad = {"structured": {"intent": "read", "tasks": []}}
    provider = script(tmp_path, [bad, bad, bad])
    events = await run(planned_chat(provider), "Anything")
    assert [event["type"] for event in events] == ["error"]
    assert events[0]["code"] == "invalid_plan"
    assert "tasks" not in events[0]["message"]  # the plan's details stay server-side


async def test_a_corrected_plan_is_used(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [
            {
                "structured": {
                    "intent": "read",
                    "tasks": [{"task_id": "1 bad id", "requirements": []}],
                }
            },
            plan(query_task("task_1", {"manager": "Material", "fields": ["name"]})),
            {"text": "Materials."},
        ],
    )
    events = await run(planned_chat(provider), "Materials")
    assert events[-1]["orchestration"]["requests"]["planner"] == 2


async def test_a_mutation_intent_goes_to_the_legacy_loop_and_executors_never_hold_mutate(
    tmp_path: Path,
) -> None:
    provider = script(
        tmp_path,
        [
            {"structured": {"intent": "mutation", "tasks": []}},
            {"text": "That change needs the mutation allowed first."},
        ],
    )
    chat = planned_chat(provider)
    events = await run(chat, "Delete the Bolt part")
    assert [event["type"] for event in events] == ["text_chunk", "done"]
    assert "orchestration" not in events[-1]


async def test_an_executor_resolves_a_task_the_plan_left_open_with_typed_tools(
    tmp_path: Path,
) -> None:
    open_task = {
        "task_id": "task_1",
        "objective": "hazardous materials",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    provider = script(
        tmp_path,
        [
            plan(open_task),
            {
                "tool_calls": [
                    {
                        "name": "query",
                        "args": {
                            "manager": "Material",
                            "fields": ["name"],
                            "filters": {"hazardous": True},
                        },
                    }
                ]
            },
            {"text": '{"action": "complete", "evidence_ids": ["task_1:query:1"]}'},
            {"text": "Lead."},
        ],
    )
    chat = planned_chat(provider)
    events = await run(chat, "Which materials are hazardous?")
    assert events[-1]["orchestration"]["requests"] == {
        "planner": 1,
        "executor": 2,
        "synthesizer": 1,
    }
    executor_request = (await chat.session()).provider.requests[0]  # type: ignore[attr-defined]
    tools = {tool.name: tool for tool in executor_request[1]}
    assert "mutate" not in tools
    assert "Material" in tools["query"].input_schema["properties"]["manager"]["enum"]


async def test_the_evidence_deadline_ends_slow_tasks_with_deadline_exceeded(tmp_path: Path) -> None:
    open_task = {
        "task_id": "task_1",
        "objective": "slow",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    provider = script(tmp_path, [plan(open_task), {"delay_seconds": 5, "text": "late"}])
    events = await run(planned_chat(provider, evidence_timeout_seconds=0.2), "Slow question")
    assert events[-1]["code"] == "deadline_exceeded"


async def test_the_offline_provider_plays_every_role() -> None:
    chat = Chat(planned={"enabled": True}, store=":memory:")
    events = await run(chat, "Which projects use parts made of cobalt?")
    answer = "".join(event["content"] for event in events if event["type"] == "text_chunk")
    assert "Apollo" in answer
    assert events[-1]["orchestration"]["status"] == "complete"
    assert all(event["task_id"] == "task_1" for event in events if event["type"] == "tool_call")


async def test_a_follow_up_sees_the_planned_turns_tool_history(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        [
            plan(query_task("task_1", {"manager": "Material", "fields": ["name"]})),
            {"text": "Eight materials."},
        ],
    )
    chat = planned_chat(provider)
    await run(chat, "Materials?")
    stored = (await chat.session()).history()
    roles = [message.role for message in stored]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert stored[2].tool_call_id == stored[1].tool_calls[0]["id"]


def test_settings_name_the_key_at_fault() -> None:
    roles = dict.fromkeys(
        ["planner", "simple_executor", "complex_executor", "synthesizer", "fallback_executor"], "a"
    )
    with pytest.raises(ChatConfigurationError) as caught:
        ChatSettings(
            planned={"enabled": True, "roles": {**roles, "planner": "b"}},
            provider_profiles={
                "a": {"provider": "offline", "trust_group": "x"},
                "b": {"provider": "offline"},
            },
        )
    assert caught.value.key == "planned.roles"
    with pytest.raises(ChatConfigurationError) as caught:
        ChatSettings(
            planned={"enabled": True, "roles": roles},
            provider_profiles={"a": {"provider": "offline", "model": "m"}},
        )
    assert caught.value.key == "provider_profiles.a.model"
    with pytest.raises(ChatConfigurationError) as caught:
        ChatSettings(planned={"enabled": True, "max_concurrent_tasks": 0})
    assert caught.value.key == "planned.max_concurrent_tasks"
    implicit = ChatSettings(planned={"enabled": True}, provider="offline").planned_settings
    assert {profile.name for profile in implicit.roles.values()} == {"default"}
    assert implicit.trust_group == "default"


async def test_a_catalog_cannot_name_a_hidden_manager() -> None:
    with pytest.raises(ChatConfigurationError) as hidden:
        await Chat(
            planned={"enabled": True, "catalog": {"Supplier": {"aliases": ["vendor"]}}},
            exposed_managers=["Part", "Material"],
            store=":memory:",
        ).session()
    with pytest.raises(ChatConfigurationError) as missing:
        await Chat(
            planned={"enabled": True, "catalog": {"Nothing": {}}}, store=":memory:"
        ).session()
    assert str(hidden.value).replace("Supplier", "X") == str(missing.value).replace("Nothing", "X")


async def test_a_catalog_alias_ranks_its_manager_first(tmp_path: Path) -> None:
    from gmchat_nb.core.planned.catalog import load_catalog, rank_managers
    from gmchat_nb.core.project import connect

    project = await connect("demo")
    catalog = load_catalog({"Supplier": {"aliases": ["vendor"]}}, project)
    assert rank_managers("which vendor ships bolts", project, catalog)[0].manager == "Supplier"


@pytest.mark.parametrize(
    "payload",
    [
        {
            "intent": "read",
            "tasks": [
                {"task_id": f"t{n}", "requirements": [{"requirement_id": "r"}]} for n in range(7)
            ],
        },
        {
            "intent": "read",
            "tasks": [
                {"task_id": "a", "depends_on": ["b"], "requirements": [{"requirement_id": "r"}]}
            ],
        },
        {"intent": "delete", "tasks": []},
        {
            "intent": "read",
            "tasks": [
                {
                    "task_id": "a",
                    "requirements": [
                        {"requirement_id": "r", "kind": "calculation", "operation": "eval"}
                    ],
                }
            ],
        },
    ],
)
def test_plans_outside_the_limits_are_refused(payload: dict[str, Any]) -> None:
    with pytest.raises(PlanValidationError):
        validate_plan(payload)


def test_the_engine_never_awaits_forever_on_a_cancelled_turn(tmp_path: Path) -> None:
    open_task = {
        "task_id": "task_1",
        "objective": "slow",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    provider = script(tmp_path, [plan(open_task), {"delay_seconds": 30, "text": "late"}])
    chat = planned_chat(provider)

    async def cancel_mid_turn() -> None:
        stream = chat.stream("Slow")
        task = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.aclose()

    asyncio.run(asyncio.wait_for(cancel_mid_turn(), 10))


async def test_hostile_model_output_never_breaks_the_turn(tmp_path: Path) -> None:
    """Lone surrogates in a plan and an answer, and an action nested past any parser's stack:
    the turn still ends with one terminal event whose JSON can be encoded and sent."""
    open_task = {
        "task_id": "task_1",
        "objective": "parts \udcff here",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    provider = script(
        tmp_path,
        [
            plan(open_task),
            {
                "tool_calls": [
                    {"name": "query", "args": {"manager": "Material", "fields": ["name"]}}
                ]
            },
            {"text": "[" * 100_000},  # not an action: plain text ends the task with its evidence
            {"text": "Materials \ud800 listed."},
        ],
    )
    events = await run(planned_chat(provider), "Materials?")
    assert events[-1]["type"] == "done"
    encoded = json.dumps(events, ensure_ascii=False).encode("utf-8")  # no lone surrogate left
    assert "\ufffd" in encoded.decode("utf-8")


async def test_an_accepted_calculation_is_reported_to_the_executor_as_accepted(
    tmp_path: Path,
) -> None:
    open_task = {
        "task_id": "task_1",
        "objective": "average density",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    average = {
        "action": "calculate",
        "operation": "average",
        "operands": [{"evidence_id": "task_1:query:1", "path": ["data", "*", "density"]}],
    }
    provider = script(
        tmp_path,
        [
            plan(open_task),
            {
                "tool_calls": [
                    {"name": "query", "args": {"manager": "Material", "fields": ["density"]}}
                ]
            },
            {"text": json.dumps(average)},
            {"text": '{"action": "complete", "evidence_ids": ["task_1:query:1"]}'},
            {"text": "Average density."},
        ],
    )
    chat = planned_chat(provider)
    events = await run(chat, "Average density of materials?")
    told = (await chat.session()).provider.requests[2][0][-1].content  # type: ignore[attr-defined]
    assert told.startswith("Calculated: task_1:calculation:2 = ")
    assert events[-1]["orchestration"]["calculations"][0]["operation"] == "average"


async def test_a_calculation_the_rows_cannot_feed_keeps_the_tasks_evidence(tmp_path: Path) -> None:
    grouped = {
        "requirement_id": "per_material",
        "kind": "calculation",
        "operation": "average",
        "binding": {
            "source_requirement_ids": ["task_1_rows"],
            "value_path": ["unitPrice"],
            "group_by": ["material", "name"],
        },
    }
    query = {"manager": "Part", "fields": ["name", "unitPrice", {"material": ["name"]}]}
    provider = script(
        tmp_path,
        [plan(query_task("task_1", query, calculations=[grouped])), {"text": "Parts listed."}],
    )
    events = await run(planned_chat(provider), "Average part price per material?")
    rows = events[1]["result"]["data"]
    assert any(row.get("material") is None for row in rows)  # the row the grouping cannot use
    done = events[-1]
    assert done["orchestration"]["status"] == "complete"
    [task] = done["orchestration"]["tasks"]
    assert task["status"] == "resolved" and "calculation_failed" in task
    assert done["orchestration"]["cited"] == ["task_1:query:1"]

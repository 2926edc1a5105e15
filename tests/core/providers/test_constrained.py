"""Small-model mode: a read turn driven in typed steps, each model decision a structured answer.

A scripted provider plays the model's structured answers (what a grammar would force), so the
steps, the schemas the model is shown and the calls the project receives are checked exactly; the
same turns with a real GGUF model are in tests/local/. The acceptance test walks every filter path
of every manager of both demos: whatever value a grammar lets through is accepted by the project.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gmchat_nb import Chat
from gmchat_nb.core.project import Project, connect
from gmchat_nb.core.providers.base import BaseLLMProvider, Message
from gmchat_nb.core.providers.constrained import (
    ConstrainedProvider,
    filter_paths,
    measurement_fields,
    query_slot_schema,
)
from gmchat_nb.core.providers.registry import ProviderSpecError, create_provider
from gmchat_nb.core.providers.replay import RecordingProvider, ReplayProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider

STEEL = "Which parts are made of steel?"


def constrained(rounds: list[dict[str, Any]]) -> tuple[ConstrainedProvider, ScriptedProvider]:
    inner = ScriptedProvider({"rounds": rounds})
    return ConstrainedProvider(inner), inner


async def ask(provider: BaseLLMProvider, question: str) -> Any:
    chat = Chat(project="demo", provider=provider, store=":memory:")
    try:
        return await chat.ask(question)
    finally:
        await chat.aclose()


def calls(turn: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(e["name"], e["args"]) for e in turn.events if e["type"] == "tool_call"]


async def test_a_read_turn_in_typed_steps() -> None:
    provider, inner = constrained(
        [
            {"structured": {"manager": "Part"}},
            {
                "structured": {
                    "fields": ["name"],
                    "filter": {"path": "material__name", "value": "Steel"},
                }
            },
            {"text": "Bolt is made of steel."},
        ]
    )
    turn = await ask(provider, STEEL)
    assert turn.events[-1]["type"] == "done" and turn.answer == "Bolt is made of steel."
    made = calls(turn)
    assert made[0] == ("search_managers", {"query": STEEL})
    assert made[1] == ("get_manager_schema", {"manager": "Part"})
    related = {args["manager"] for name, args in made if name == "get_manager_schema"}
    assert related == {"Part", "Material", "Supplier", "Project", "PurchaseOrder"}
    assert ("query", {"manager": "Part", "fields": ["unitPrice"], "limit": 1}) in made  # units
    assert made[-1] == (
        "query",
        {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Steel"}},
    )
    results = [e["result"] for e in turn.events if e["type"] == "tool_result"]
    assert results[-1]["data"] == [{"name": "Bolt"}]
    # three model requests: pick, fill (structured), answer (streamed, without tools)
    assert [name for _, _, name in inner.structured_requests] == ["pick_manager", "query"]
    assert len(inner.requests) == 1 and inner.requests[0][1] == []


async def test_the_model_sees_enums_not_free_text() -> None:
    provider, inner = constrained(
        [
            {"structured": {"manager": "Part"}},
            {"structured": {"fields": ["name", "unitPrice"], "filter": None}},
            {"text": "Bolt and more."},
        ]
    )
    await ask(provider, STEEL)
    pick = inner.structured_requests[0][1]
    assert pick["properties"]["manager"]["enum"][:2] == ["Material", "Part"]  # search order
    slot = inner.structured_requests[1][1]
    assert "name" in slot["properties"]["fields"]["items"]["enum"]
    assert "materialId" not in slot["properties"]["fields"]["items"]["enum"]
    branches = {
        branch["properties"]["path"]["const"]: branch["properties"]["value"]
        for branch in slot["properties"]["filter"]["anyOf"]
        if branch.get("type") == "object"
    }
    assert branches["material__name"] == {"type": "string", "minLength": 1, "maxLength": 40}
    assert branches["material__hazardous"] == {"type": "boolean"}
    assert branches["quantity__gt"] == {"type": "integer"}
    assert branches["unitPrice__gt"]["pattern"].endswith(" EUR$")  # the unit the probe showed
    assert "name__icontains" in branches and "name__startswith" not in branches


async def test_answers_a_server_that_ignored_the_schema_are_kept_in_bounds() -> None:
    provider, _ = constrained(
        [
            {"structured": {"manager": "Nonsense"}},
            {
                "structured": {
                    "fields": ["name__icontains", "name"],
                    "filter": {"path": "colour", "value": "red"},
                }
            },
            {"text": "Done."},
        ]
    )
    turn = await ask(provider, STEEL)
    query = calls(turn)[-1]
    assert query == ("query", {"manager": "Material", "fields": ["name"]})  # best-ranked manager
    assert all("status" not in e["result"] for e in turn.events if e["type"] == "tool_result")


async def test_an_empty_answer_is_replaced_by_the_engines_account() -> None:
    provider, _ = constrained(
        [
            {"structured": {"manager": "Part"}},
            {
                "structured": {
                    "fields": ["name"],
                    "filter": {"path": "material__name", "value": "Steel"},
                }
            },
            {"text": ""},
        ]
    )
    turn = await ask(provider, STEEL)
    assert turn.events[-1]["type"] == "done"
    assert turn.answer == "(Written by gmchat, the model gave no answer.) 1 record(s): Bolt."


async def test_one_candidate_needs_no_model_request() -> None:
    provider, inner = constrained(
        [{"structured": {"fields": ["name"], "filter": None}}, {"text": "Acme and others."}]
    )
    turn = await ask(provider, "country")
    assert calls(turn)[1] == ("get_manager_schema", {"manager": "Supplier"})
    assert [name for _, _, name in inner.structured_requests] == ["query"]


async def test_no_matching_data_type_is_said_without_a_model_request() -> None:
    provider, inner = constrained([])
    turn = await ask(provider, "Germany")
    assert turn.answer == "I found no data type in this project that matches the question."
    assert inner.requests == [] and inner.structured_requests == []


async def test_requests_without_the_read_tools_pass_through() -> None:
    provider, inner = constrained([{"text": "A summary."}])
    events = [e async for e in provider.complete([Message("user", "Summarise.")], [])]
    assert events[0].content == "A summary."  # type: ignore[union-attr]
    assert inner.requests == [([Message("user", "Summarise.")], [])]


async def test_a_failing_model_ends_the_turn_in_one_error() -> None:
    provider, _ = constrained([{"error": "the server went away"}])
    turn = await ask(provider, STEEL)
    assert [e["type"] for e in turn.events][-1] == "error"
    assert turn.events[-1]["code"] == "provider_failed"


def test_constrained_must_be_a_boolean() -> None:
    with pytest.raises(ProviderSpecError, match="constrained must be true or false"):
        create_provider("offline", {"constrained": "yes"})
    wrapped = create_provider("scripted", {"rounds": [], "constrained": True})
    assert isinstance(wrapped, ConstrainedProvider)


def sample(schema: dict[str, Any]) -> Any:
    """A value the schema admits (what a grammar could let a model write)."""
    if schema.get("type") == "boolean":
        return True
    if schema.get("type") == "integer":
        return 3
    if schema.get("type") == "number":
        return 2.5
    pattern = schema.get("pattern", "")
    if pattern.endswith(("EUR$", "USD$")) or "[.]" in pattern:
        return f"12.5 {pattern[-4:-1]}"
    if "(19|20)" in pattern:
        return "2024-02-28"
    if pattern.startswith("^[1-9]"):
        return "7"
    return 'x" OR 1=1 --'  # any string up to 40 characters


@pytest.mark.parametrize("demo", ["demo", "large"])
async def test_every_value_a_slot_admits_is_accepted_by_the_project(demo: str) -> None:
    project: Project = await connect(demo)
    try:
        checked = 0
        managers = list(project.index.managers)
        # the large demo's 150 managers are generated alike: every tenth covers its kinds
        for manager in managers if demo == "demo" else managers[::10]:
            schema = project.get_manager_schema(manager)
            related = {}
            for spec in (schema.get("relations") or {}).values():
                related[spec["target"]] = project.get_manager_schema(spec["target"])
            units: dict[str, str] = {}
            measured = measurement_fields(schema)
            if measured:
                probe = await project.query(manager=manager, fields=measured, limit=1)
                for row in probe.rows:
                    units.update({k: v["unit"] for k, v in row.items() if isinstance(v, dict)})
            slot = query_slot_schema(schema, related, units)
            for path, value_schema in filter_paths(schema, related, units).items():
                choice = {"fields": slot["properties"]["fields"]["items"]["enum"][:1]}
                choice["filter"] = {"path": path, "value": sample(value_schema)}
                jsonschema.validate(choice, slot)
                result = await project.query(
                    manager=manager,
                    fields=choice["fields"],
                    filters={path: choice["filter"]["value"]},
                )
                assert result.rows is not None, (manager, path)
                checked += 1
        assert checked > 30
    finally:
        await project.aclose()


async def test_a_recorded_constrained_turn_replays_with_its_model_requests(
    tmp_path: Path,
) -> None:
    """Engine steps make no model request: the cassette says how many each response took, and
    keeps the prompt texts the model was told, for the echo judge of a replayed run."""
    provider, _ = constrained(
        [
            {"structured": {"manager": "Part"}},
            {
                "structured": {
                    "fields": ["name"],
                    "filter": {"path": "material__name", "value": "Steel"},
                }
            },
            {"text": "Bolt."},
        ]
    )
    cassette = tmp_path / "constrained.jsonl"
    recorded = await ask(RecordingProvider(provider, cassette), STEEL)  # type: ignore[arg-type]
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert lines[0]["cassette"]["instructions"] == list(ConstrainedProvider.instructions)
    assert sum(line.get("model_requests", 0) for line in lines[1:]) == 3
    assert len(lines) - 1 == 5  # the loop's five requests, three of which reached the model
    replay = ReplayProvider({"path": str(cassette)})
    replayed = await ask(replay, STEEL)  # type: ignore[arg-type]
    assert calls(replayed) == calls(recorded) and replayed.answer == recorded.answer == "Bolt."
    assert replay.model_requests == 3 and replay.instructions == ConstrainedProvider.instructions


TITANIUM = [
    {
        "tool": "query",
        "arguments": {
            "manager": "Part",
            "fields": ["name"],
            "filters": {"material__name": "Titanium"},
        },
    }
]


async def _with_titanium_query(provider: BaseLLMProvider, question: str) -> Any:
    chat = Chat(project="demo", provider=provider, store=":memory:")
    try:
        await chat.knowledge.add_verified_query(
            "titanium parts", "Which parts are made of titanium?", TITANIUM
        )
        return await chat.ask(question)
    finally:
        await chat.aclose()


async def test_a_recalled_verified_query_the_model_picks_runs_with_the_questions_value() -> None:
    provider, inner = constrained(
        [{"structured": {"verified_query": "titanium parts"}}, {"text": "Bolt is steel."}]
    )
    turn = await _with_titanium_query(provider, STEEL)
    assert calls(turn) == [
        ("query", {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Steel"}})
    ]
    assert turn.trusted is not None and turn.trusted["name"] == "titanium parts"
    [(messages, schema, name)] = inner.structured_requests
    assert name == "pick_verified_query"
    assert schema["properties"]["verified_query"]["enum"] == ["titanium parts", "none"]
    assert "Which parts are made of titanium?" in messages[-1].content  # what it was saved for


async def test_none_picked_goes_the_usual_road() -> None:
    provider, inner = constrained(
        [
            {"structured": {"verified_query": "none"}},
            {"structured": {"manager": "Part"}},
            {"structured": {"fields": ["name"], "filter": None}},
            {"text": "Parts."},
        ]
    )
    turn = await _with_titanium_query(provider, "Which parts are made of steel?")
    assert calls(turn)[0] == ("search_managers", {"query": STEEL})
    assert turn.trusted is None
    assert inner.structured_requests[0][2] == "pick_verified_query"

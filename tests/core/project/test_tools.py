"""Tool definitions and dispatch: shapes, bad arguments as results, the direct strategy, hiding."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import gmchat_nb
from gmchat_nb.core.project import Project


def test_discovery_offers_the_five_tools_in_order(inventory: Project) -> None:
    tools = inventory.tool_definitions()
    assert [tool["name"] for tool in tools] == [
        "search_managers",
        "get_manager_schema",
        "find_path",
        "query",
        "mutate",
    ]
    for tool in tools:
        assert tool["description"]
        schema = tool["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        json.dumps(schema)
    query = tools[3]["input_schema"]
    assert query["required"] == ["manager", "fields"]
    assert {"filters", "exclude", "order_by", "limit", "offset", "root", "arguments"} <= set(
        query["properties"]
    )
    assert tools[2]["input_schema"]["required"] == ["from_manager", "to_manager"]


def test_direct_adds_one_query_tool_per_exposed_manager(inventory: Project) -> None:
    names = [tool["name"] for tool in inventory.tool_definitions("direct")]
    assert names[:5] == ["search_managers", "get_manager_schema", "find_path", "query", "mutate"]
    assert names[5:] == [
        "query_material",
        "query_supplier",
        "query_part",
        "query_project",
        "query_purchaseorder",
    ]
    with pytest.raises(ValueError, match="discovery"):
        inventory.tool_definitions("everything")


async def test_a_direct_tool_queries_its_manager(inventory: Project) -> None:
    direct = await inventory.call_tool("query_purchaseorder", {"fields": ["number"], "limit": 2})
    general = await inventory.call_tool(
        "query", {"manager": "PurchaseOrder", "fields": ["number"], "limit": 2}
    )
    assert direct == general
    refused = await inventory.call_tool("query_part", {"manager": "Material", "fields": ["name"]})
    assert refused["code"] == "invalid_arguments"


@pytest.mark.parametrize(
    ("name", "args", "code", "fragment"),
    [
        ("serch_managers", {"query": "x"}, "unknown_tool", "Did you mean 'search_managers'"),
        ("query_auditsecret", {"fields": ["name"]}, "unknown_tool", "Unknown tool"),
        ("search_managers", {}, "invalid_arguments", "needs 'query'"),
        ("search_managers", {"query": 3}, "invalid_arguments", "must be a string"),
        (
            "search_managers",
            {"query": "x", "view": "full"},
            "invalid_arguments",
            "does not take 'view'",
        ),
        (
            "query",
            {"manager": "Part", "fields": ["name"], "limit": "10"},
            "invalid_arguments",
            "must be an integer",
        ),
        (
            "query",
            {"manager": "Part", "fields": ["name"], "limit": True},
            "invalid_arguments",
            "must be an integer",
        ),
        ("find_path", {"from_manager": "Part"}, "invalid_arguments", "needs 'to_manager'"),
        ("mutate", {"mutation": "createPart"}, "invalid_arguments", "needs 'input'"),
        ("query", "{not json", "invalid_arguments", "not valid JSON"),
        ("query", [1, 2], "invalid_arguments", "JSON object"),
    ],
)
async def test_bad_calls_become_results_the_model_can_correct(
    inventory: Project, name: str, args: Any, code: str, fragment: str
) -> None:
    result = await inventory.call_tool(name, args)
    assert result["status"] == "error" and result["code"] == code
    assert fragment in result["message"]


async def test_arguments_may_arrive_as_a_json_string(inventory: Project) -> None:
    as_text = await inventory.call_tool(
        "find_path", '{"from_manager": "Part", "to_manager": "Material"}'
    )
    assert as_text["path"] == ["material"]


def _ordinary_calls(project: Project) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for word in ("secret", "audit", "audit secret", "note", "hidden", "part", "*"):
        calls.append(("search_managers", {"query": word}))
    for manager in project.managers:
        calls.append(("get_manager_schema", {"manager": manager}))
        calls.append(("query", {"manager": manager, "fields": ["*"], "limit": 100}))
        for other in project.managers:
            calls.append(("find_path", {"from_manager": manager, "to_manager": other}))
    return calls


# Calls that name the hidden manager; each must answer exactly as for a name that never existed.
PROBES: list[tuple[str, dict[str, Any]]] = [
    ("get_manager_schema", {"manager": "AuditSecret"}),
    ("find_path", {"from_manager": "Part", "to_manager": "AuditSecret"}),
    ("query", {"manager": "AuditSecret", "fields": ["name"]}),
    ("query", {"manager": "Part", "fields": ["name", "auditSecretList"]}),
    ("query", {"manager": "Part", "fields": ["name", {"auditSecretList": ["name"]}]}),
    (
        "query",
        {
            "manager": "Part",
            "fields": ["name"],
            "filters": {"auditSecretList": {"any": {"name": "x"}}},
        },
    ),
    ("query", {"manager": "Part", "fields": ["name"], "filters": {"auditSecret__name": "x"}}),
    ("query", {"manager": "Part", "fields": ["name"], "order_by": ["auditSecret"]}),
    ("mutate", {"mutation": "createAuditSecret", "input": {"name": "x"}}),
    ("query_auditsecret", {"fields": ["name"]}),
]


def _comparable(value: Any) -> Any:
    """Close-match suggestions depend on the spelling asked about, so they are left out."""
    if isinstance(value, dict) and value.get("status") == "error":
        message = re.sub(r" Did you mean [^?]*\?", "", value["message"])
        return {**{k: v for k, v in value.items() if k != "suggestions"}, "message": message}
    return value


def _renamed(value: Any) -> Any:
    text = json.dumps(value)
    for hidden, invented in (
        ("AuditSecret", "QuuxWidget"),
        ("auditSecret", "quuxWidget"),
        ("auditsecret", "quuxwidget"),
    ):
        text = text.replace(hidden, invented)
    return json.loads(text)


async def test_the_hidden_manager_never_appears_in_any_tool_output(project: Project) -> None:
    """AuditSecret is in the GraphQL schema (with a relation to Part) but not exposed."""
    assert "AuditSecretType" in project.index.schema.type_map  # really there, behind the curtain
    outputs = [json.dumps(await project.call_tool(n, a)) for n, a in _ordinary_calls(project)]
    outputs.append(json.dumps(project.tool_definitions("direct")))
    text = "\n".join(outputs).lower()
    assert "audit" not in text and "classified" not in text
    for name, args in PROBES:
        hidden = await project.call_tool(name, args)
        invented = await project.call_tool(_renamed(name), _renamed(args))
        assert _comparable(_renamed(hidden)) == _comparable(invented), (name, args)


async def test_exposing_a_manager_makes_it_visible() -> None:
    project = gmchat_nb.demo_project(exposed=["Part", "AuditSecret"])
    try:
        result = await project.call_tool(
            "query", {"manager": "AuditSecret", "fields": ["name", {"part": ["name"]}], "limit": 1}
        )
        assert result["total_count"] == 3
        path = await project.call_tool(
            "find_path", {"from_manager": "Part", "to_manager": "AuditSecret"}
        )
        assert path["path"] == ["auditSecretList", "items"]
    finally:
        await project.aclose()

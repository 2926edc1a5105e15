"""The tool registry: one declaration per tool, and what is built from it."""

from __future__ import annotations

import dataclasses

import pytest

from gmchat_nb.core.planned.executor import READ_TOOLS
from gmchat_nb.core.project import Project
from gmchat_nb.core.project.tools import (
    TOOLS,
    Tool,
    ToolRegistry,
    discovery_tool_definitions,
    is_read_tool,
)
from gmchat_nb.core.prompt import build_system_prompt


def test_each_tool_is_declared_under_its_own_name_in_the_order_offered() -> None:
    assert TOOLS.names == ("search_managers", "get_manager_schema", "find_path", "query", "mutate")
    for field in dataclasses.fields(TOOLS):
        assert getattr(TOOLS, field.name).name == field.name
    assert TOOLS.get("find_path") is TOOLS.find_path
    assert TOOLS.get("query_part") is None and TOOLS.get(None) is None


def test_a_registry_refuses_a_tool_under_another_name() -> None:
    wrong = {field.name: getattr(TOOLS, field.name) for field in dataclasses.fields(TOOLS)}
    wrong["find_path"] = TOOLS.query
    with pytest.raises(ValueError, match=r"TOOLS\.find_path declares the tool 'query'"):
        ToolRegistry(**wrong)


def test_only_mutate_writes_and_only_reads_become_evidence() -> None:
    assert [tool.name for tool in TOOLS if not tool.reads] == ["mutate"]
    assert {tool.name: tool.evidence for tool in TOOLS} == {
        "search_managers": "schema",
        "get_manager_schema": "schema",
        "find_path": "path",
        "query": "query",
        "mutate": None,
    }
    assert not is_read_tool("mutate")
    assert all(is_read_tool(name) for name in ("query", "find_path", "query_part", "nothing"))
    assert READ_TOOLS == ("search_managers", "get_manager_schema", "find_path", "query")


def test_definitions_are_fresh_copies_of_the_declarations() -> None:
    definitions = discovery_tool_definitions()
    assert definitions == [tool.definition() for tool in TOOLS]
    definitions[3]["input_schema"]["properties"].clear()
    assert TOOLS.query.parameters["properties"]
    assert discovery_tool_definitions()[3]["input_schema"]["properties"]


def test_the_system_prompt_says_each_tool_s_lines(inventory: Project) -> None:
    prompt = build_system_prompt(inventory.index, mutations=("createPart",))
    for tool in TOOLS:
        assert isinstance(tool, Tool) and tool.prompt_lines
        for line in tool.prompt_lines:
            assert line in prompt, (tool.name, line)
    # where no mutation is allowed, mutate is not offered and its rules are not said
    read_only = build_system_prompt(inventory.index)
    assert not any(line in read_only for line in TOOLS.mutate.prompt_lines)
    assert "you can only read" in read_only

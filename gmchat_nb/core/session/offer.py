"""What a session offers the model: the tools and the system prompt for a project under its
settings, built once per project and set of settings and shared read-only."""

from __future__ import annotations

import weakref
from typing import Any

from ..charts.tool import CHART
from ..project.project import Project
from ..project.tools import TOOLS
from ..prompt import build_system_prompt
from ..providers.base import ToolDefinition
from ..settings import ChatSettings

__all__ = ["tools_and_prompt"]

# What a session offers the model depends only on the project and four settings, and building it
# (the tool schemas copied, the prompt written from the index) cost more than a small turn's
# queries; the server opens a session per request. Shared read-only: providers never change them.
_OFFERS: weakref.WeakKeyDictionary[
    Project, dict[tuple[Any, ...], tuple[tuple[ToolDefinition, ...], str]]
] = weakref.WeakKeyDictionary()


def tools_and_prompt(
    project: Project, settings: ChatSettings, mutations: tuple[str, ...]
) -> tuple[tuple[ToolDefinition, ...], str]:
    """The tools and the system prompt for ``project`` under these settings (built once)."""
    key = (settings.tool_strategy, settings.system_prompt, mutations, settings.charts)
    offers = _OFFERS.setdefault(project, {})
    offer = offers.get(key)
    if offer is None:
        tools = tuple(
            ToolDefinition.from_dict(tool)
            for tool in project.tool_definitions(settings.tool_strategy)
            if tool["name"] != TOOLS.mutate.name or mutations
        )
        if settings.charts:
            tools += (ToolDefinition.from_dict(CHART.definition()),)
        prompt = build_system_prompt(
            project.index,
            developer_instructions=settings.system_prompt,
            mutations=mutations,
            charts=settings.charts,
        )
        offer = offers[key] = (tools, prompt)
    return offer

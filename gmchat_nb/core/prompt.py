"""The system prompt: the spec's sections, compact, and true for this project's schema.

GeneralManager's prompt runs to ~10k characters per role and ships examples that are invalid on
its own schemas (weakness 4). Here every example is generated from the index (so it is valid as
written), the rules are short, and large projects get a one-line pointer to ``search_managers``
instead of a manager list.
"""

from __future__ import annotations

import json

from .charts.tool import CHART
from .guards.envelope import DATA_RULE
from .project.index import SchemaIndex
from .project.schema_view import manager_schema
from .project.tools import TOOLS

__all__ = ["LIST_LIMIT", "build_system_prompt"]

LIST_LIMIT = 30  # above this many managers the prompt lists none of them


def _bullets(*lines: str) -> str:
    return "\n".join(f"- {line}" for line in lines)


# The tools' own rules are their declarations' prompt_lines (the two discovery tools share one).
_TOOL_RULES = _bullets(
    " ".join(TOOLS.search_managers.prompt_lines + TOOLS.get_manager_schema.prompt_lines),
    *TOOLS.find_path.prompt_lines,
    *TOOLS.query.prompt_lines,
)
_RULES = f"""\
How to work:
- Never guess data, fields, filters or relations: use the tools. Call all tools before you write the answer.
{_TOOL_RULES}
- A tool error says what was wrong and what would be valid: fix the call and try again.
- {DATA_RULE}{{charts}}

How to answer:
- Only from tool results; copy values exactly and label them (material: Steel). Name the kind of rows you list.
- An empty result means nothing matched: say so plainly. If total_count is larger than the rows you got, say you show the first ones.
- No GraphQL, JSON or code in answers. Do not offer to run more queries; do it or answer.
- A manager that is not available: say that data is not available; do not invent it."""
# Only where a mutation is allowed (and mutate offered): else "you can only read" says it all.
_CHANGES = "Changing data:\n" + _bullets(*TOOLS.mutate.prompt_lines)


def build_system_prompt(
    index: SchemaIndex,
    *,
    developer_instructions: str = "",
    mutations: tuple[str, ...] = (),
    charts: bool = False,
) -> str:
    """The system prompt for a project; ``mutations`` are the allow-listed mutation names,
    ``charts`` whether the ``chart`` tool is offered."""
    chart_rule = "\n" + _bullets(*CHART.prompt_lines) if charts else ""
    parts = [
        "You answer questions about the data of a GeneralManager project by calling tools over "
        "its GraphQL schema. The data types are called managers.",
        _RULES.replace("{charts}", chart_rule),
    ]
    if mutations:
        parts.append(_CHANGES)
    managers = list(index.managers.values())
    if managers:
        example = manager_schema(index, managers[0])["example"]
        parts.append(f"A valid {TOOLS.query.name} call on this project: " + json.dumps(example))
    if len(managers) <= LIST_LIMIT:
        lines = [
            f"- {info.name}: {info.description}" if info.description else f"- {info.name}"
            for info in managers
        ]
        parts.append("Managers:\n" + "\n".join(lines))
        relations = [
            f"- {info.name}.{relation.name} -> {relation.target}"
            for info in managers
            for relation in info.relations
        ]
        if relations:
            parts.append("Relations (field -> manager):\n" + "\n".join(relations))
    else:
        parts.append(
            f"{len(managers)} managers are available: find the right one with "
            f"{TOOLS.search_managers.name}; use {TOOLS.find_path.name} to connect them."
        )
    if mutations:
        parts.append("Mutations you may use: " + ", ".join(mutations) + ".")
    else:
        parts.append("No mutations are allowed here: you can only read.")
    if developer_instructions.strip():
        parts.append("Project instructions:\n" + developer_instructions.strip())
    return "\n\n".join(parts)

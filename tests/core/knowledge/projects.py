"""Projects and books for the knowledge tests: the inventory demo as it is, and as it was before
a field of Part was renamed (the same project, another version of its schema)."""

from __future__ import annotations

import dataclasses
from typing import Any

from gmchat_nb.core.knowledge import KnowledgeBook, recall
from gmchat_nb.core.project import Project
from gmchat_nb.core.project.demo import build_demo, demo_spec
from gmchat_nb.core.project.executor import LocalExecutor
from gmchat_nb.core.store import ChatStore

PROJECT = "demo:inventory"  # what the inventory demo's knowledge is kept under


def inventory_renaming(old: str, new: str) -> Project:
    """The inventory demo with Part's field ``old`` called ``new`` (snake_case names; GraphQL
    sees them camel-cased), under the inventory's own identity."""
    spec = demo_spec("inventory")
    managers = []
    for manager in spec.managers:
        if manager.name == "Part":
            fields = tuple(
                dataclasses.replace(field, name=new) if field.name == old else field
                for field in manager.fields
            )
            assert any(field.name == old for field in manager.fields), f"no Part.{old}"
            rows = tuple(
                {new if k == old else k: v for k, v in row.items()} for row in manager.rows
            )
            manager = dataclasses.replace(manager, fields=fields, rows=rows)
        managers.append(manager)
    backend = build_demo(dataclasses.replace(spec, managers=tuple(managers)))
    project = Project(
        LocalExecutor(backend.schema),
        exposed=backend.exposed_managers,
        max_page_size=backend.spec.max_page_size,
        label=PROJECT,
        on_close=backend.close,
    )
    project.identity = PROJECT
    return project


def book_of(store: ChatStore, project: Project, owner: str, **options: Any) -> KnowledgeBook:
    """``owner``'s book of the inventory's knowledge (keywords only unless ``vectors`` says)."""
    options.setdefault("vectors", None)
    return KnowledgeBook(store, project, project_key=PROJECT, owner=owner, **options)


def query(
    manager: str = "Part", fields: Any = ("name", "quantity"), **filters: Any
) -> dict[str, Any]:
    """One ``query`` call of a verified query."""
    arguments: dict[str, Any] = {"manager": manager, "fields": list(fields)}
    if filters:
        arguments["filters"] = filters
    return {"tool": "query", "arguments": arguments}


def recalled(book: KnowledgeBook, question: str, mode: str) -> list[dict[str, Any]]:
    """The ``recall`` event's items for ``question`` (none when the project keeps nothing)."""
    found = recall(book, question, mode)
    return [] if found is None else found.items


def recalled_ids(book: KnowledgeBook, question: str, mode: str) -> list[str]:
    return [item["id"] for item in recalled(book, question, mode)]

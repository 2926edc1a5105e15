"""Ways to get a :class:`Project`: a schema object, a GraphQL URL, or an embedded demo."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from graphql import GraphQLSchema

from .executor import LocalExecutor, RemoteExecutor
from .project import Project
from .targets import demo_name, describe_targets, is_graphql_url

__all__ = ["NoManagersError", "connect", "demo_project"]

ROOTS_LISTED = 8


class NoManagersError(ValueError):
    """A schema in which no GeneralManager manager was recognised: a chat over it could answer
    nothing, so connecting says so (and why) instead of giving an empty project."""

    def __init__(self, schema: GraphQLSchema, where: str) -> None:
        query = schema.query_type
        roots = [f"{name}: {field.type}" for name, field in (query.fields.items() if query else [])]
        shown = ", ".join(roots[:ROOTS_LISTED]) + (
            f" and {len(roots) - ROOTS_LISTED} more" if len(roots) > ROOTS_LISTED else ""
        )
        super().__init__(
            f"No managers were recognised in {where}. A GeneralManager manager is listed by a "
            "query root without required arguments that returns a page — an object with a list "
            "of items and page info, like partList(page, pageSize, filter, ...) -> PartTypePage "
            "{items, pageInfo {totalCount}}. "
            + f"This schema's query roots are: {shown}."
            + " Is this a GeneralManager server's /graphql/ endpoint?"
        )


def demo_project(
    name: str = "inventory",
    *,
    exposed: Iterable[str] | None = None,
    allowed_mutations: Iterable[str] = (),
    path: str | os.PathLike[str] | None = None,
    max_results: int = 200,
    query_timeout: float | None = None,
    **spec_options: Any,
) -> Project:
    """An in-process demo project: ``inventory`` (the default) or ``large``.

    ``path`` keeps its SQLite data in a file instead of memory; ``spec_options`` go to the demo's
    spec (``large`` takes ``manager_count`` and ``chain_length``). By default every manager but
    the demo's hidden one is exposed.
    """
    from .demo import build_demo, demo_spec

    backend = build_demo(demo_spec(name, **spec_options), path=path)
    return Project(
        LocalExecutor(backend.schema),
        exposed=backend.exposed_managers if exposed is None else exposed,
        allowed_mutations=allowed_mutations,
        max_results=max_results,
        max_page_size=backend.spec.max_page_size,
        query_timeout=query_timeout,
        label=f"demo:{name}",
        on_close=backend.close,
    )


async def connect(
    target: Any,
    *,
    exposed: Iterable[str] | None = None,
    headers: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
    timeout: float = 30,
    allowed_mutations: Iterable[str] = (),
    max_results: int = 200,
    max_page_size: int = 100,
    query_timeout: float | None = None,
) -> Project:
    """Connect to a project: a graphql-core ``GraphQLSchema``, a graphene ``Schema``, the URL of a
    GraphQL endpoint (introspected once; ``headers`` and ``cookies`` go with every request, which
    is how a user's own credentials reach the server), or a demo name (``"demo"``, ``"large"``,
    ``"demo:toy"``: see :mod:`~gmchat_nb.core.project.targets`).

    GeneralManager's ``chat_exposed`` flag cannot be seen over GraphQL, so give ``exposed`` for a
    real server; without it every manager the schema lists is visible.
    """
    options: dict[str, Any] = {
        "exposed": exposed,
        "allowed_mutations": allowed_mutations,
        "max_results": max_results,
        "query_timeout": query_timeout,
    }
    if isinstance(target, str):
        if is_graphql_url(target):
            executor = await RemoteExecutor.connect(
                target, headers=headers, cookies=cookies, timeout=timeout
            )
            try:
                project = Project(executor, max_page_size=max_page_size, label=target, **options)
                _check_managers(project, executor.schema, target)
                return project
            except BaseException:  # an unknown exposed name, say: do not leak the HTTP session
                await executor.aclose()
                raise
        name = demo_name(target)
        if name is not None:
            return demo_project(name, **options)
        raise ValueError(
            f"connect() got {target!r}: give {describe_targets()}, a GraphQLSchema or a graphene "
            "Schema."
        )
    schema = getattr(target, "graphql_schema", target)  # graphene wraps the graphql-core schema
    if isinstance(schema, GraphQLSchema):
        project = Project(
            LocalExecutor(schema), max_page_size=max_page_size, label="schema", **options
        )
        _check_managers(project, schema, "this schema")
        return project
    raise TypeError(
        f"connect() cannot use a {type(target).__name__}; give a GraphQL URL, a GraphQLSchema "
        "or a graphene Schema."
    )


def _check_managers(project: Project, schema: GraphQLSchema, where: str) -> None:
    if not project.index.all_managers:
        raise NoManagersError(schema, where)

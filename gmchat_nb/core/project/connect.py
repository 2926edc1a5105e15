"""Ways to get a :class:`Project`: a schema object, a GraphQL URL, or an embedded demo."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from graphql import GraphQLSchema

from .executor import LocalExecutor, RemoteExecutor
from .project import Project

__all__ = ["connect", "demo_project"]


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
    is how a user's own credentials reach the server), or a demo name (``"demo"``, ``"large"``).

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
        if target.startswith(("http://", "https://")):
            executor = await RemoteExecutor.connect(
                target, headers=headers, cookies=cookies, timeout=timeout
            )
            try:
                return Project(executor, max_page_size=max_page_size, label=target, **options)
            except BaseException:  # an unknown exposed name, say: do not leak the HTTP session
                await executor.aclose()
                raise
        from .demo import DEMO_NAMES

        name = "inventory" if target == "demo" else target
        if name in DEMO_NAMES:
            return demo_project(name, **options)
        raise ValueError(
            f"connect() got {target!r}: give a GraphQL URL (http:// or https://), a GraphQLSchema, "
            f"a graphene Schema, or a demo name ({', '.join(['demo', *DEMO_NAMES])})."
        )
    schema = getattr(target, "graphql_schema", target)  # graphene wraps the graphql-core schema
    if isinstance(schema, GraphQLSchema):
        return Project(
            LocalExecutor(schema), max_page_size=max_page_size, label="schema", **options
        )
    raise TypeError(
        f"connect() cannot use a {type(target).__name__}; give a GraphQL URL, a GraphQLSchema "
        "or a graphene Schema."
    )

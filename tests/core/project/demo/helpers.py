"""Small helpers to run GraphQL against a demo in process."""

from __future__ import annotations

from typing import Any

from graphql import ExecutionResult, graphql_sync

from gmchat_nb.core.project.demo import DemoBackend


def execute(backend: DemoBackend, query: str, **variables: Any) -> ExecutionResult:
    """Run ``query`` in process."""
    return graphql_sync(backend.schema, query, variable_values=variables or None)


def data(backend: DemoBackend, query: str, **variables: Any) -> Any:
    """The data of a query that must succeed."""
    result = execute(backend, query, **variables)
    assert result.errors is None, result.errors
    return result.data


def error(backend: DemoBackend, query: str, **variables: Any) -> dict[str, Any]:
    """The single formatted error of a query that must fail."""
    result = execute(backend, query, **variables)
    assert result.errors is not None, result.data
    assert len(result.errors) == 1, result.errors
    return dict(result.errors[0].formatted)


def names(backend: DemoBackend, root: str, arguments: str = "") -> list[str]:
    """``name`` of every item of ``root(arguments)`` in order, with a page size of 100."""
    args = ", ".join(part for part in ("pageSize: 100", arguments) if part)
    result = data(backend, f"{{ {root}({args}) {{ items {{ name }} }} }}")
    return [item["name"] for item in result[root]["items"]]

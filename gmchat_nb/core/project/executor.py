"""Run compiled GraphQL documents: in process with graphql-core, or against a remote endpoint.

Both executors take an already validated :class:`~graphql.DocumentNode` and JSON variables and give
back ``(data, errors)`` with errors as GraphQL's JSON error objects, so everything above them reads
one shape whichever way the project is reached.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLSchema,
    build_client_schema,
    execute,
    get_introspection_query,
    parse,
)

from ..dsn import text_without_password, without_password
from .errors import ToolError

__all__ = [
    "ExecutionOutcome",
    "Executor",
    "LocalExecutor",
    "ProjectConnectionError",
    "RemoteExecutor",
]


class ProjectConnectionError(ConnectionError):
    """A remote GraphQL endpoint could not be reached or introspected."""


@dataclass(frozen=True, slots=True)
class ExecutionOutcome:
    """What a GraphQL server answered: ``data`` and JSON ``errors`` (message, path, extensions)."""

    data: dict[str, Any] | None
    errors: list[dict[str, Any]] = field(default_factory=list)


class Executor(Protocol):
    """Something that runs validated documents against one schema."""

    schema: GraphQLSchema
    concurrent: bool  # whether overlapping requests finish sooner than one after another

    async def execute(
        self,
        document: DocumentNode,
        variables: dict[str, Any],
        operation_name: str | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> ExecutionOutcome:
        """Run ``document`` with ``variables`` (``headers`` go with this request only)."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class LocalExecutor:
    """Executes against an in-process graphql-core schema (the demo project, a graphene schema)."""

    # graphql-core runs synchronous resolvers to completion: overlapping calls gain nothing.
    concurrent = False

    def __init__(
        self, schema: GraphQLSchema, *, context_value: Any = None, root_value: Any = None
    ) -> None:
        self.schema = schema
        self.context_value = context_value
        self.root_value = root_value

    async def execute(
        self,
        document: DocumentNode,
        variables: dict[str, Any],
        operation_name: str | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> ExecutionOutcome:
        """Run ``document``; validation already happened at compile time. ``headers`` (an
        idempotency key) have no meaning in process and are ignored."""
        result = execute(
            self.schema,
            document,
            root_value=self.root_value,
            context_value=self.context_value,
            variable_values=variables,
            operation_name=operation_name,
        )
        if inspect.isawaitable(result):
            result = await result
        assert isinstance(result, ExecutionResult)
        errors = [error.formatted for error in result.errors or ()]
        return ExecutionOutcome(result.data, [dict(error) for error in errors])

    async def aclose(self) -> None:
        """Nothing to release in process."""


class RemoteExecutor:
    """Executes over HTTP with gql's aiohttp transport; headers and cookies go with every request.

    Create it with :meth:`connect`, which introspects the endpoint once.
    """

    concurrent = True

    def __init__(self, transport: Any, schema: GraphQLSchema, url: str) -> None:
        self._transport = transport
        self.schema = schema
        self.url = url

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        cookies: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> RemoteExecutor:
        """Open a connection to ``url`` and introspect its schema."""
        from gql.transport.aiohttp import AIOHTTPTransport

        transport = AIOHTTPTransport(
            url=url, headers=headers, cookies=cookies, timeout=int(max(1, timeout))
        )
        await transport.connect()
        executor = cls(transport, GraphQLSchema(), url)
        try:
            outcome = await executor.execute(
                parse(get_introspection_query(descriptions=True)), {}, "IntrospectionQuery"
            )
        except ToolError as error:
            await transport.close()
            # (these messages reach logs and clients: the URL without its password)
            problem = text_without_password(error.message, url)
            raise ProjectConnectionError(
                f"Cannot introspect {without_password(url)}: {problem}"
            ) from None
        if outcome.errors or not outcome.data:
            await transport.close()
            messages = "; ".join(str(e.get("message")) for e in outcome.errors) or "no data"
            raise ProjectConnectionError(
                f"Introspection of {without_password(url)} failed: "
                + text_without_password(messages, url)
            )
        executor.schema = build_client_schema(outcome.data)  # type: ignore[arg-type]
        return executor

    async def execute(
        self,
        document: DocumentNode,
        variables: dict[str, Any],
        operation_name: str | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> ExecutionOutcome:
        """POST ``document`` to the endpoint (with ``headers`` besides the connection's);
        transport failures become ToolErrors."""
        from gql import GraphQLRequest
        from gql.transport.exceptions import (
            TransportProtocolError,
            TransportServerError,
        )

        request = GraphQLRequest(
            document, variable_values=variables or None, operation_name=operation_name
        )
        try:
            extra = {"headers": dict(headers)} if headers else None
            result = await self._transport.execute(request, extra_args=extra)
        except TransportServerError as error:
            code = getattr(error, "code", None)
            raise ToolError(
                "server_error",
                f"The GraphQL server at {self.url} answered HTTP {code}: {error}",
            ) from None
        except TransportProtocolError as error:
            raise ToolError(
                "server_error", f"The GraphQL server at {self.url} sent an invalid answer: {error}"
            ) from None
        except Exception as error:  # connection refused, DNS, timeouts inside aiohttp
            raise ToolError(
                "server_unreachable", f"Cannot reach the GraphQL server at {self.url}: {error}"
            ) from None
        errors = [
            dict(e) if isinstance(e, dict) else {"message": str(e)} for e in result.errors or ()
        ]
        return ExecutionOutcome(result.data, errors)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._transport.close()

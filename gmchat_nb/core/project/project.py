"""A connected GeneralManager project: its schema index and the tools that run against it.

Over 400 lines: the project's one public face (:class:`Project`): every tool and query
goes through it, with the error texts it shapes for the model.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import tools
from .compiler import QueryCompiler, QueryPlan, lookups_in
from .errors import ToolError
from .executor import ExecutionOutcome, Executor
from .filters import IdLookup
from .hidden import REDACTED, HiddenNames
from .idempotency import IDEMPOTENCY_HEADER
from .index import SchemaIndex
from .mutations import MutationCompiler, PreparedMutation
from .names import clip
from .paths import shortest_path
from .results import normalize_pages
from .schema_view import manager_schema, manager_summary
from .search import ManagerSearch, query_note

__all__ = ["Project", "QueryOutcome", "WithheldMutationError"]

MAX_ID_LOOKUP = 1000
MAX_SEARCH_RESULTS = 50
SERVER_MESSAGE_LENGTH = 500
_PAGE_CAP_ERROR = re.compile(r"pageSize must not exceed (\d+)")


class WithheldMutationError(ValueError):
    """``allowed_mutations`` names a mutation that needs an argument of a hidden manager."""


@dataclass(slots=True)
class QueryOutcome:
    """One ``query`` call in full: the result the model gets and the evidence behind it."""

    manager: str
    plan: QueryPlan
    variables: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    total_count: int | None
    has_more: bool | None
    complete: bool
    notes: list[str] = field(default_factory=list)

    @property
    def document(self) -> str:
        """The GraphQL document behind the rows (printed on demand: it costs more than a query)."""
        return self.plan.text

    def to_result(self) -> dict[str, Any]:
        """The ``query`` tool result."""
        result: dict[str, Any] = {
            "data": self.rows,
            "total_count": self.total_count,
            "has_more": self.has_more,
            "complete": self.complete,
        }
        if self.notes:
            result["notes"] = list(self.notes)
        return result


class Project:
    """The tools of one GraphQL schema, over one executor.

    ``exposed`` limits what the assistant may see (None: every manager); ``allowed_mutations``
    names the mutations ``mutate`` may run (none by default). Naming one that cannot be offered
    because it needs an argument of a hidden manager raises :class:`WithheldMutationError`.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        exposed: Iterable[str] | None = None,
        allowed_mutations: Iterable[str] = (),
        max_results: int = 200,
        max_page_size: int = 100,
        query_timeout: float | None = None,
        label: str = "",
        on_close: Callable[[], Awaitable[None] | None] | None = None,
    ) -> None:
        self.executor = executor
        self.index = SchemaIndex(executor.schema, exposed)
        self.search = ManagerSearch(self.index)
        self.compiler = QueryCompiler(
            self.index, max_results=max_results, max_page_size=max_page_size
        )
        self.mutation_compiler = MutationCompiler(self.index)
        self.allowed_mutations = frozenset(allowed_mutations)
        withheld = [
            self.index.withheld_mutations[name]
            for name in sorted(self.allowed_mutations)
            if name in self.index.withheld_mutations
        ]
        if withheld:
            raise WithheldMutationError(
                "allowed_mutations cannot be offered: " + " ".join(withheld)
            )
        self.query_timeout = query_timeout
        self.label = label
        self.identity = (
            ""  # who its knowledge belongs to (core/knowledge/identity.py), set on connect
        )
        self._on_close = on_close

    def __repr__(self) -> str:
        return f"<Project {self.label or 'graphql'}: {len(self.managers)} managers>"

    @property
    def managers(self) -> tuple[str, ...]:
        """The exposed manager names."""
        return self.index.names

    # -- the one entry point -------------------------------------------------------------------

    async def call_tool(self, name: str, args: Any) -> Any:
        """Run tool ``name`` with ``args``; every failure comes back as an error result."""
        return await tools.dispatch(self, name, args)

    def tool_definitions(self, strategy: str = "discovery") -> list[dict[str, Any]]:
        """The tools a model is offered, as ``{name, description, input_schema}``."""
        return tools.tool_definitions(self, strategy)

    # -- tools ---------------------------------------------------------------------------------

    def search_managers(self, query: Any, limit: Any = 10) -> list[dict[str, Any]]:
        """Ranked compact summaries of the managers matching ``query``; when the query was too
        long to read whole, a last ``{"note": ...}`` entry says so."""
        if not isinstance(query, str) or not query.strip():
            raise ToolError("invalid_arguments", "'query' must be a non-empty string.")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ToolError("invalid_arguments", "'limit' must be an integer.")
        if not 1 <= limit <= MAX_SEARCH_RESULTS:
            raise ToolError(
                "invalid_arguments",
                f"'limit' must be from 1 to {MAX_SEARCH_RESULTS}; got {clip(limit)}.",
            )
        hits = self.search.search(query, limit=limit)
        result: list[dict[str, Any]] = [manager_summary(hit.manager, hit.matched) for hit in hits]
        note = query_note(query)
        if note is not None:
            result.append({"note": note})
        return result

    def get_manager_schema(self, manager: Any) -> dict[str, Any]:
        """Fields, relations, filters, order fields, roots and mutations of one manager."""
        info = self.index.resolve(manager)
        return manager_schema(self.index, info)

    def find_path(self, from_manager: Any, to_manager: Any) -> dict[str, Any]:
        """The shortest relation path between two managers, as GraphQL selection names."""
        source = self.index.resolve(from_manager, argument="from_manager")
        target = self.index.resolve(to_manager, argument="to_manager")
        path = shortest_path(self.index, source.name, target.name)
        result: dict[str, Any] = {"from": source.name, "to": target.name}
        if path is None:
            result["path"] = None
            result["message"] = (
                f"No relation path leads from {source.name} to {target.name} among the exposed "
                "managers. Query each separately, or start from the other side."
            )
            return result
        label = "name" if target.field("name") else "id"
        result["path"] = path.selection
        result["hops"] = [
            {
                "from": start,
                "relation": relation.name,
                "to": relation.target,
                "kind": "many" if relation.many else "one",
            }
            for start, relation in path.hops
        ]
        if path.hops:
            result["fields_example"] = path.field_tree([label])
        return result

    async def query(self, **args: Any) -> QueryOutcome:
        """Compile, check and run one ``query`` call."""
        plan = self.compiler.compile(args)
        try:
            return await self._run_query(plan)
        except ToolError as error:
            learned = _PAGE_CAP_ERROR.search(error.message)
            if learned is None or int(learned.group(1)) >= self.compiler.max_page_size:
                raise
            # The server pages smaller than we assumed: remember its cap and ask again.
            self.compiler.max_page_size = int(learned.group(1))
            plan = self.compiler.compile(args)
            plan.notes.append(f"The server allows at most {learned.group(1)} rows per page.")
            return await self._run_query(plan)

    async def query_request(self, args: dict[str, Any]) -> tuple[QueryPlan, list[dict[str, Any]]]:
        """What :meth:`query` sends for ``args``, without running it: the compiled plan and the
        variables of each page request (an id look-up's sub-query runs to fill it in). Compiling
        is deterministic, so a stored ``query`` call's document and variables are rebuilt from
        its arguments (the evidence of a turn read back from the journal)."""
        plan = self.compiler.compile(args)
        return plan, await self._page_variables(plan)

    def prepare_mutation(self, mutation: Any, input: Any) -> PreparedMutation:
        """Validate a mutation call completely, without running it."""
        return self.mutation_compiler.prepare(mutation, input, self.allowed_mutations)

    async def execute_mutation(
        self, prepared: PreparedMutation, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Run a prepared mutation once (never retried); GraphQL errors become a ToolError.
        ``idempotency_key`` goes to the server as the ``Idempotency-Key`` header."""
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else None
        outcome = await self._execute(
            prepared.document,
            dict(prepared.input),
            "GmchatMutation",
            timeout=False,
            headers=headers,
        )
        if outcome.errors:
            raise _mutation_error(prepared, outcome, self.index.hidden_names)
        payload = (outcome.data or {}).get(prepared.mutation)
        return {"status": "executed", "mutation": prepared.mutation, "data": payload}

    async def mutate(self, mutation: Any, input: Any) -> dict[str, Any]:
        """Validate and run one allow-listed mutation."""
        return await self.execute_mutation(self.prepare_mutation(mutation, input))

    async def rows(
        self, document: str, variables: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run a GraphQL document (evidence's ``document`` and ``variables``) and return the rows
        of its page-shaped root, as ``query`` would (nested pages as plain lists)."""
        from graphql import parse

        parsed = parse(document)
        outcome = await self._execute(parsed, dict(variables or {}), None)
        if outcome.errors:
            messages = _messages(outcome.errors, self.index.hidden_names)
            raise ToolError("graphql_error", f"The server rejected the document: {messages}")
        data = outcome.data or {}
        page = next(iter(data.values()), None) or {}
        items = page.get("items", []) if isinstance(page, dict) else []
        return [_plain_pages(item) for item in items]

    async def frame(self, document: str, variables: dict[str, Any] | None = None) -> Any:
        """:meth:`rows` as a pandas DataFrame (relations as dotted columns)."""
        import pandas as pd

        from ..frames import flatten_row

        return pd.DataFrame([flatten_row(row) for row in await self.rows(document, variables)])

    async def aclose(self) -> None:
        """Close the executor (and whatever the project was built on)."""
        await self.executor.aclose()
        if self._on_close is not None:
            result = self._on_close()
            if result is not None:
                await result

    async def __aenter__(self) -> Project:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals -----------------------------------------------------------------------------

    async def _page_variables(self, plan: QueryPlan) -> list[dict[str, Any]]:
        """Each page request's variables, the plan's id look-ups run first."""
        for lookup in plan.id_lookups:
            await self._fill_ids(lookup, plan.notes)
        return [plan.request_variables(page) for page in plan.pages]

    async def _run_query(self, plan: QueryPlan) -> QueryOutcome:
        variables = await self._page_variables(plan)
        if len(variables) == 1 or not self.executor.concurrent:  # no tasks to schedule
            outcomes = [await self._execute(plan.document, v, "GmchatQuery") for v in variables]
        else:
            outcomes = list(
                await asyncio.gather(
                    *(self._execute(plan.document, v, "GmchatQuery") for v in variables)
                )
            )
        errors = [error for outcome in outcomes for error in outcome.errors]
        if errors:
            raise _query_error(plan, errors, self.index.hidden_names)
        pages = [(outcome.data or {}).get(plan.root.name) for outcome in outcomes]
        normalized = normalize_pages(
            pages,
            items_field=plan.root.items_field,
            page_info_field=plan.root.page_info_field,
            total_field=plan.root.total_field,
            shape=plan.shape,
            window_start=plan.window_start,
            limit=plan.limit,
            offset=plan.offset,
        )
        notes = list(plan.notes)
        if normalized.truncated_lists:
            notes.append(
                f"{normalized.truncated_lists} nested list(s) hold only their first "
                f"{self.compiler.max_page_size} items; filter the relation or query it directly."
            )
        return QueryOutcome(
            manager=plan.manager.name,
            plan=plan,
            variables=variables,
            rows=normalized.rows,
            total_count=normalized.total_count,
            has_more=normalized.has_more,
            complete=normalized.complete,
            notes=notes,
        )

    async def _fill_ids(self, lookup: IdLookup, notes: list[str]) -> None:
        """Answer a filter the server cannot nest with the ids of the matching related rows."""
        target = self.index.managers[lookup.manager]
        for inner in lookups_in(lookup.filter):
            await self._fill_ids(inner, notes)
        ids: list[str] = []
        page = 1
        while True:
            plan = self.compiler.compile_ids(target, lookup.filter, page)
            outcome = await self._execute(
                plan.document, plan.request_variables(plan.pages[0]), "GmchatQuery"
            )
            if outcome.errors:
                raise _query_error(plan, outcome.errors, self.index.hidden_names)
            data = (outcome.data or {}).get(plan.root.name) or {}
            items = data.get(plan.root.items_field) or []
            ids.extend(str(item["id"]) for item in items if item.get("id") is not None)
            if len(ids) > MAX_ID_LOOKUP:
                raise ToolError(
                    "invalid_filter",
                    f"The part of the filter on {lookup.manager} ({lookup.description}) matches "
                    f"more than {MAX_ID_LOOKUP} rows; narrow it.",
                )
            if len(items) < plan.limit:
                break
            page += 1
        lookup.ids = ids
        notes.append(
            f"{lookup.description}: this server's filters do not nest that deep, so the matching "
            f"{lookup.manager} rows were looked up first ({len(ids)} {'id' if len(ids) == 1 else 'ids'})."
        )

    async def _execute(
        self,
        document: Any,
        variables: dict[str, Any],
        operation: str | None,
        *,
        timeout: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> ExecutionOutcome:
        run = (
            self.executor.execute(document, variables, operation, headers=headers)
            if headers
            else self.executor.execute(document, variables, operation)
        )
        try:
            if not timeout or self.query_timeout is None:
                return await run
            return await asyncio.wait_for(run, self.query_timeout)
        except ToolError as error:  # transport failures quote what the server sent
            if not self.index.hidden_names.mentioned_in(error.message):
                raise
            raise ToolError(error.code, REDACTED) from None
        except TimeoutError:
            raise ToolError(
                "query_timeout",
                f"The query took longer than {self.query_timeout:g} s and was stopped; "
                "narrow the filters or ask for fewer rows.",
            ) from None


def _plain_pages(value: Any) -> Any:
    """``{"items": [...], "pageInfo": {...}}`` nested pages as plain lists, recursively."""
    if isinstance(value, dict):
        if (
            "items" in value
            and len(value) <= 2
            and set(value) <= {"items", "pageInfo", "page_info"}
        ):
            return [_plain_pages(item) for item in value["items"] or []]
        return {key: _plain_pages(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_pages(item) for item in value]
    return value


def _messages(errors: list[dict[str, Any]], hidden: HiddenNames) -> str:
    """The server's error messages, once each and cut to a readable length (servers quote the
    values they refuse), with any that name a hidden manager redacted."""
    return "; ".join(
        dict.fromkeys(
            clip(hidden.redact(str(error.get("message", ""))), SERVER_MESSAGE_LENGTH)
            for error in errors
        )
    )


def _query_error(plan: QueryPlan, errors: list[dict[str, Any]], hidden: HiddenNames) -> ToolError:
    codes = {str((error.get("extensions") or {}).get("code", "")) for error in errors} - {""}
    return ToolError(
        "graphql_error",
        f"The server rejected the {plan.manager.name} query: {_messages(errors, hidden)}",
        server_codes=sorted(code for code in codes if not hidden.mentioned_in(code)) or None,
    )


def _mutation_error(
    prepared: PreparedMutation, outcome: ExecutionOutcome, hidden: HiddenNames
) -> ToolError:
    field_errors: dict[str, Any] = {}
    non_field_errors: list[Any] = []
    redacted = False
    for error in outcome.errors:
        extensions = error.get("extensions") or {}
        for name, problems in (extensions.get("fieldErrors") or {}).items():
            if hidden.mentioned_in((name, problems)):
                redacted = True  # keyed by a hidden relation, or quoting one: it goes whole
            else:
                field_errors[name] = _clipped(problems)
        for problem in extensions.get("nonFieldErrors") or []:
            if not hidden.mentioned_in(problem):
                non_field_errors.append(_clipped(problem))
            elif REDACTED not in non_field_errors:
                non_field_errors.append(REDACTED)
    details = [f"{name}: {_text(problems)}" for name, problems in field_errors.items()]
    detail = "; ".join(details + ([REDACTED] if redacted else []))
    return ToolError(
        "mutation_failed",
        f"{prepared.mutation} failed: {_messages(outcome.errors, hidden)}"
        + (f" ({detail})" if detail else ""),
        field_errors=field_errors or None,
        non_field_errors=non_field_errors or None,
    )


def _clipped(problems: Any) -> Any:
    """Server problem texts cut like messages (a server quotes the value it refuses)."""
    if isinstance(problems, str):
        return clip(problems, SERVER_MESSAGE_LENGTH)
    if isinstance(problems, list):
        return [_clipped(problem) for problem in problems]
    return problems


def _text(problems: Any) -> str:
    return " ".join(map(str, problems)) if isinstance(problems, list) else str(problems)

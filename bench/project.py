"""Benchmarks of the project layer: index build, ``search_managers`` and ``query`` overhead.

Run from the repository root::

    .venv/bin/python bench/project.py                  # sizes 150, 1000, 5000 (~2 minutes)
    .venv/bin/python bench/project.py --quick          # smoke run: 150 managers, few repeats
    .venv/bin/python bench/project.py --sizes 150,1000

Every number is the median (and p90 where shown) of repeated ``time.perf_counter`` runs after
warm-up runs; ``gc.collect()`` runs before each timed run of the slow steps so that one run does
not pay for the garbage of another. Markdown goes to stdout, progress to stderr. Nothing is
asserted: the target columns only say whether a number meets its goal.

Tables:

1. **Index build**: ``SchemaIndex(schema)`` + ``ManagerSearch(index)`` for the ``large`` demo at
   each size, from an already built GraphQLSchema (generating the schema is not timed, only
   reported). Baseline: executing graphql-core's introspection query against the same schema, the
   one-off cost any client pays to learn a schema.
2. **search_managers latency**: ``ManagerSearch.search`` over a fixed list of queries (exact
   manager names taken from the index, plural words, description words, a typo, a no-match),
   against a re-implementation of GeneralManager 0.87.1's substring search with its per-manager
   haystacks built once. Median and p90 are taken over the per-query medians; a per-query table
   follows for the size closest to 1,000 managers.
3. **Query overhead** on the ``inventory`` demo, in process: ``await project.query(**args)``
   (compile + execute + normalise) against running the already compiled document(s) directly with
   ``graphql.execute`` for every page, plus the id look-up sub-queries where the plan has them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import graphql
from graphql import DocumentNode, GraphQLSchema

from gmchat_nb import demo_project
from gmchat_nb.core.project.demo import build_demo, demo_spec
from gmchat_nb.core.project.filters import IdLookup
from gmchat_nb.core.project.index import ManagerInfo, SchemaIndex
from gmchat_nb.core.project.project import Project
from gmchat_nb.core.project.search import ManagerSearch

INDEX_TARGET_SIZE = 1000
INDEX_TARGET_S = 0.200
INDEX_GM_S = 2.2
SEARCH_TARGET_SIZE = 1000
SEARCH_TARGET_S = 0.002
SEARCH_GM_S = 0.065
QUERY_TARGET_RATIO = 1.5


# -- timing ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds of each timed run."""

    runs: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def p90(self) -> float:
        return percentile(self.runs, 0.9)


@dataclass(frozen=True, slots=True)
class Budget:
    """How often to run: ``warmup`` untimed runs, then ``min_runs``..``max_runs`` timed runs,
    stopping after ``min_runs`` once ``seconds`` of timed runs have passed."""

    warmup: int
    min_runs: int
    max_runs: int
    seconds: float
    collect: bool = False


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (the p90 of 3 runs is the slowest run)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


def measure(function: Callable[[], object], budget: Budget) -> Timing:
    """Time a synchronous call."""
    for _ in range(budget.warmup):
        function()
    runs: list[float] = []
    while len(runs) < budget.min_runs or (
        len(runs) < budget.max_runs and sum(runs) < budget.seconds
    ):
        if budget.collect:
            gc.collect()
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return Timing(runs)


async def measure_async(function: Callable[[], Awaitable[object]], budget: Budget) -> Timing:
    """Time an awaited call (inside the running event loop)."""
    for _ in range(budget.warmup):
        await function()
    runs: list[float] = []
    while len(runs) < budget.min_runs or (
        len(runs) < budget.max_runs and sum(runs) < budget.seconds
    ):
        if budget.collect:
            gc.collect()
        start = time.perf_counter()
        await function()
        runs.append(time.perf_counter() - start)
    return Timing(runs)


async def measure_pair(
    ours: Callable[[], Awaitable[object]], direct: Callable[[], object], budget: Budget
) -> tuple[Timing, Timing]:
    """Time two ways of doing the same work in alternation, so load and GC hit both alike."""
    for _ in range(budget.warmup):
        await ours()
        direct()
    ours_runs: list[float] = []
    direct_runs: list[float] = []
    while len(ours_runs) < budget.min_runs or (
        len(ours_runs) < budget.max_runs and sum(ours_runs) + sum(direct_runs) < budget.seconds
    ):
        start = time.perf_counter()
        await ours()
        middle = time.perf_counter()
        direct()
        ours_runs.append(middle - start)
        direct_runs.append(time.perf_counter() - middle)
    return Timing(ours_runs), Timing(direct_runs)


def duration(seconds: float) -> str:
    """A duration in the unit that suits it: µs below 1 ms, ms below 10 s, else s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.0f} µs"
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f}"


def verdict(ok: bool) -> str:
    return "✅ pass" if ok else "❌ fail"


def table(headers: list[str], rows: list[list[str]], align: str = "") -> str:
    """A Markdown table; ``align`` has one letter per column (l or r, default r after the first)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


_STARTED = time.perf_counter()


def progress(message: str) -> None:
    elapsed = time.perf_counter() - _STARTED
    print(f"[bench {elapsed:5.1f} s] {message}", file=sys.stderr, flush=True)


# -- GeneralManager 0.87.1's search, re-implemented as the baseline -----------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def gm_tokenize(text: str) -> list[str]:
    """Split camelCase, turn non-alphanumerics into spaces, lowercase."""
    return _NON_ALNUM.sub(" ", _CAMEL.sub(" ", text)).lower().split()


def gm_singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s"):
        return word[:-1]
    return word


@dataclass(frozen=True, slots=True)
class GmEntry:
    """One manager's haystack: its tokens as a set and joined into one string."""

    name: str
    name_tokens: int
    tokens: frozenset[str]
    joined: str


class GmSearch:
    """GeneralManager 0.87.1's ``search_managers``: substring hits counted per query term."""

    def __init__(self, index: SchemaIndex) -> None:
        self.entries = [self._entry(info) for info in index.managers.values()]

    @staticmethod
    def _entry(info: ManagerInfo) -> GmEntry:
        filter_names = [
            name
            for item in info.filters
            for name in (*item.lookups.values(), item.input_name)
            if name
        ]
        texts = [
            info.name,
            info.description,
            *(f.name for f in info.fields),
            *(r.name for r in info.relations),
            *filter_names,
        ]
        tokens = [token for text in texts for token in gm_tokenize(text)]
        return GmEntry(info.name, len(gm_tokenize(info.name)), frozenset(tokens), " ".join(tokens))

    def search(self, query: str, limit: int = 10) -> list[str]:
        groups = [{term, gm_singular(term)} for term in gm_tokenize(query)]
        if not groups:
            return []
        scored: list[tuple[int, GmEntry]] = []
        for entry in self.entries:
            score = sum(
                1 for group in groups if any(v in entry.tokens or v in entry.joined for v in group)
            )
            if score:
                scored.append((score, entry))
        if any(score == len(groups) for score, _ in scored):
            scored = [item for item in scored if item[0] == len(groups)]
        scored.sort(key=lambda item: (-item[0], item[1].name_tokens, item[1].name))
        return [entry.name for _, entry in scored[:limit]]


# -- tables 1 and 2: the large demo --------------------------------------------------------------


@dataclass(slots=True)
class IndexRow:
    size: int
    types: int
    generation: float
    index: Timing
    introspection: Timing


@dataclass(slots=True)
class SearchRow:
    size: int
    ours: Timing  # per-query medians
    baseline: Timing
    detail: list[tuple[str, str, float, float, str, str]]  # query, kind, ours, base, hits


def search_queries(index: SchemaIndex) -> list[tuple[str, str]]:
    """(query, kind): exact names from the index plus fixed words."""
    names = index.names
    middle = names[len(names) // 2]
    spaced = " ".join(re.findall(r"[A-Z][a-z]*", names[1])).lower()
    return [
        (names[0], "exact name"),
        (middle, "exact name"),
        (names[-1], "exact name"),
        (spaced, "name, spaced"),
        ("vehicles", "plural"),
        ("payments", "plural"),
        ("invoice lines", "plural name"),
        ("due date", "description"),
        ("review flag", "description"),
        ("amount in the reporting currency", "description"),
        ("warehuose", "typo"),
        ("zebra quantum", "no match"),
    ]


def bench_large(size: int, quick: bool) -> tuple[IndexRow, SearchRow]:
    progress(f"large demo, {size} managers: generating the schema")
    start = time.perf_counter()
    backend = build_demo(demo_spec("large", manager_count=size))
    generation = time.perf_counter() - start
    schema: GraphQLSchema = backend.schema
    try:
        slow = size >= 5000
        index_budget = (
            Budget(1, 2, 3, 1.0, collect=True)
            if quick
            else Budget(1, 3, 15, 3.0 if not slow else 6.0, collect=True)
        )
        # The checked run below is the introspection's warm-up (9 s at 5,000 managers).
        intro_budget = (
            Budget(0, 2, 3, 1.0, collect=True)
            if quick
            else Budget(0, 3, 9, 4.0 if not slow else 1.0, collect=True)
        )
        progress(f"  index build ({generation:.1f} s to generate)")
        index_timing = measure(lambda: ManagerSearch(SchemaIndex(schema)), index_budget)
        progress("  introspection")
        document = graphql.parse(graphql.get_introspection_query(descriptions=True))
        result = graphql.execute(schema, document)
        if not isinstance(result, graphql.ExecutionResult) or result.errors:
            raise RuntimeError(f"introspection failed: {result}")
        del result
        intro_timing = measure(lambda: graphql.execute(schema, document), intro_budget)
        index_row = IndexRow(size, len(schema.type_map), generation, index_timing, intro_timing)

        progress("  search")
        index = SchemaIndex(schema)
        ours = ManagerSearch(index)
        baseline = GmSearch(index)
        query_budget = Budget(1, 3, 5, 0.2) if quick else Budget(2, 5, 40, 0.3 if not slow else 0.5)
        ours_medians: list[float] = []
        base_medians: list[float] = []
        detail: list[tuple[str, str, float, float, str, str]] = []
        for query, kind in search_queries(index):
            ours_t = measure(partial(ours.search, query), query_budget)
            base_t = measure(partial(baseline.search, query), query_budget)
            ours_medians.append(ours_t.median)
            base_medians.append(base_t.median)
            ours_top = [hit.manager.name for hit in ours.search(query)]
            base_top = baseline.search(query)
            detail.append(
                (
                    query,
                    kind,
                    ours_t.median,
                    base_t.median,
                    ", ".join(ours_top[:2]) or "—",
                    ", ".join(base_top[:2]) or "—",
                )
            )
        search_row = SearchRow(size, Timing(ours_medians), Timing(base_medians), detail)
    finally:
        backend.close()
    return index_row, search_row


def print_index_table(rows: list[IndexRow]) -> None:
    print("## 1. Index build (`SchemaIndex` + `ManagerSearch`), large demo\n")
    print("Schema generation (`build_demo`, SQLite seeding included) is not part of any timing.\n")
    body: list[list[str]] = []
    for row in rows:
        target, status = "—", ""
        if row.size == INDEX_TARGET_SIZE:
            target = f"< {duration(INDEX_TARGET_S)} (GM 0.87.1: {INDEX_GM_S:g} s)"
            status = verdict(row.index.median < INDEX_TARGET_S)
        body.append(
            [
                f"{row.size:,}",
                f"{row.types:,}",
                f"{row.generation:.2f} s",
                duration(row.index.median),
                duration(row.index.p90),
                str(len(row.index.runs)),
                duration(row.introspection.median),
                str(len(row.introspection.runs)),
                f"{row.index.median / row.introspection.median:.2f}x",
                target,
                status,
            ]
        )
    headers = [
        "managers",
        "schema types",
        "schema generation (untimed)",
        "index build median",
        "index p90",
        "runs",
        "introspection median",
        "runs",
        "index / introspection",
        "target (median)",
        "",
    ]
    print(table(headers, body, "rrrrrrrrrll"))
    print()


def print_search_tables(rows: list[SearchRow]) -> None:
    print("## 2. `search_managers` latency, large demo\n")
    print(
        "Median and p90 over the per-query medians of "
        f"{len(rows[0].detail) if rows else 0} queries; baseline: GeneralManager 0.87.1's "
        "algorithm re-implemented here, haystacks prebuilt.\n"
    )
    body: list[list[str]] = []
    for row in rows:
        target, status = "—", ""
        if row.size == SEARCH_TARGET_SIZE:
            target = f"< {duration(SEARCH_TARGET_S)} (GM 0.87.1: {duration(SEARCH_GM_S)})"
            status = verdict(row.ours.median < SEARCH_TARGET_S)
        body.append(
            [
                f"{row.size:,}",
                duration(row.ours.median),
                duration(row.ours.p90),
                duration(max(row.ours.runs)),
                duration(row.baseline.median),
                duration(row.baseline.p90),
                f"{row.ours.median / row.baseline.median:.2f}x",
                target,
                status,
            ]
        )
    headers = [
        "managers",
        "ours median",
        "ours p90",
        "ours slowest query",
        "baseline median",
        "baseline p90",
        "ours / baseline",
        "target (median)",
        "",
    ]
    print(table(headers, body, "rrrrrrrll"))
    print()
    if not rows:
        return
    focus = min(rows, key=lambda r: abs(r.size - SEARCH_TARGET_SIZE))
    print(f"Per query at {focus.size:,} managers (median of repeated runs; first two hits):\n")
    detail = [
        [f"`{query}`", kind, us(ours), us(base), f"{ours / base:.2f}x", ours_hits, base_hits]
        for query, kind, ours, base, ours_hits, base_hits in focus.detail
    ]
    print(
        table(
            [
                "query",
                "kind",
                "ours µs",
                "baseline µs",
                "ratio",
                "our top hits",
                "baseline top hits",
            ],
            detail,
            "llrrrll",
        )
    )
    print()


# -- table 3: query overhead on the inventory demo ------------------------------------------------

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("(a) plain list of names", {"manager": "Part", "fields": ["name"]}),
    (
        "(b) Django-style filter + to-one relation",
        {
            "manager": "Part",
            "fields": ["name", "quantity", {"material": ["name"]}],
            "filters": {"quantity__gte": 50, "material__name__icontains": "o"},
        },
    ),
    (
        "(c) nested paginated relation",
        {"manager": "Project", "fields": ["name", {"partsList": ["name", {"material": ["name"]}]}]},
    ),
    (
        "(d) order by relation, limit 10 offset 5",
        {
            "manager": "Part",
            "fields": ["name", "quantity"],
            "order_by": "material__name",
            "limit": 10,
            "offset": 5,
        },
    ),
    (
        "(e) filter deeper than the server nests",
        {
            "manager": "Project",
            "fields": ["name"],
            "filters": {"parts__material__name__icontains": "co"},
        },
    ),
]

Request = tuple[DocumentNode, dict[str, Any]]


def lookup_requests(project: Project, lookup: IdLookup) -> list[Request]:
    """The sub-query requests ``Project._fill_ids`` ran for an already filled ``lookup``."""
    assert lookup.ids is not None
    target = project.index.managers[lookup.manager]
    requests: list[Request] = []
    pages = len(lookup.ids) // project.compiler.row_cap + 1  # the last page comes back short
    for page in range(1, pages + 1):
        plan = project.compiler.compile_ids(target, lookup.filter, page)
        for inner in plan.id_lookups:
            requests.extend(lookup_requests(project, inner))
        requests.append((plan.document, plan.request_variables(plan.pages[0])))
    return requests


async def direct_requests(project: Project, args: dict[str, Any]) -> tuple[list[Request], int]:
    """Every request ``project.query(**args)`` sends, compiled once; and how many are sub-queries."""
    plan = project.compiler.compile(args)
    requests: list[Request] = []
    for lookup in plan.id_lookups:
        await project._fill_ids(lookup, [])
        requests.extend(lookup_requests(project, lookup))
    sub_queries = len(requests)
    requests.extend((plan.document, plan.request_variables(page)) for page in plan.pages)
    return requests, sub_queries


def execute_all(schema: GraphQLSchema, requests: list[Request]) -> list[Any]:
    return [
        graphql.execute(schema, document, variable_values=variables)
        for document, variables in requests
    ]


async def bench_queries(quick: bool) -> list[list[str]]:
    progress("inventory demo: query overhead")
    project = demo_project("inventory")
    schema = project.executor.schema
    budget = Budget(5, 20, 40, 0.3) if quick else Budget(30, 200, 3000, 1.5)
    rows: list[list[str]] = []
    try:
        for label, args in QUERIES:
            outcome = await project.query(**args)
            requests, sub_queries = await direct_requests(project, args)
            for result in execute_all(schema, requests):
                if not isinstance(result, graphql.ExecutionResult) or result.errors:
                    raise RuntimeError(f"{label}: direct execution failed: {result}")
            compile_t = measure(partial(project.compiler.compile, args), budget)
            plan = project.compiler.compile(args)
            text_t = measure(partial(graphql.print_ast, plan.document), budget)
            ours, direct = await measure_pair(
                partial(project.query, **args), partial(execute_all, schema, requests), budget
            )
            ratio = ours.median / direct.median
            rows.append(
                [
                    label,
                    str(len(outcome.rows)),
                    str(len(requests) - sub_queries),
                    str(sub_queries),
                    us(compile_t.median),
                    us(text_t.median),
                    us(ours.median),
                    us(ours.p90),
                    us(direct.median),
                    us(direct.p90),
                    f"{ratio:.2f}x",
                    f"< {QUERY_TARGET_RATIO:g}x",
                    verdict(ratio < QUERY_TARGET_RATIO),
                ]
            )
    finally:
        await project.aclose()
    return rows


def print_query_table(rows: list[list[str]]) -> None:
    print("## 3. Query overhead, inventory demo (in process)\n")
    print(
        "ours: `await project.query(**args)` (compile + id look-ups + execute + normalise); "
        "direct: `graphql.execute` of the already compiled document(s) for every page and "
        "sub-query, timed in alternation with ours. compile: `project.compiler.compile(args)` "
        "alone (part of ours); `plan.text`: printing the main document (`graphql.print_ast`), "
        "which only evidence and logs ask for (not part of ours).\n"
    )
    headers = [
        "query",
        "rows",
        "pages",
        "sub-queries",
        "compile µs",
        "`plan.text` µs",
        "ours µs",
        "ours p90 µs",
        "direct µs",
        "direct p90 µs",
        "ours / direct",
        "target",
        "",
    ]
    print(table(headers, rows, "lrrrrrrrrrrll"))
    print()


# -- main ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (few repeats)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="comma-separated manager counts for the large demo (default 150,1000,5000; "
        "150 with --quick)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    options = parse_args(argv)
    default_sizes = "150" if options.quick else "150,1000,5000"
    sizes = [int(item.replace("_", "")) for item in (options.sizes or default_sizes).split(",")]
    began = time.perf_counter()

    print("# gmchat_nb project benchmarks\n")
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"graphql-core {graphql.__version__}, os.cpu_count() = {os.cpu_count()}, "
        f"{platform.system()} {platform.machine()}"
        + (f", load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "")
        + (" — **quick run**" if options.quick else "")
        + "\n"
    )

    index_rows: list[IndexRow] = []
    search_rows: list[SearchRow] = []
    for size in sizes:
        index_row, search_row = bench_large(size, options.quick)
        index_rows.append(index_row)
        search_rows.append(search_row)
        gc.collect()  # drop this size's schema before building the next
    query_rows = asyncio.run(bench_queries(options.quick))

    print_index_table(index_rows)
    print_search_tables(search_rows)
    print_query_table(query_rows)
    print(f"Total wall time: {time.perf_counter() - began:.0f} s.")


if __name__ == "__main__":
    main()

"""Benchmark of planned read orchestration: provider requests, prompt size and engine overhead.

Run from the repository root::

    .venv/bin/python bench/planned.py            # a few seconds (40 timed turns per read and mode)
    .venv/bin/python bench/planned.py --quick    # a smoke run (5 timed turns)

Seven reads on the in-process inventory demo (``project: demo``): five simple ones (one manager,
one query) and two multi-hop ones — a plan with two tasks, the second depending on the first,
and one query with a nested relation filter. Each read is played three ways:

* **planned, scripted**: ``Chat(planned={"enabled": True})`` with a zero-latency
  :class:`ScriptedProvider` whose planner round names each task's query (``query: {manager,
  fields, filters}``, so no executor request is made) and whose synthesizer round is the answer;
* **legacy, scripted**: today's tool loop with the calls a good model makes — ``search_managers``,
  ``get_manager_schema``, ``query`` (a multi-hop read asks for both schemas in one response and
  runs both queries in one response), then the answer;
* **offline**: the default offline provider, with planned orchestration on and off.

Measured: provider requests per read (planned ones from ``done.orchestration.requests``, the rest
counted by a recording provider); characters of prompt sent per read (every request's messages
and tools — or, for a structured request, its response schema — as JSON, serialised as
``bench/turn.py`` serialises them); and the wall time of a planned turn against running the same
queries directly (``await project.query(**args)`` on a project from ``connect("demo")``), timed in
alternation in the same run, with the legacy turn for reference. GeneralManager's column is
quoted from the outside testers' measurement of GeneralManager 0.87.1, not measured here.
Timings are medians; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any

from machine import describe, load  # bench/ is on sys.path when run

from gmchat_nb import Chat
from gmchat_nb.core.project import Project, connect
from gmchat_nb.core.providers.base import Message, StructuredReply, ToolDefinition
from gmchat_nb.core.providers.offline import OfflineProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider

TARGET_RATIO = 1.5
# Quoted, not measured: GeneralManager 0.87's planned path (the behaviour spec, section 8 item 8:
# "Every read needs >=4 provider requests"; section 7: "Observed simple read: 4 provider
# requests"). Its multi-hop reads add executor requests per task, so ">=4" is a floor there too.
# 5 for "Show me all parts" was reported to this benchmark's author as measured; the spec file
# itself does not give that figure, so it is footnoted as reported, not cited.
GM_REQUESTS = "≥4"
GM_REPORTED = {"Show me all parts": "≥4 (5 reported†)"}

Query = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Read:
    """One question, the queries that answer it (one per plan task) and its kind."""

    question: str
    kind: str  # "simple" or "multi-hop"
    tasks: tuple[Query, ...]
    depends: bool = False  # the second task depends on the first
    search: str = ""  # what a good model searches the managers for

    @property
    def managers(self) -> list[str]:
        return list(dict.fromkeys(str(query["manager"]) for query in self.tasks))


READS = (
    Read(
        "Show me all parts",
        "simple",
        ({"manager": "Part", "fields": ["name", "quantity", "unitPrice"]},),
        search="parts",
    ),
    Read(
        "Which materials are hazardous?",
        "simple",
        ({"manager": "Material", "fields": ["name", "density"], "filters": {"hazardous": True}},),
        search="hazardous materials",
    ),
    Read(
        "Parts made of steel",
        "simple",
        (
            {
                "manager": "Part",
                "fields": ["name", "quantity", "unitPrice"],
                "filters": {"material__name": "Steel"},
            },
        ),
        search="parts material",
    ),
    Read(
        "Which projects are active?",
        "simple",
        ({"manager": "Project", "fields": ["name", "startDate"], "filters": {"status": "active"}},),
        search="projects status",
    ),
    Read(
        "Which purchase orders are urgent?",
        "simple",
        (
            {
                "manager": "PurchaseOrder",
                "fields": ["number", "orderDate", "quantity"],
                "filters": {"urgent": True},
            },
        ),
        search="purchase orders",
    ),
    Read(
        "Projects that use parts made of cobalt",
        "multi-hop",
        (
            {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Cobalt"}},
            {
                "manager": "Project",
                "fields": ["name", "status"],
                "filters": {"partsList__material__name": "Cobalt"},
            },
        ),
        depends=True,
        search="projects parts cobalt",
    ),
    Read(
        "Who supplies parts made of hazardous materials?",
        "multi-hop",
        (
            {
                "manager": "Supplier",
                "fields": ["name", "country"],
                "filters": {"partList__material__hazardous": True},
            },
        ),
        search="suppliers parts hazardous materials",
    ),
)
ANSWER = "Here is what the data shows."


def plan_of(read: Read) -> dict[str, Any]:
    """The plan a good planner sends: one task per query, each naming its query."""
    tasks = []
    for number, query in enumerate(read.tasks, start=1):
        tasks.append(
            {
                "task_id": f"task_{number}",
                "objective": f"{read.question} ({query['manager']})",
                "depends_on": ["task_1"] if read.depends and number > 1 else [],
                "requirements": [
                    {
                        "requirement_id": f"r{number}",
                        "kind": "query",
                        "description": f"the {query['manager']} rows",
                        "query": query,
                    }
                ],
            }
        )
    return {"intent": "read", "tasks": tasks}


def planned_rounds(read: Read) -> list[dict[str, Any]]:
    """The planner's structured round, then the synthesizer's answer (citing the evidence)."""
    cited = " ".join(f"[task_{n}:query:1]" for n in range(1, len(read.tasks) + 1))
    return [{"structured": plan_of(read)}, {"text": f"{ANSWER} {cited}"}]


def legacy_rounds(read: Read) -> list[dict[str, Any]]:
    """A good model on today's loop: search, the schemas, the queries, the answer."""
    return [
        {"tool_calls": [{"name": "search_managers", "args": {"query": read.search}}]},
        {
            "tool_calls": [
                {"name": "get_manager_schema", "args": {"manager": manager}}
                for manager in read.managers
            ]
        },
        {"tool_calls": [{"name": "query", "args": query} for query in read.tasks]},
        {"text": ANSWER},
    ]


def request_chars(messages: list[Message], tools: list[ToolDefinition]) -> int:
    """Characters of one streamed request as an SDK would serialise it (as bench/turn.py)."""
    payload = {
        "messages": [message.to_dict() for message in messages],
        "tools": [dataclasses.asdict(tool) for tool in tools],
    }
    return len(json.dumps(payload, ensure_ascii=False, default=str))


def structured_chars(messages: list[Message], schema: Mapping[str, Any]) -> int:
    """Characters of one structured request: its messages and its response schema as JSON."""
    payload = {
        "messages": [message.to_dict() for message in messages],
        "schema": dict(schema),
    }
    return len(json.dumps(payload, ensure_ascii=False, default=str))


class RecordingOffline(OfflineProvider):
    """The offline provider, recording its requests as :class:`ScriptedProvider` does."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self.requests: list[tuple[list[Message], list[ToolDefinition]]] = []
        self.structured_requests: list[tuple[list[Message], dict[str, Any], str]] = []

    def complete(self, messages: list[Message], tools: list[ToolDefinition]) -> Any:
        self.requests.append((list(messages), list(tools)))
        return super().complete(messages, tools)

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        self.structured_requests.append((list(messages), dict(response_schema), name))
        return await super().complete_structured(messages, response_schema, name=name)


Recorder = ScriptedProvider | RecordingOffline


def make_chat(provider: Recorder, planned: bool, target: str = "demo") -> Chat:
    extra: dict[str, Any] = {"planned": {"enabled": True}} if planned else {}
    return Chat(
        project=target, provider=provider, store=":memory:", rate_limit={"requests": None}, **extra
    )


@dataclasses.dataclass
class Sent:
    """What one turn sent and how it ended."""

    requests: int = 0
    structured: int = 0
    chars: int = 0
    structured_chars: int = 0
    by_role: dict[str, int] | None = None  # done.orchestration.requests (planned turns)
    ended: str = ""


async def one_turn(chat: Chat, provider: Recorder, question: str) -> Sent:
    """Ask ``question`` in a fresh conversation; what the provider received for it."""
    await chat.new_conversation()
    streamed, structured = len(provider.requests), len(provider.structured_requests)
    turn = await chat.ask(question)
    last = turn.events[-1]
    sent = Sent(ended=str(last.get("code") or last["type"]))
    if last["type"] == "done":
        sent.by_role = (last.get("orchestration") or {}).get("requests")
    for messages, tools in provider.requests[streamed:]:
        sent.requests += 1
        sent.chars += request_chars(messages, tools)
    for messages, schema, _name in provider.structured_requests[structured:]:
        sent.structured += 1
        sent.structured_chars += structured_chars(messages, schema)
    return sent


async def counts(read: Read) -> dict[str, Sent]:
    """One turn of ``read`` in each mode: planned and legacy, scripted and offline."""
    modes: dict[str, tuple[Recorder, bool]] = {
        "planned": (ScriptedProvider({"rounds": planned_rounds(read)}), True),
        "legacy": (ScriptedProvider({"rounds": legacy_rounds(read)}), False),
        "offline planned": (RecordingOffline(), True),
        "offline legacy": (RecordingOffline(), False),
    }
    sent = {}
    for mode, (provider, planned) in modes.items():
        chat = make_chat(provider, planned)
        sent[mode] = await one_turn(chat, provider, read.question)
        await chat.aclose()
    return sent


async def timings(
    read: Read, project: Project, warmup: int, runs: int, target: str = "demo"
) -> dict[str, float]:
    """Median planned turn, legacy turn and direct queries, timed in alternation (and the rows
    the direct queries returned); ``target`` is the project the chats connect to, ``project``
    the same one for the direct queries."""
    repeat = warmup + runs
    planned_provider = ScriptedProvider({"rounds": planned_rounds(read) * repeat})
    legacy_provider = ScriptedProvider({"rounds": legacy_rounds(read) * repeat})
    planned_chat = make_chat(planned_provider, True, target)
    legacy_chat = make_chat(legacy_provider, False, target)
    times: dict[str, list[float]] = {"planned": [], "legacy": [], "direct": []}

    async def turn(chat: Chat) -> float:
        await chat.new_conversation()  # the same context every time, created untimed
        start = time.perf_counter()
        done = await chat.ask(read.question)
        elapsed = time.perf_counter() - start
        if done.events[-1]["type"] != "done":
            raise RuntimeError(f"{read.question!r}: {done.events[-1]}")
        return elapsed

    async def direct() -> float:
        start = time.perf_counter()
        rows = 0
        for query in read.tasks:
            rows += len((await project.query(**query)).rows)
        elapsed = time.perf_counter() - start
        times["rows"] = [rows]
        return elapsed

    for number in range(repeat):
        measured: dict[str, float] = {
            "planned": await turn(planned_chat),
            "direct": await direct(),
            "legacy": await turn(legacy_chat),
        }
        if number >= warmup:
            for key, value in measured.items():
                times[key].append(value)
    await planned_chat.aclose()
    await legacy_chat.aclose()
    return {key: statistics.median(values) for key, values in times.items()}


def requests_cell(sent: Sent) -> str:
    total = sent.requests + sent.structured
    return f"{total}" if sent.ended == "done" else f"{total} ({sent.ended})"


def roles_cell(sent: Sent) -> str:
    roles = sent.by_role or {}
    split = "/".join(str(roles.get(role, 0)) for role in ("planner", "executor", "synthesizer"))
    return f"{requests_cell(sent)} ({split})"


async def main(quick: bool, runs: int) -> None:
    warmup, runs = (2, 5) if quick else (5, runs)
    before = describe()
    sent = {read.question: await counts(read) for read in READS}
    counted = load()
    project = await connect("demo")
    timed = {read.question: await timings(read, project, warmup, runs) for read in READS}
    after = load()
    await project.aclose()
    with served_demo() as url:
        remote = await connect(url)
        over_http = {
            read.question: await timings(read, remote, warmup, runs, url) for read in READS
        }
        await remote.aclose()
    after_http = load()

    print("# gmchat_nb planned orchestration benchmark\n")
    print(
        f"{before} before, {after} after; {runs} timed turns per read and mode after {warmup} "
        "warm-up, medians; zero-latency scripted and offline providers, demo project in process\n"
    )

    print(f"## Provider requests per read (load average {counted})\n")
    print(
        "| read | kind | planned, scripted (planner/executor/synthesizer) | legacy, scripted "
        "| GeneralManager 0.87 planned (quoted, not measured) | offline, planned "
        "(planner/executor/synthesizer) | offline, legacy |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for read in READS:
        row = sent[read.question]
        print(
            f"| {read.question} | {read.kind} | {roles_cell(row['planned'])} | "
            f"{requests_cell(row['legacy'])} | {GM_REPORTED.get(read.question, GM_REQUESTS)} | "
            f"{roles_cell(row['offline planned'])} "
            f"| {requests_cell(row['offline legacy'])} |"
        )
    print(
        '\nGeneralManager: the behaviour spec quoted — "Every read needs ≥4 provider requests" '
        '(§8.8), "Observed simple read: 4 provider requests" (§7). † 5 requests measured for '
        "this read were reported to this benchmark's author; the spec file does not give it. The "
        "offline planner names no query in its plan, so its executor takes the legacy steps "
        "(search, schema, query, text); a cell shows how a turn ended when it was not `done`."
    )

    print(f"\n## Prompt characters sent per read (load average {counted})\n")
    print(
        "| read | planned: planner request | planned: synthesizer request(s) | planned total "
        "| legacy total (requests) | planned / legacy | offline planned | offline legacy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for read in READS:
        row = sent[read.question]
        planned, legacy = row["planned"], row["legacy"]
        planned_total = planned.chars + planned.structured_chars
        legacy_total = legacy.chars + legacy.structured_chars
        offline = [
            row[m].chars + row[m].structured_chars for m in ("offline planned", "offline legacy")
        ]
        print(
            f"| {read.question} | {planned.structured_chars:,} | {planned.chars:,} | "
            f"{planned_total:,} | {legacy_total:,} ({legacy.requests}) | "
            f"{planned_total / legacy_total:.2f}x | {offline[0]:,} | {offline[1]:,} |"
        )
    print(
        "\nEvery request's messages (system prompt, question, tool calls and results) and tools — "
        "for the planner's structured request, its response schema — as JSON."
    )

    print(
        "\n## Engine overhead: planned turn vs the same queries run directly "
        f"(load average {after})\n"
    )
    overhead_table(timed)
    overhead_summary(timed)
    print(
        "\n## The same over HTTP: the demo served as a GeneralManager deployment serves "
        f"`/graphql/` (`gmchat serve-demo`, another process; load average {after_http})\n"
    )
    overhead_table(over_http)
    overhead_summary(over_http)
    print(
        "\nOver HTTP each query is a GraphQL request to another process, as against a real "
        "GeneralManager server (where a query also pays Django and the database); the turn's "
        "fixed cost is the same as in process."
    )


def overhead_table(timed: Mapping[str, Mapping[str, float]]) -> None:
    print(
        "| read | queries | rows | planned turn (median) | baseline: `project.query` directly | "
        "planned / direct | goal | legacy turn (reference) | legacy / direct |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for read in READS:
        t = timed[read.question]
        ratio = t["planned"] / t["direct"]
        verdict = "✅" if ratio <= TARGET_RATIO else "❌"
        print(
            f"| {read.question} | {len(read.tasks)} | {t['rows']:.0f} | {t['planned'] * 1e3:,.2f} ms | "
            f"{t['direct'] * 1e3:,.2f} ms | {ratio:.2f}x | ≤ {TARGET_RATIO}x {verdict} | "
            f"{t['legacy'] * 1e3:,.2f} ms | {t['legacy'] / t['direct']:.2f}x |"
        )


def overhead_summary(timed: Mapping[str, Mapping[str, float]]) -> None:
    planned_sum = sum(t["planned"] for t in timed.values())
    direct_sum = sum(t["direct"] for t in timed.values())
    print(
        f"\nAll seven reads: planned {planned_sum * 1e3:,.1f} ms against direct "
        f"{direct_sum * 1e3:,.1f} ms ({planned_sum / direct_sum:.2f}x); fixed cost of a planned "
        f"turn over its queries, median over the reads: "
        f"{statistics.median(t['planned'] - t['direct'] for t in timed.values()) * 1e3:,.2f} ms "
        "(planning context, evidence store, persistence, events and synthesis over a scripted "
        "model)."
    )


@contextlib.contextmanager
def served_demo() -> Iterator[str]:
    """``gmchat serve-demo`` in another process; yields its GraphQL URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gmchat_nb.cli", "serve-demo"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("GraphQL endpoint: "):
            raise RuntimeError(f"serve-demo did not start: {line!r}")
        yield line.split(": ", 1)[1].strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=40, help="timed turns per read and mode")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick, arguments.runs))

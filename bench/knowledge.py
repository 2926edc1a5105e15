"""Benchmark of knowledge recall: its latency as the knowledge grows, on SQLite and PostgreSQL,
and its share of a simple turn's CPU.

Run from the repository root::

    .venv/bin/python bench/knowledge.py                    # 100, 10,000, 100,000 entries
    .venv/bin/python bench/knowledge.py --quick            # a smoke run: 100 and 10,000
    .venv/bin/python bench/knowledge.py --no-postgresql    # SQLite only

1. **Recall latency**: ``recall()`` (:mod:`gmchat_nb.core.knowledge.recall`, what a turn runs
   before its first model request) for one reader, keyword and hybrid, with 100, 10,000 and
   100,000 entries in the project. The entries (bench/knowledge_corpus.py) are verified queries,
   definitions and notes made over the inventory demo's vocabulary with many distinct words, a
   tenth of them suggested or stale, personal ones of 51 people; their vectors come from the
   packaged wordllama model, embedded in batches, and they are stored with
   ``ChatStore.add_knowledge_many`` in batches of 2,000. The questions: half paraphrase an entry
   the reader may see (another wording of the same slots), a fifth are broad (the demo's common
   words: thousands of matches), the rest are about something else (nothing should be
   recalled). Each question is timed once per round; p50 and p95 of each round, medians of the
   rounds. "first" is the first hybrid recall after loading: it builds the vector matrix, as
   the first recall after any change to the project's entries does. The SQLite store is a file;
   PostgreSQL is ``GMCHAT_BENCH_POSTGRES`` (a fresh schema) or a throwaway cluster started as
   tests/postgresql.py does (fsync on), analysed after loading as autovacuum would within a
   minute.
2. **Recall's share of a turn's CPU** with a zero-latency model: the same simple turn (a
   scripted provider: one ``query`` call, then the answer) through ``Chat.ask`` on one session
   and one SQLite store holding 1,000 entries plus the verified query the turn re-runs, each
   turn in a new conversation switched to ``off`` or ``hybrid``, alternating; process CPU time
   (``time.process_time``) per turn. Share = (hybrid - off) / hybrid, median of the runs. The
   baseline, "off", is measured in the same run. Also ``recall()`` alone on the same question.

Goals (the issue's): recall p95 under 20 ms at 10,000 entries; recall under 10% of a turn's
CPU at 1,000 entries. Nothing is asserted; the machine's load is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge_corpus import (
    READER,
    Corpus,
    Question,
    Vocabulary,
    batches,
    generate,
    questions,
    vocabulary,
)
from machine import describe, load  # bench/ is on sys.path when run

from gmchat_nb import Chat
from gmchat_nb.core.knowledge import KnowledgeBook
from gmchat_nb.core.knowledge.recall import recall
from gmchat_nb.core.knowledge.vectors import embedder, to_bytes
from gmchat_nb.core.project.connect import demo_project
from gmchat_nb.core.project.project import Project
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.postgresql

GOAL_P95_MS = 20.0
GOAL_SIZE = 10_000
GOAL_SHARE = 0.10
SHARE_ENTRIES = 1_000
BATCH = 2_000
MODES = ("keyword", "hybrid")
TURN_QUESTION = "Which parts are made of titanium?"
TURN_CALL = {
    "manager": "Part",
    "fields": ["name", "quantity"],
    "filters": {"material__name": "Titanium"},
}


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (the p95 of 20 values is the 19th)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * share)) - 1]


@dataclass
class Timings:
    """One (store, size, mode): each round's latencies by question kind, and what was found."""

    rounds: list[list[tuple[str, float]]] = field(default_factory=list)
    first: float = 0.0
    found: int = 0  # paraphrases whose entry was recalled (last round)
    asked: int = 0  # paraphrases asked (last round)
    silent: int = 0  # unrelated questions that recalled nothing (last round)
    unrelated: int = 0

    def quantile(self, share: float, kind: str | None = None) -> float:
        """The median over rounds of each round's percentile, in ms."""
        return 1e3 * statistics.median(
            percentile([t for k, t in run if kind in (None, k)], share) for run in self.rounds
        )

    def cell(self, kind: str | None = None) -> str:
        return f"{self.quantile(0.5, kind):.2f} / {self.quantile(0.95, kind):.2f}"


@dataclass
class Loaded:
    size: int
    corpus: Corpus
    vectors: list[bytes | None]
    embed_seconds: float


def prepare(vocab: Vocabulary, size: int) -> Loaded:
    corpus = generate("bench:knowledge", vocab, size)
    model = embedder()
    start = time.perf_counter()
    vectors: list[bytes | None] = [None] * len(corpus.records)
    if model is not None:
        for first in range(0, len(corpus.records), BATCH):
            chunk = corpus.records[first : first + BATCH]
            rows = model.embed([f"{record.name}\n{record.body}" for record in chunk])
            vectors[first : first + len(chunk)] = [to_bytes(row) for row in rows]
    return Loaded(size, corpus, vectors, time.perf_counter() - start)


def fill(store: ChatStore, loaded: Loaded) -> float:
    """Store the entries in batches; seconds taken."""
    start = time.perf_counter()
    pairs = list(zip(loaded.corpus.records, loaded.vectors, strict=True))
    for batch in batches(pairs, BATCH):
        skipped = store.add_knowledge_many(batch)
        assert not skipped, "the corpus has no duplicates"
    return time.perf_counter() - start


def time_recall(book: KnowledgeBook, asked: list[Question], rounds: int) -> dict[str, Timings]:
    found = {mode: Timings() for mode in MODES}
    for mode in MODES:
        start = time.perf_counter()
        recall(book, asked[0].text, mode)  # the first after loading builds the vector matrix
        found[mode].first = time.perf_counter() - start
    for _ in range(rounds):
        for mode in MODES:
            timings, run = found[mode], []
            timings.found = timings.asked = timings.silent = timings.unrelated = 0
            for question in asked:
                start = time.perf_counter()
                recalled = recall(book, question.text, mode)
                run.append((question.kind, time.perf_counter() - start))
                ids = [] if recalled is None else [record.id for record, _ in recalled.entries]
                if question.kind == "specific":
                    timings.asked += 1
                    timings.found += question.target in ids
                elif question.kind == "unrelated":
                    timings.unrelated += 1
                    timings.silent += not ids
            timings.rounds.append(run)
    return found


@dataclass
class Row:
    store: str
    size: int
    load_seconds: float
    timings: dict[str, Timings]


def measure_store(
    name: str,
    open_store: Any,
    project: Project,
    prepared: list[Loaded],
    asked: dict[int, list[Question]],
    rounds: int,
) -> list[Row]:
    rows = []
    for loaded in prepared:
        with open_store() as (location, analyse):
            store = ChatStore(location)
            try:
                seconds = fill(store, loaded)
                analyse()
                book = KnowledgeBook(store, project, project_key="bench:knowledge", owner=READER)
                timings = time_recall(book, asked[loaded.size], rounds)
            finally:
                store.close()
        rows.append(Row(name, loaded.size, seconds, timings))
        print(f"  {name} {loaded.size:,}: done (load average {load()})", file=sys.stderr)
    return rows


@contextmanager
def sqlite_store() -> Iterator[tuple[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="gmchat-bench-knowledge-") as folder:
        # as deployed: the store never runs ANALYZE, so SQLite plans without statistics
        yield str(Path(folder) / "chat.sqlite3"), lambda: None


@contextmanager
def postgresql_server() -> Iterator[str | None]:
    """A server's URL, or ``None`` (the reason on stderr) when there is none to start."""
    from tests.postgresql import Cluster, wait_until_ready

    configured = os.environ.get("GMCHAT_BENCH_POSTGRES")
    if configured:
        wait_until_ready(configured)
        yield configured
        return
    try:
        running = Cluster(fsync=True)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"PostgreSQL skipped: {error}", file=sys.stderr)  # RuntimeError: no binaries
        yield None
        return
    try:
        wait_until_ready(running.url)
        yield running.url
    finally:
        running.remove()


def postgresql_store(server: str) -> Any:
    @contextmanager
    def opened() -> Iterator[tuple[str, Any]]:
        import psycopg

        from tests.postgresql import fresh_schema

        with fresh_schema(server) as url:

            def analyse() -> None:  # what autovacuum does within a minute of a bulk load
                with psycopg.connect(url, autocommit=True) as connection:
                    connection.execute("VACUUM ANALYZE knowledge")

            yield url, analyse

    return opened


# -- recall's share of a turn ------------------------------------------------------------------


async def turn_share(vocab: Vocabulary, turns: int, warmup: int, runs: int) -> dict[str, Any]:
    rounds = [
        {"tool_calls": [{"name": "query", "args": TURN_CALL}]},
        {"text": "5 parts are made of titanium."},
    ]
    provider = ScriptedProvider({"rounds": rounds * (2 * (turns + warmup) * runs + 2)})
    with tempfile.TemporaryDirectory(prefix="gmchat-bench-knowledge-") as folder:
        chat = Chat(
            provider=provider,
            store=str(Path(folder) / "chat.sqlite3"),
            rate_limit={"requests": None},
        )
        session = await chat.session()
        book = session.knowledge
        corpus = generate(book.project_key, vocab, SHARE_ENTRIES, reader=book.owner)
        model = embedder()
        vectors: list[bytes | None] = (
            [to_bytes(row) for row in model.embed([f"{r.name}\n{r.body}" for r in corpus.records])]
            if model is not None
            else [None] * len(corpus.records)
        )
        session.store.add_knowledge_many(list(zip(corpus.records, vectors, strict=True)))
        book.add_verified_query(
            "titanium parts", TURN_QUESTION, [{"tool": "query", "arguments": TURN_CALL}]
        )
        shares: list[float] = []
        cpu: dict[str, list[float]] = {"off": [], "hybrid": []}
        checks: dict[str, Any] = {}
        for _ in range(runs):
            times: dict[str, list[float]] = {"off": [], "hybrid": []}
            for number in range(warmup + turns):
                order = ("off", "hybrid") if number % 2 else ("hybrid", "off")
                for mode in order:
                    session.new_conversation()
                    await chat.knowledge.recall_in_conversation(mode)
                    start = time.process_time()
                    turn = await chat.ask(TURN_QUESTION)
                    spent = time.process_time() - start
                    assert turn.events[-1]["type"] == "done", turn.events[-1]
                    checks[mode] = (len(turn.recalled), turn.trusted)
                    if number >= warmup:
                        times[mode].append(spent)
                    chat.turns.clear()
            on, off = statistics.median(times["hybrid"]), statistics.median(times["off"])
            shares.append((on - off) / on)
            cpu["hybrid"].append(on)
            cpu["off"].append(off)
        alone: list[float] = []
        for _ in range(200):
            start = time.process_time()
            recall(book, TURN_QUESTION, "hybrid")
            alone.append(time.process_time() - start)
        await chat.aclose()
    return {
        "share": statistics.median(shares),
        "shares": shares,
        "on": statistics.median(cpu["hybrid"]),
        "off": statistics.median(cpu["off"]),
        "alone": statistics.median(alone),
        "checks": checks,
    }


# -- the report --------------------------------------------------------------------------------


def verdict(met: bool) -> str:
    return "met" if met else "**NOT met**"


def report(rows: list[Row], skipped: str | None, share: dict[str, Any], args: Any) -> None:
    hybrid_note = "" if embedder() is not None else " (no wordllama: hybrid is keyword alone)"
    print("\n## Recall latency, ms: p50 / p95 of each round, medians of the rounds\n")
    print(
        f"{args.questions} questions per size (half paraphrases of an entry, a fifth broad, "
        f"the rest unrelated), {args.rounds} rounds{hybrid_note}.\n"
    )
    print(
        "| store | entries | load (entries/s) | keyword | hybrid | hybrid / keyword (p95) "
        "| first hybrid (matrix build) | paraphrase's entry recalled: keyword / hybrid "
        "| unrelated that recalled nothing |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        keyword, hybrid = row.timings["keyword"], row.timings["hybrid"]
        ratio = hybrid.quantile(0.95) / keyword.quantile(0.95)
        print(
            f"| {row.store} | {row.size:,} | {row.load_seconds:.1f} s "
            f"({row.size / row.load_seconds:,.0f}) | {keyword.cell()} | {hybrid.cell()} "
            f"| {ratio:.2f}x | {hybrid.first * 1e3:,.0f} ms "
            f"| {keyword.found}/{keyword.asked} / {hybrid.found}/{hybrid.asked} "
            f"| {hybrid.silent}/{hybrid.unrelated} |"
        )
    if skipped:
        print(f"| PostgreSQL | - | skipped: {skipped} | | | | | | |")
    print("\n### By kind of question, ms: p50 / p95\n")
    print("| store | entries | mode | paraphrase | broad | unrelated |")
    print("|---|---:|---|---:|---:|---:|")
    for row in rows:
        for mode in MODES:
            timings = row.timings[mode]
            cells = " | ".join(timings.cell(kind) for kind in ("specific", "broad", "unrelated"))
            print(f"| {row.store} | {row.size:,} | {mode} | {cells} |")
    print("\n## Recall's share of a simple turn's CPU, zero-latency model\n")
    checks = share["checks"]
    print(
        f"{SHARE_ENTRIES:,} entries (+ the turn's verified query), SQLite file; "
        f"{args.turns} turns per mode per run after {args.warmup} warm-up, {args.runs} runs. "
        f"Last hybrid turn: {checks['hybrid'][0]} recalled, trusted {checks['hybrid'][1]}; "
        f"last off turn: {checks['off'][0]} recalled.\n"
    )
    print("| turn CPU, off (baseline) | turn CPU, hybrid | recall's share | each run | "
          "recall() alone | alone / hybrid turn |")  # fmt: skip
    print("|---:|---:|---:|---|---:|---:|")
    each = ", ".join(f"{value:.1%}" for value in share["shares"])
    print(
        f"| {share['off'] * 1e3:.2f} ms | {share['on'] * 1e3:.2f} ms | {share['share']:.1%} "
        f"| {each} | {share['alone'] * 1e3:.2f} ms | {share['alone'] / share['on']:.1%} |"
    )
    print("\n## Goals\n")
    for row in rows:
        if row.size != GOAL_SIZE:
            continue
        for mode in MODES:
            p95 = row.timings[mode].quantile(0.95)
            print(
                f"- recall p95 at {GOAL_SIZE:,} entries under {GOAL_P95_MS:.0f} ms, {row.store}, "
                f"{mode}: {p95:.2f} ms: {verdict(p95 < GOAL_P95_MS)}"
            )
    if not any(row.size == GOAL_SIZE for row in rows):
        print(f"- recall p95 at {GOAL_SIZE:,} entries: not measured (sizes {args.sizes})")
    if skipped:
        print(f"- PostgreSQL not measured: {skipped}")
    print(
        f"- recall under {GOAL_SHARE:.0%} of a simple turn's CPU at {SHARE_ENTRIES:,} entries: "
        f"{share['share']:.1%}: {verdict(share['share'] < GOAL_SHARE)}"
    )
    print(f"\nload average after: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100 and 10,000 entries, fewer runs")
    parser.add_argument("--sizes", help="entries per store, comma-separated")
    parser.add_argument("--rounds", type=int, help="timed rounds over the questions (medians)")
    parser.add_argument("--questions", type=int, help="questions per size")
    parser.add_argument("--runs", type=int, help="runs of the turn share (median)")
    parser.add_argument("--turns", type=int, help="turns per mode per run")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up turns per run")
    parser.add_argument("--no-postgresql", action="store_true", help="SQLite only")
    args = parser.parse_args()
    defaults = (
        {"sizes": "100,10000", "rounds": 3, "questions": 60, "runs": 3, "turns": 20}
        if args.quick
        else {"sizes": "100,10000,100000", "rounds": 5, "questions": 100, "runs": 5, "turns": 40}
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    sizes = [int(size) for size in str(args.sizes).split(",")]

    print("# gmchat_nb knowledge recall benchmark\n")
    print(f"{describe()}\n")
    project = demo_project()
    started = time.perf_counter()
    vocab = vocabulary(project)
    prepared = [prepare(vocab, size) for size in sizes]
    asked = {item.size: questions(item.corpus, args.questions) for item in prepared}
    for item in prepared:
        print(
            f"- {item.size:,} entries generated; embedded with wordllama in "
            f"{item.embed_seconds:.1f} s; {len(item.corpus.paraphrases):,} the reader may see "
            "active"
        )
    rows = measure_store("SQLite", sqlite_store, project, prepared, asked, args.rounds)
    skipped = None
    if args.no_postgresql:
        skipped = "--no-postgresql"
    else:
        with postgresql_server() as server:
            if server is None:
                skipped = "no PostgreSQL server binaries (apt-get install postgresql)"
            else:
                store = postgresql_store(server)
                rows += measure_store("PostgreSQL", store, project, prepared, asked, args.rounds)
    share = asyncio.run(turn_share(vocab, args.turns, args.warmup, args.runs))
    print(f"\nmeasured in {time.perf_counter() - started:.0f} s")
    report(rows, skipped, share, args)


if __name__ == "__main__":
    main()

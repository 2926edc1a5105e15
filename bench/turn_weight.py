"""How heavy a simple turn is, this checkout against another commit's, measured in the same run:
the server's CPU time per turn and the prompt characters the SDK adapters send.

Run from the repository root, with the baseline commit checked out beside and installed in a venv
of its own, on the same Python and the same library versions as this one (the install needs no
front-end build at 8747e57)::

    git worktree add /tmp/gm-8747e57 8747e57
    "$(.venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv /tmp/venv-8747
    .venv/bin/pip freeze | grep -v -e '^-e' -e gmchat > /tmp/constraints.txt
    /tmp/venv-8747/bin/pip install -c /tmp/constraints.txt -e '/tmp/gm-8747e57[dev]'
    .venv/bin/python bench/turn_weight.py --baseline /tmp/gm-8747e57 \\
        --baseline-python /tmp/venv-8747/bin/python     # ~1 minute
    ... --quick                # a smoke run (~20 s)
    ... --profile              # + where the CPU goes (py-spy, cProfile; ~3 minutes in all)
    ... --rate-limit           # both with request and token budgets that never refuse
    ... --this /tmp/gm-head    # another checkout measured as "this" (e.g. a worktree of HEAD
                               # while the working tree is mid-edit), with this venv's Python

**Server CPU per turn.** Two real `jupyter server` subprocesses on 127.0.0.1 with the extension
(``bench/server.py`` starts them), each checkout's gmchat_nb under that checkout's own Python,
both with the zero-latency scripted "small" turn of ``bench/turn.py`` (two queries in one provider
response, then the answer) over the in-process inventory demo, a fresh SQLite file store and no
rate limit (these settings exist at both commits); everything else is each commit's default:
every defence on and charts on here, knowledge off. Each turn is ``POST {base_url}gmchat/chat/
conversations/`` then ``POST {base_url}gmchat/chat/`` in that new conversation, one client, one
after another, over a keep-alive connection (``bench/rawhttp.py``). The server process's CPU time
(user + system, all threads, ``/proc/PID/stat``, 10 ms ticks) is read before and after a block of
``--turns`` turns (200); blocks alternate between the two servers, the order flipping every
round, for ``--rounds`` rounds (7): each row is the median of the rounds (min-max beside). Also
per round: a block of conversation creations alone (so "without the creation" = turn - creation),
and, before the rounds, each server's idle CPU (its background tasks) over 3 s.

**Prompt characters.** The same simple read through each checkout's SDK adapters (openai and
anthropic) against this checkout's ``tests/vendor_server.py`` (the peer: one file for both),
which plays the same model rounds for both: "Which projects use parts made of cobalt?" on the
inventory demo -- find_path Project -> Material, a query of Project through the path, the answer
(3 requests) -- and the "small" turn (2 requests). Counted: the characters of each HTTP request
body as it came over the wire, summed over the turn's requests, and a breakdown of the body
serialised as compact JSON: system prompt, each tool definition, tool results (the envelopes),
the user's question, the assistant's messages, and the rest (model, stream, max_tokens, keys).
Every setting at its default (every defence on, charts on), knowledge off; ``--settings JSON``
adds chat settings for this checkout only (e.g. when a setting comes that the baseline lacks).

``--profile``: where the CPU goes. Each checkout's server again, sampled by py-spy (``--py-spy
PATH``; ``pip install py-spy`` into any venv) 1,000 times a second over a block of turns, the
thread holding the GIL (so SQLite's own C code, which runs without it, is not seen); each
sample's time goes to the innermost gmchat_nb function on its stack (with the library calls it
makes), as shares of the unsampled CPU per turn measured above; by package, module and function,
the largest differences. Then the small turn in-process (``Chat.ask`` with the scripted provider and
a SQLite store in memory) in each checkout's Python: timed unprofiled (wall and thread CPU,
medians), sampled by py-spy the same way, and under cProfile (self time and calls per turn by
``file:function``; cProfile inflates call-heavy code).

The checkouts run in their own processes (``bench/turn_weight_child.py`` is the half that runs
inside a checkout), so the baseline's environment needs nothing of this one's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import marshal
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe, load
from rawhttp import Connection
from server import AUTH, LIMITER_ON, jupyter_server, new_conversation, peak_rss_mib, post_turn
from turn import QUESTION, WORKLOADS, rounds

HERE = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).resolve().parent / "turn_weight_child.py"
VENDOR_SERVER = HERE / "tests" / "vendor_server.py"
TARGET = 1.10  # at most 10% above the baseline
NAMES = ("this", "baseline")

COBALT_QUESTION = "Which projects use parts made of cobalt?"
COBALT_REPLIES: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "name": "find_path",
                "arguments": {"from_manager": "Project", "to_manager": "Material"},
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "query",
                "arguments": {
                    "manager": "Project",
                    "filters": {"parts__material__name__icontains": "cobalt"},
                    "fields": ["name", "status", {"partsList": ["name", {"material": ["name"]}]}],
                },
            }
        ]
    },
    {
        "text": "One project uses parts made of cobalt: Apollo (status: active), through the "
        "part Gear (material: Cobalt)."
    },
]

SMALL = cast(list[dict[str, Any]], WORKLOADS["small"])


def small_replies() -> list[dict[str, Any]]:
    """The small turn of bench/turn.py as vendor-server replies."""
    first, answer = rounds(SMALL)
    calls = [{"name": c["name"], "arguments": c["args"]} for c in first["tool_calls"]]
    return [{"tool_calls": calls}, {"text": answer["text"]}]


READS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "cobalt": (COBALT_QUESTION, COBALT_REPLIES),
    "small": (QUESTION, small_replies()),
}
VENDORS = ("openai", "anthropic")


# -- the checkouts -------------------------------------------------------------------------------


class Checkout:
    """A checkout and the Python that runs it."""

    def __init__(self, path: Path, python: str, settings: dict[str, Any]) -> None:
        self.path = path.resolve()
        self.python = python
        self.settings = settings

    def commit(self) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.path), "log", "-1", "--format=%h %ad", "--date=short"],
            capture_output=True,
            text=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(self.path), "status", "--porcelain", "--", "gmchat_nb"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return done.stdout.strip() + (" + uncommitted changes in gmchat_nb/" if dirty else "")

    def imported(self) -> str:
        """Where this Python imports gmchat_nb from, run as the server runs (cwd and
        PYTHONPATH the checkout): it must be the checkout."""
        done = subprocess.run(
            [self.python, "-c", "import gmchat_nb; print(gmchat_nb.__file__)"],
            cwd=self.path,
            env={**os.environ, "PYTHONPATH": str(self.path)},
            capture_output=True,
            text=True,
            check=True,
        )
        where = Path(done.stdout.strip()).resolve()
        if not where.is_relative_to(self.path):
            raise SystemExit(f"{self.python} imports gmchat_nb from {where}, not {self.path}")
        return str(where.parent)

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        """One job of bench/turn_weight_child.py in this checkout's Python."""
        done = subprocess.run(
            [self.python, str(CHILD)],
            input=json.dumps({**job, "checkout": str(self.path)}),
            cwd=self.path,
            env={**os.environ, "PYTHONPATH": str(self.path)},
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise RuntimeError(f"{self.path}: {job['kind']} failed:\n{done.stderr[-3000:]}")
        return dict(json.loads(done.stdout))


# -- server CPU ----------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15)


async def conversation_only(conn: Connection) -> None:
    await new_conversation(conn)


async def cpu_rounds(
    servers: dict[str, tuple[int, int]], turns: int, rounds_: int, warmup: int
) -> dict[str, dict[str, list[float]]]:
    """Per server and round: CPU ms per turn and per conversation creation, wall ms per turn;
    idle CPU ms per second (once, before the rounds)."""
    results: dict[str, dict[str, list[float]]] = {
        name: {"turn": [], "conversation": [], "wall": [], "idle": []} for name in servers
    }
    async with ExitStackAsync() as stack:
        conns = {
            name: await stack.enter(Connection("127.0.0.1", port, AUTH))
            for name, (_, port) in servers.items()
        }
        for conn in conns.values():  # connect the project, import, fill caches
            for _ in range(warmup):
                await post_turn(conn)
        await asyncio.sleep(1.0)  # let the warm-up's deferred writes land
        before = {name: cpu_seconds(pid) for name, (pid, _) in servers.items()}
        await asyncio.sleep(3.0)
        for name, (pid, _) in servers.items():
            results[name]["idle"].append((cpu_seconds(pid) - before[name]) / 3.0 * 1000)
        for number in range(rounds_):
            order = list(servers) if number % 2 == 0 else list(reversed(servers))
            for name in order:
                pid, conn = servers[name][0], conns[name]
                start_cpu, start = cpu_seconds(pid), time.perf_counter()
                for _ in range(turns):
                    await post_turn(conn)
                wall = time.perf_counter() - start
                await asyncio.sleep(0.2)  # a turn's journal is written up to 50 ms after it ends
                results[name]["turn"].append((cpu_seconds(pid) - start_cpu) / turns * 1000)
                results[name]["wall"].append(wall / turns * 1000)
            for name in order:
                pid, conn = servers[name][0], conns[name]
                start_cpu = cpu_seconds(pid)
                for _ in range(turns):
                    await conversation_only(conn)
                await asyncio.sleep(0.2)
                results[name]["conversation"].append((cpu_seconds(pid) - start_cpu) / turns * 1000)
            print(
                f"round {number + 1}/{rounds_}: "
                + ", ".join(f"{name} {results[name]['turn'][-1]:.2f} ms" for name in servers)
                + f" CPU per turn; load {load()}",
                file=sys.stderr,
            )
    return results


class ExitStackAsync:
    """The few lines of AsyncExitStack this needs, typed simply."""

    def __init__(self) -> None:
        self._open: list[Any] = []

    async def enter(self, manager: Any) -> Any:
        value = await manager.__aenter__()
        self._open.append(manager)
        return value

    async def __aenter__(self) -> ExitStackAsync:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for manager in reversed(self._open):
            await manager.__aexit__(None, None, None)


def measure_cpu(
    checkouts: dict[str, Checkout], turns: int, rounds_: int, warmup: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, float]]:
    with ExitStack() as stack:
        servers: dict[str, tuple[int, int]] = {}
        processes = {}
        for name, checkout in checkouts.items():
            process, port = stack.enter_context(
                jupyter_server(
                    checkout=checkout.path, python=checkout.python, settings=checkout.settings
                )
            )
            servers[name] = (process.pid, port)
            processes[name] = process
        results = asyncio.run(cpu_rounds(servers, turns, rounds_, warmup))
        rss = {name: peak_rss_mib(process.pid) for name, process in processes.items()}
    return results, rss


# -- prompt characters ---------------------------------------------------------------------------


def compact(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _is_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def breakdown(vendor: str, body: dict[str, Any]) -> dict[str, int]:
    """Characters of one request body (compact JSON) by part; the parts sum to the body."""
    parts: dict[str, int] = {}

    def add(key: str, size: int) -> None:
        parts[key] = parts.get(key, 0) + size

    if "system" in body:  # anthropic
        add("system prompt", compact(body["system"]))
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "system":
            add("system prompt", compact(message))
        elif role == "tool" or _is_tool_result(message):
            add("tool results (envelopes)", compact(message))
        elif role == "user":
            add("user question", compact(message))
        else:
            add("assistant messages (tool calls, text)", compact(message))
    for tool in body.get("tools", []):
        name = tool.get("name") or tool.get("function", {}).get("name")
        add(f"tool definition: {name}", compact(tool))
    add("rest (model, stream, max_tokens, keys)", compact(body) - sum(parts.values()))
    return parts


def system_text(vendor: str, body: dict[str, Any]) -> str:
    if "system" in body:
        system = body["system"]
        if isinstance(system, str):
            return system
        return "\n\n".join(block.get("text", "") for block in system)
    return "".join(
        str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "system"
    )


def measure_prompts(checkouts: dict[str, Checkout]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (read, vendor): per checkout the requests' wire and compact sizes and breakdown."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for read, (question, replies) in READS.items():
        for vendor in VENDORS:
            entry: dict[str, Any] = {}
            for name, checkout in checkouts.items():
                done = checkout.run(
                    {
                        "kind": "prompt",
                        "vendor": vendor,
                        "question": question,
                        "replies": replies,
                        "vendor_server": str(VENDOR_SERVER),
                        "settings": checkout.settings,
                    }
                )
                if done["left"] or done["events"][-1] != "done":
                    raise RuntimeError(f"{name} {read} {vendor}: {done['events']}, {done['left']}")
                parts: dict[str, int] = {}
                for body in done["requests"]:
                    for key, size in breakdown(vendor, body).items():
                        parts[key] = parts.get(key, 0) + size
                entry[name] = {
                    "requests": len(done["requests"]),
                    "wire": sum(len(text) for text in done["raw"]),
                    "compact": sum(compact(body) for body in done["requests"]),
                    "parts": parts,
                    "system": system_text(vendor, done["requests"][0]),
                    "bodies": done["requests"],
                }
            results[(read, vendor)] = entry
    return results


def sections(text: str) -> dict[str, int]:
    """The system prompt's blank-line-separated sections by their first line (cut)."""
    found: dict[str, int] = {}
    for number, section in enumerate(text.split("\n\n")):
        head = section.split("\n", 1)[0]
        head = head if len(head) <= 48 else head[:45] + "..."
        found[head if number else "(opening) " + head[:30] + "..."] = len(section) + 2
    return found


def lines_of(text: str) -> set[str]:
    return {line for line in text.splitlines() if line.strip()}


# -- profile -------------------------------------------------------------------------------------


def name_file(path: str) -> str:
    """A source file named the same in every checkout and environment: ``gmchat_nb/...``, a
    library's own path (``graphql/execution/execute.py``) or ``stdlib:json/encoder.py``."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    index = path.rfind("/gmchat_nb/")
    if index >= 0:
        return path[index + 1 :]
    if "/lib/python3." in path:
        return "stdlib:" + path.split("/lib/python3.", 1)[1].split("/", 1)[-1]
    return path


def spy_command(py_spy: str) -> list[str]:
    """py-spy sampling 1,000 times a second the thread that holds the GIL (its idle-thread
    detection does not work here: waiting threads were sampled as busy), raw stacks by function
    with full file names; ``--pid`` and ``--output`` follow."""
    options = ["--rate", "1000", "--gil", "--format", "raw", "--nolineno", "--full-filenames"]
    return [py_spy, "record", *options]


def read_spy(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw stacks (``func (file);... count``, outermost first) as ``file:function``."""
    stacks = []
    for line in path.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        if not frames:
            continue
        stack = []
        for frame in frames.split(";"):
            function, _, file = frame.rpartition(" (")
            stack.append(f"{name_file(file.rstrip(')'))}:{function}")
        stacks.append((stack, int(count)))
    return stacks


def profile_table(path: str, turns: int) -> dict[str, dict[str, float]]:
    """From cProfile's stats, per ``file:function``: self ms and calls per turn."""
    with open(path, "rb") as handle:
        stats = marshal.load(handle)
    own: dict[str, float] = {}
    calls: dict[str, float] = {}
    for (file, _line, function), (_cc, nc, tt, _ct, _callers) in stats.items():
        key = f"{name_file(file)}:{function}" if file != "~" else re.sub(r" at 0x\w+", "", function)
        own[key] = own.get(key, 0.0) + tt * 1000 / turns
        calls[key] = calls.get(key, 0.0) + nc / turns
    return {"own": own, "calls": calls}


def _package(frame: str) -> str:
    file = frame.rsplit(":", 1)[0]
    return file.split("/", 1)[0] if "/" in file else file


def attribute(stacks: list[tuple[list[str], int]], ms_per_turn: float) -> dict[str, Any]:
    """Sampled stacks as ms per turn (the samples' shares of ``ms_per_turn``), by the innermost
    gmchat_nb function on the stack (its own time and the library calls it makes; stacks
    without one by the innermost frame's package) and by that function's module."""
    function: dict[str, float] = {}
    module: dict[str, float] = {}
    package: dict[str, float] = {}
    total = sum(count for _, count in stacks) or 1
    for stack, count in stacks:
        ours = [frame for frame in stack if frame.startswith("gmchat_nb/")]
        key = ours[-1] if ours else f"(no gmchat_nb frame) {_package(stack[-1])}"
        share = count / total * ms_per_turn
        function[key] = function.get(key, 0.0) + share
        where = key.rsplit(":", 1)[0] if ours else key
        module[where] = module.get(where, 0.0) + share
        folder = where.rsplit("/", 1)[0] + "/" if ours else key
        package[folder] = package.get(folder, 0.0) + share
    return {"function": function, "module": module, "package": package, "samples": total}


def measure_profiles(
    checkouts: dict[str, Checkout], turns: int, warmup: int, folder: Path, py_spy: str | None
) -> dict[str, Any]:
    """In-process turns in each checkout: unprofiled times, py-spy's stacks, cProfile stats."""
    result: dict[str, Any] = {}
    for name, checkout in checkouts.items():
        out, spied = folder / f"{name}.pstats", folder / f"{name}.spy"
        done = checkout.run(
            {
                "kind": "profile",
                "rounds": rounds(SMALL),
                "question": QUESTION,
                "warmup": warmup,
                "turns": turns,
                "out": str(out),
                "py_spy": spy_command(py_spy) if py_spy else None,
                "spy_out": str(spied),
                "settings": checkout.settings,
            }
        )
        result[name] = {**done, **profile_table(str(out), turns)}
        if py_spy:
            result[name].update(attribute(read_spy(spied), done["cpu_ms"]))
    return result


def sample_servers(
    checkouts: dict[str, Checkout], turns: int, warmup: int, cpu_ms: dict[str, float], py_spy: str
) -> dict[str, Any]:
    """Each checkout's server sampled by py-spy over ``turns`` turns; the samples' shares of
    ``cpu_ms`` (the unsampled CPU per turn)."""
    result: dict[str, Any] = {}
    for name, checkout in checkouts.items():
        with tempfile.TemporaryDirectory() as directory:
            out = Path(directory) / "server.spy"
            with jupyter_server(
                checkout=checkout.path, python=checkout.python, settings=checkout.settings
            ) as (process, port):
                sampled = asyncio.run(_sampled_turns(process.pid, port, turns, warmup, py_spy, out))
            stacks = read_spy(out)
        result[name] = {**attribute(stacks, cpu_ms[name]), "sampled_ms": sampled}
    return result


async def _sampled_turns(
    pid: int, port: int, turns: int, warmup: int, py_spy: str, out: Path
) -> float:
    async with Connection("127.0.0.1", port, AUTH) as conn:
        for _ in range(warmup):
            await post_turn(conn)
        spy = subprocess.Popen(  # noqa: ASYNC220 (starting it does not wait)
            [*spy_command(py_spy), "--pid", str(pid), "--output", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(1.5)  # until it samples
        start = cpu_seconds(pid)
        for _ in range(turns):
            await post_turn(conn)
        await asyncio.sleep(0.2)
        sampled = (cpu_seconds(pid) - start) / turns * 1000
        spy.send_signal(signal.SIGINT)  # it writes its file and exits
        await asyncio.to_thread(spy.wait, 60)
        return sampled


# -- report --------------------------------------------------------------------------------------


def ratio(this: float, base: float) -> str:
    return f"{this / base:.2f}" if base else "n/a"


def verdict(this: float, base: float) -> str:
    return "✅" if base and this / base <= TARGET else "❌"


def print_cpu(results: dict[str, dict[str, list[float]]], rss: dict[str, float], args: Any) -> None:
    this, base = results["this"], results["baseline"]
    alone = {
        name: [t - c for t, c in zip(r["turn"], r["conversation"], strict=True)]
        for name, r in results.items()
    }
    print(
        f"\n## Server CPU per turn\n\n`jupyter server` subprocesses, the small two-tool turn over "
        f"HTTP, one client; {args.rounds} rounds of {args.turns} turns per server after "
        f"{args.warmup} warm-up, blocks alternating; medians of the rounds (min-max)\n"
    )
    print("| measure | this checkout | baseline | this / baseline | target |")
    print("|---|---:|---:|---:|---|")

    def row(label: str, a: list[float], b: list[float], unit: str, target: bool) -> None:
        ma, mb = statistics.median(a), statistics.median(b)

        def spread(values: list[float]) -> str:
            return f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""

        goal = f"<= {TARGET:.2f} {verdict(ma, mb)}" if target else ""
        print(
            f"| {label} | {ma:.2f} {unit}{spread(a)} | {mb:.2f} {unit}{spread(b)} "
            f"| {ratio(ma, mb)} | {goal} |"
        )

    row("server CPU per turn (new conversation + turn)", this["turn"], base["turn"], "ms", True)
    row(
        "of which: creating the conversation",
        this["conversation"],
        base["conversation"],
        "ms",
        False,
    )
    row("server CPU per turn, without the creation", alone["this"], alone["baseline"], "ms", True)
    row("wall time per turn (client side)", this["wall"], base["wall"], "ms", False)
    row("server CPU while idle (background tasks)", this["idle"], base["idle"], "ms/s", False)
    print(f"| server peak RSS | {rss['this']:.0f} MiB | {rss['baseline']:.0f} MiB "
          f"| {ratio(rss['this'], rss['baseline'])} | |")  # fmt: skip


def print_prompts(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    print(
        "\n## Prompt characters of a simple read\n\nThrough each checkout's SDK adapter against "
        "tests/vendor_server.py (the same scripted rounds for both); characters of the HTTP "
        "request bodies as sent, summed over the turn's requests\n"
    )
    print("| read | vendor | requests | this checkout | baseline | this / baseline | target |")
    print("|---|---|---:|---:|---:|---:|---|")
    labels = {"cobalt": f'"{COBALT_QUESTION}"', "small": "small turn (bench/turn.py)"}
    for (read, vendor), entry in results.items():
        this, base = entry["this"], entry["baseline"]
        print(
            f"| {labels[read]} | {vendor} | {this['requests']} / {base['requests']} "
            f"| {this['wire']:,} | {base['wire']:,} | {ratio(this['wire'], base['wire'])} "
            f"| <= {TARGET:.2f} {verdict(this['wire'], base['wire'])} |"
        )
    for vendor in VENDORS:
        entry = results[("cobalt", vendor)]
        this, base = entry["this"]["parts"], entry["baseline"]["parts"]
        print(
            f"\nBreakdown, the cobalt read through {vendor} ({entry['this']['requests']} requests; "
            f"bodies as compact JSON: {entry['this']['compact']:,} / "
            f"{entry['baseline']['compact']:,})\n"
        )
        print("| part (summed over the requests) | this checkout | baseline | difference |")
        print("|---|---:|---:|---:|")
        for key in sorted(set(this) | set(base), key=lambda k: (k.startswith("rest"), k)):
            a, b = this.get(key, 0), base.get(key, 0)
            print(f"| {key} | {a:,} | {b:,} | {a - b:+,} |")
    entry = results[("cobalt", "openai")]
    mine, theirs = sections(entry["this"]["system"]), sections(entry["baseline"]["system"])
    print("\nSystem prompt sections, characters per request (openai)\n")
    print("| section | this checkout | baseline | difference |")
    print("|---|---:|---:|---:|")
    for key in list(dict.fromkeys([*mine, *theirs])):
        a, b = mine.get(key, 0), theirs.get(key, 0)
        print(f"| {key} | {a:,} | {b:,} | {a - b:+,} |")
    added = lines_of(entry["this"]["system"]) - lines_of(entry["baseline"]["system"])
    gone = lines_of(entry["baseline"]["system"]) - lines_of(entry["this"]["system"])
    for label, found in (("added", added), ("removed", gone)):
        for line in sorted(found):
            print(f"- {label} ({len(line)} chars): {line}")


def _top(
    this: dict[str, float], base: dict[str, float], top: int, unit: str = "ms", digits: int = 3
) -> None:
    """The ``top`` largest increases, then the ``top // 3`` largest decreases."""
    names = set(this) | set(base)
    order = sorted(names, key=lambda n: this.get(n, 0.0) - base.get(n, 0.0), reverse=True)
    chosen = order[:top] + [n for n in order[-(top // 3) :][::-1] if n not in order[:top]]
    print(f"| function | this checkout ({unit}) | baseline ({unit}) | difference |")
    print("|---|---:|---:|---:|")
    for name in chosen:
        a, b = this.get(name, 0.0), base.get(name, 0.0)
        if abs(a - b) < 10**-digits:
            continue
        print(f"| {name} | {a:.{digits}f} | {b:.{digits}f} | {a - b:+.{digits}f} |")


def _ours(calls: dict[str, float]) -> dict[str, float]:
    return {
        name: count
        for name, count in calls.items()
        if name.startswith("gmchat_nb/") or "sqlite3" in name or "json" in name
    }


def print_server_samples(samples: dict[str, Any], cpu_ms: dict[str, float], top: int) -> None:
    this, base = samples["this"], samples["baseline"]
    print(
        f"\n## Where the server's CPU goes (py-spy, shares of the CPU per turn above: "
        f"{cpu_ms['this']:.2f} vs {cpu_ms['baseline']:.2f} ms)\n\n"
        f"Each server sampled 1,000 times a second (the thread holding the GIL) over its own block "
        f"of turns ({this['samples']:,} and {base['samples']:,} samples; CPU per turn while "
        f"sampled: {this['sampled_ms']:.2f} vs {base['sampled_ms']:.2f} ms); a sample's time is "
        f"given to the innermost gmchat_nb function on its stack (with the library calls it "
        f"makes).\n"
    )
    print("By package, ms per turn (largest increases first)\n")
    _top(this["package"], base["package"], top)
    print("\nBy module, ms per turn\n")
    _top(this["module"], base["module"], top)
    print("\nBy function, ms per turn\n")
    _top(this["function"], base["function"], top)


def print_profiles(profiles: dict[str, Any], turns: int, top: int) -> None:
    this, base = profiles["this"], profiles["baseline"]
    print(
        f"\n## In-process `Chat.ask`, the small turn, {turns} turns per checkout\n\n"
        f"Unprofiled medians: this checkout {this['wall_ms']:.2f} ms wall / {this['cpu_ms']:.2f} "
        f"ms thread CPU, baseline {base['wall_ms']:.2f} / {base['cpu_ms']:.2f} "
        f"({ratio(this['cpu_ms'], base['cpu_ms'])}x CPU).\n"
    )
    if "module" in this:
        print("py-spy's samples as shares of the unprofiled CPU per turn, by package\n")
        _top(this["package"], base["package"], top)
        print("\nBy module, ms per turn\n")
        _top(this["module"], base["module"], top)
        print("\nBy function (innermost gmchat_nb frame), ms per turn\n")
        _top(this["function"], base["function"], top)
    print("\nUnder cProfile: self time of any function, ms per turn (cProfile inflates calls)\n")
    _top(this["own"], base["own"], top)
    print("\nUnder cProfile: calls per turn (gmchat_nb functions, SQLite and json)\n")
    _top(_ours(this["calls"]), _ours(base["calls"]), top, unit="calls", digits=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument(
        "--baseline-python", required=True, help="the Python of the baseline's venv"
    )
    parser.add_argument(
        "--this",
        type=Path,
        default=HERE,
        help="the checkout measured as 'this' (default: this one; e.g. a worktree of HEAD while "
        "the working tree is mid-edit)",
    )
    parser.add_argument(
        "--this-python", default=sys.executable, help="its Python (default: this one)"
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--turns", type=int, default=200, help="turns per block (200)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of blocks (7)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up turns per server (20)")
    parser.add_argument(
        "--settings", type=json.loads, default={}, help="more chat settings, this checkout only"
    )
    parser.add_argument(
        "--baseline-settings", type=json.loads, default={}, help="more chat settings, baseline"
    )
    parser.add_argument(
        "--rate-limit",
        action="store_true",
        help="both checkouts with request and token budgets that never refuse (every check runs)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="+ where the CPU goes (samples, cProfile)"
    )
    parser.add_argument(
        "--py-spy",
        default=shutil.which("py-spy"),
        help="py-spy, for --profile's stack samples (default: the one on PATH)",
    )
    parser.add_argument("--top", type=int, default=15, help="rows of each profile table")
    parser.add_argument("--no-cpu", action="store_true", help="skip the server CPU measurement")
    args = parser.parse_args()
    if args.quick:
        args.turns, args.rounds, args.warmup = 50, 2, 5
    if args.rate_limit:
        for settings in (args.settings, args.baseline_settings):
            settings.setdefault("rate_limit", LIMITER_ON)
    checkouts = {
        "this": Checkout(args.this, args.this_python, args.settings),
        "baseline": Checkout(args.baseline, args.baseline_python, args.baseline_settings),
    }
    print("# How heavy a simple turn is\n")
    print(f"{describe()} (before)\n")
    for name, checkout in checkouts.items():
        settings = f", settings {checkout.settings}" if checkout.settings else ""
        print(
            f"- {name}: {checkout.commit()}, gmchat_nb from {checkout.imported()}, "
            f"{checkout.python}{settings}"
        )
    prompts = measure_prompts(checkouts)
    cpu_ms: dict[str, float] = {}
    if not args.no_cpu:
        before = load()
        cpu, rss = measure_cpu(checkouts, args.turns, args.rounds, args.warmup)
        after = load()
        print_cpu(cpu, rss, args)
        print(f"\nload average: {before} before, {after} after")
        cpu_ms = {name: statistics.median(cpu[name]["turn"]) for name in checkouts}
    print_prompts(prompts)
    if args.profile:
        turns = 50 if args.quick else 1000
        if not args.py_spy:
            print("\n(py-spy not found: no stack samples; `pip install py-spy` into any venv and "
                  "give --py-spy PATH)")  # fmt: skip
        elif cpu_ms:
            samples = sample_servers(checkouts, turns, args.warmup, cpu_ms, args.py_spy)
            print_server_samples(samples, cpu_ms, args.top)
        with tempfile.TemporaryDirectory() as folder:
            profiles = measure_profiles(checkouts, turns, 20, Path(folder), args.py_spy)
        print_profiles(profiles, turns, args.top)
    print(f"\n{describe()} (after)")


if __name__ == "__main__":
    main()

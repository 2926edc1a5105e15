"""Write transactions per turn: how many times a turn takes the store's writer lock, for this
checkout and (``--baseline PATH``) another commit's worktree, counted in the same run.

Run from the repository root::

    .venv/bin/python bench/transactions.py                          # this checkout
    .venv/bin/python bench/transactions.py --baseline ../main-before

Each checkout's gmchat_nb runs in a subprocess of its own (imported from that checkout) over a
SQLite file store, and every ``BEGIN IMMEDIATE`` its connections send is counted
(``sqlite3``'s trace callback: no code of either checkout is changed or instrumented). The
turns go through ``Chat.ask``, the path the server's routes and the widget share:

* a simple two-tool turn (bench/turn.py's "small": two queries in one provider response, then
  the answer), plain (as ``POST {url}``) and under a client's turn id (durable, as
  ``POST {url}turns/``), each in a fresh conversation made beforehand;
* a 1,000-event answer streamed at once, and over ~5 s (a chunk every 5 ms), under a turn id.

Counts are exact and do not depend on the machine's load; a server adds no write of its own to
these turns.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

COUNT = r"""
import asyncio, json, sqlite3, sys
sys.path.insert(0, sys.argv[1])  # bench/ for its workloads
writes = [0]
_connect = sqlite3.connect
def connect(*args, **kwargs):
    connection = _connect(*args, **kwargs)
    def trace(statement):
        if statement.strip().upper().startswith("BEGIN IMMEDIATE"):
            writes[0] += 1
    connection.set_trace_callback(trace)
    return connection
sqlite3.connect = connect

from turn import WORKLOADS, rounds
from gmchat_nb import Chat
from gmchat_nb.core.providers.base import BaseLLMProvider, DoneEvent, TextChunkEvent, TokenUsage
from gmchat_nb.core.providers.scripted import ScriptedProvider

class Streaming(BaseLLMProvider):
    name = "streaming"
    def __init__(self, pause):
        super().__init__({})
        self.pause = pause
    async def complete(self, messages, tools):
        for number in range(1000):
            if self.pause:
                await asyncio.sleep(self.pause)
            yield TextChunkEvent(f"w{number} ")
        yield DoneEvent(TokenUsage(10, 1000), "stop")

async def count(provider, store, turn_id):
    chat = Chat(project="demo", provider=provider, store=store, rate_limit={"requests": None})
    await chat.session()
    await chat.new_conversation()
    before = writes[0]
    turn = await chat.ask("Which steel parts, and which active projects?", turn_id=turn_id)
    assert turn.error is None, turn.error
    used = writes[0] - before
    await chat.aclose()
    return used

async def main(store):
    small = lambda: ScriptedProvider({"rounds": rounds(WORKLOADS["small"])})
    return {
        "plain": await count(small(), store, None),
        "durable": await count(small(), store, "t-small"),
        "stream_at_once": await count(Streaming(0.0), store, "t-burst"),
        "stream_5s": await count(Streaming(0.005), store, "t-slow"),
    }

print(json.dumps(asyncio.run(main(sys.argv[2]))))
"""

KINDS = {
    "plain": "simple two-tool turn, plain (`POST {url}`)",
    "durable": "simple two-tool turn under a turn id (`POST {url}turns/`)",
    "stream_at_once": "1,000-event answer, streamed at once",
    "stream_5s": "1,000-event answer, streamed over ~5 s",
}


def counts(checkout: Path, store: Path) -> dict[str, int]:
    """The write transactions of each kind of turn, with ``checkout``'s gmchat_nb."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", COUNT, str(HERE / "bench"), str(store)],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, help="another checkout (git worktree add)")
    options = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        mine = counts(HERE, Path(folder) / "this.sqlite3")
        base = counts(options.baseline, Path(folder) / "base.sqlite3") if options.baseline else {}
    print("# Write transactions per turn (SQLite, counted: BEGIN IMMEDIATE)\n")
    header = "| turn | this checkout |" + (" baseline |" if base else "")
    print(header)
    print("|---|---:|" + ("---:|" if base else ""))
    for kind, label in KINDS.items():
        row = f"| {label} | {mine[kind]} |"
        if base:
            row += f" {base[kind]} |"
        print(row)


if __name__ == "__main__":
    main()

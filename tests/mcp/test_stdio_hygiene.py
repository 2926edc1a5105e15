"""``gmchat mcp`` answers every line an agent sends, and never echoes a huge name (issue 38).

The real stdio server process, fed raw lines (what no SDK client would send): a line that is
not JSON is answered ``-32700``; ids that are no string or integer (``true``, ``[1]``, ``{}``,
``null``, ``1.5``) ``-32600`` instead of being read as notifications and dropped; ``1.0`` is
the integer 1 and answered so; a tool's name, a resource URI and a method of ten megabytes are
answered as unknown with the name cut, and the server's log (stderr) stays small. What is
valid passes unchanged: test_stdio.py drives the same server with the SDK's own client.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HUGE = 10 * 1024 * 1024  # ten megabytes of name


def start(stderr: IO[bytes]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gmchat_nb.cli", "mcp", "--project", "demo", "--store", ":memory:"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        cwd=ROOT,
    )


def send(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def replies(process: subprocess.Popen[str], count: int) -> list[dict[str, Any]]:
    """The next ``count`` lines the server writes (answers may come in any order)."""
    assert process.stdout is not None
    return [json.loads(process.stdout.readline()) for _ in range(count)]


def initialize(process: subprocess.Popen[str]) -> None:
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    send(process, json.dumps(hello))
    assert replies(process, 1)[0]["id"] == 0
    send(process, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


@pytest.fixture
def process(tmp_path: Path) -> Any:
    """The server, killed if it stops answering (a hang fails the test, it does not stall)."""
    with (tmp_path / "stderr.log").open("wb") as stderr:
        started = start(stderr)
        watchdog = threading.Timer(120, started.kill)
        watchdog.start()
        try:
            yield started, tmp_path / "stderr.log"
        finally:
            if started.poll() is None:
                assert started.stdin is not None
                started.stdin.close()
                started.wait(timeout=60)
            watchdog.cancel()


def test_lines_that_are_no_message_are_answered_not_dropped(process: Any) -> None:
    server, _ = process
    initialize(server)
    send(server, "this is not JSON")
    (parse_error,) = replies(server, 1)
    assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
    for raw_id in ("true", "[1]", "{}", "null", "1.5"):
        send(server, f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "ping"}}')
        (invalid,) = replies(server, 1)
        assert invalid["id"] is None and invalid["error"]["code"] == -32600, raw_id
    send(server, '{"jsonrpc": "2.0", "method": "ping", "id": 7.0}')
    send(server, "")  # a stray blank line is no message: nothing to answer
    send(server, '{"jsonrpc": "2.0", "id": 8, "method": "ping"}')
    answered = {reply["id"]: reply for reply in replies(server, 2)}
    assert answered == {
        7: {"jsonrpc": "2.0", "id": 7, "result": {}},
        8: {"jsonrpc": "2.0", "id": 8, "result": {}},
    }
    assert server.stdin is not None
    server.stdin.close()
    assert server.wait(timeout=60) == 0


def test_a_ten_megabyte_name_is_answered_cut_and_kept_out_of_the_log(process: Any) -> None:
    server, stderr = process
    initialize(server)
    name = "n" * HUGE
    send(
        server,
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}),
    )
    send(
        server,
        json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": name}}
        ),
    )
    send(server, json.dumps({"jsonrpc": "2.0", "id": 3, "method": name}))
    send(server, json.dumps({"jsonrpc": "2.0", "method": name}))  # a notification: dropped
    send(server, json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}))
    answers = {reply["id"]: reply for reply in replies(server, 4)}
    assert answers[4]["result"] == {}
    tool = answers[1]["result"]  # as any unknown tool: a result the agent reads, isError
    assert tool["isError"] is True and f"{HUGE} characters" in tool["content"][0]["text"]
    assert len(json.dumps(answers[1])) < 400
    for request_id, code in ((2, -32602), (3, -32601)):
        error = answers[request_id]["error"]
        assert error["code"] == code and f"{HUGE} characters" in error["message"]
        assert len(json.dumps(answers[request_id])) < 400
    assert server.stdin is not None
    server.stdin.close()
    assert server.wait(timeout=60) == 0
    assert stderr.stat().st_size < 20_000  # a few log lines, no name in them

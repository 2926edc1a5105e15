"""The `gmchat` console script, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb.core.project import Project

from .conftest import DemoServer, serve


def gmchat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.cli", *args], capture_output=True, text=True, timeout=60
    )


QUERY = {
    "manager": "Part",
    "filters": {"material__name": "Cobalt"},
    "fields": ["name", {"material": ["name"]}],
}


async def test_tool_prints_what_the_model_would_get(inventory: Project) -> None:
    done = gmchat("tool", "query", json.dumps(QUERY))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == await inventory.call_tool("query", QUERY)


async def test_an_error_result_still_exits_zero() -> None:
    done = gmchat("tool", "get_manager_schema", '{"manager": "Prat"}')
    assert done.returncode == 0
    assert json.loads(done.stdout)["code"] == "unknown_manager"


async def test_a_remote_project_with_exposed_and_headers(
    demo_server: DemoServer, inventory: Project
) -> None:
    done = gmchat(
        "tool",
        "query",
        json.dumps(QUERY),
        "--project",
        demo_server.url,
        "--exposed",
        "Material,Supplier,Part,Project,PurchaseOrder",
        "--header",
        "X-Request-Source: test",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == await inventory.call_tool("query", QUERY)


def test_credentials_on_the_command_line(token_server: DemoServer) -> None:
    args = ["tool", "search_managers", '{"query": "parts"}', "--project", token_server.url]
    refused = gmchat(*args)
    assert refused.returncode == 1 and "Authentication required" in refused.stderr
    accepted = gmchat(*args, "--header", "Authorization: Bearer s3cret-token")
    assert accepted.returncode == 0 and json.loads(accepted.stdout)[0]["manager"] == "Part"
    by_cookie = gmchat(*args, "--cookie", "gm_token=s3cret-token")
    assert by_cookie.returncode == 0


def test_allow_mutation_lets_mutate_run() -> None:
    call = '{"mutation": "createPart", "input": {"name": "Spring"}}'
    denied = json.loads(gmchat("tool", "mutate", call).stdout)
    assert denied["code"] == "mutation_not_allowed"
    done = json.loads(gmchat("tool", "mutate", call, "--allow-mutation", "createPart").stdout)
    assert done["status"] == "executed" and done["data"]["Part"]["name"] == "Spring"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tool", "query", "{not json"], "not valid JSON"),
        (["tool", "query", "[1, 2]"], "must be a JSON object"),
        (["tool", "query", "{}", "--header", "no-colon"], "--header takes KEY:VALUE"),
        (["tool", "query", "{}", "--project", "atlantis"], "demo name"),
        (["tool"], "required"),
        (["serve-demo", "--managers", "5"], "--managers applies to --project large"),
        ([], "usage"),
    ],
)
def test_bad_command_lines_exit_two(args: list[str], message: str) -> None:
    done = gmchat(*args)
    assert done.returncode == 2
    assert message in done.stderr + done.stdout


def test_serve_demo_large(inventory: Project) -> None:
    for server in serve("--project", "large", "--managers", "12"):
        done = gmchat("tool", "search_managers", '{"query": "active"}', "--project", server.url)
        hits: list[dict[str, Any]] = json.loads(done.stdout)
        assert len(hits) == 10


def test_ask_answers_with_the_offline_provider() -> None:
    done = gmchat("ask", "Which projects use parts made of cobalt?", "--store", ":memory:")
    assert done.returncode == 0, done.stderr
    answer = done.stdout.strip().splitlines()[-2]
    assert "Apollo" in answer
    assert not any(name in answer for name in ("Mercury", "Gemini", "Artemis", "Voyager", "Orion"))
    assert "→ [1] search_managers" in done.stdout


def test_ask_json_prints_one_event_per_line(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: mutate, args: {mutation: createPart, input: {name: Spring}}}]\n"
        "- text: Not created.\n"
    )
    config = tmp_path / "settings.yaml"
    config.write_text(
        "allowed_mutations: [createPart]\nconfirm_mutations: [createPart]\nstore: ':memory:'\n"
    )
    done = gmchat(
        "ask",
        "Add a part Spring",
        "--provider",
        f"scripted:{script}",
        "--config",
        str(config),
        "--json",
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["type"] for e in events] == [
        "tool_call",
        "confirm_mutation",
        "tool_result",
        "text_chunk",
        "done",
    ]
    # No terminal to confirm on: the mutation is rejected, never run.
    assert events[2]["result"] == {"status": "cancelled", "reason": "user_rejected"}


def test_ask_with_a_bad_setting_exits_two(tmp_path: Path) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("max_result: 5\n")
    done = gmchat("ask", "hi", "--config", str(config))
    assert done.returncode == 2 and "max_results" in done.stderr


def test_cleanup_removes_stale_conversations(tmp_path: Path) -> None:
    from gmchat_nb.core.store import ChatStore

    location = tmp_path / "chat.sqlite3"
    with ChatStore(location) as store:
        store.create_conversation("local:analyst", "old", now=0.0)
        store.create_conversation("local:analyst", "fresh")
    done = gmchat("cleanup", "--store", str(location))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["conversations"] == 1
    with ChatStore(location) as store:
        assert [c.title for c in store.conversations("local:analyst")] == ["fresh"]


def test_ask_pairs_each_result_with_its_call() -> None:
    done = gmchat("ask", "Which projects use parts made of cobalt?", "--store", ":memory:")
    lines = done.stdout.splitlines()
    calls = [line for line in lines if line.startswith("→ [")]
    results = [line for line in lines if line.startswith("← [")]
    assert calls and len(results) == len(calls)
    for call, result in zip(calls, results, strict=True):
        number, name = call.split()[1:3]
        assert result == f"← {number} {name}"


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head` that has already exited
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gmchat_nb.cli",
                "tool",
                "search_managers",
                '{"query": "parts"}',
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141

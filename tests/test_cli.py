"""The `gmchat` console script, run as a real subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.cli import TerminalChat, ask_and_summarize, for_terminal, orchestration_lines
from gmchat_nb.core.events import ConfirmMutation, ToolCall, ToolResult, event_from_dict
from gmchat_nb.core.project import Project
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.terminal import RENDERERS, ask_in_terminal

from .conftest import DemoServer, serve
from .widget.planned import QUESTION as PLANNED_QUESTION
from .widget.planned import PlannedReplay


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


# -- planned (orchestrated) turns: the printing, driven with recorded events ----------------------

PLANNED_DONE: dict[str, Any] = {
    "type": "done",
    "usage": {"input_tokens": 120, "output_tokens": 40},
    "sequence": 9,
    "orchestration": {
        "status": "partial",
        "coverage": {"resolved": 1, "total": 2},
        "unresolved": [{"task_id": "task_2", "reason": "manager_unresolved"}],
        "tasks": [
            {
                "task_id": "task_1",
                "objective": "Parts made of steel",
                "managers": ["Part"],
                "status": "resolved",
                "depends_on": [],
            },
            {
                "task_id": "task_2",
                "objective": "Vehicles",
                "managers": [],
                "status": "blocked",
                "depends_on": [],
                "reason": "manager_unresolved",
            },
        ],
        "calculations": [
            {
                "evidence_id": "task_1:calculation:2",
                "task_id": "task_1",
                "operation": "sum",
                "text": "1234.50 EUR",
                "value": "1234.5",
                "unit": "EUR",
                "inputs": [
                    {
                        "evidence_id": "task_1:query:1",
                        "path": ["data", 0, "unitPrice"],
                        "value": "12.5 EUR",
                    }
                ],
                "input_count": 7,
            }
        ],
        "cited": ["task_1:query:1", "task_1:calculation:2"],
        "requests": {"planner": 1, "executor": 0, "synthesizer": 1},
    },
}


def test_a_planned_turn_is_summed_up_after_its_answer() -> None:
    events = [{"type": "text_chunk", "content": "Steel parts cost 1234.50 EUR."}, PLANNED_DONE]
    assert orchestration_lines(events) == [
        "plan: 2 tasks, 1 resolved (partial)",
        "task_2 unresolved: no matching data found (manager_unresolved)",
        "task_1:calculation:2 sum = 1234.5 EUR (7 inputs)",
    ]
    complete = {
        **PLANNED_DONE["orchestration"],
        "status": "complete",
        "coverage": {"resolved": 1, "total": 1},
        "unresolved": [],
        "calculations": [],
    }
    assert orchestration_lines([{"type": "done", "usage": {}, "orchestration": complete}]) == [
        "plan: 1 task, 1 resolved (complete)"
    ]


def test_turns_without_a_plan_have_no_summary() -> None:
    assert orchestration_lines([]) == []
    assert orchestration_lines([{"type": "done", "usage": {"input_tokens": 1}}]) == []
    assert orchestration_lines([{"type": "error", "code": "chat_error", "message": "x"}]) == []


def test_only_planned_tool_steps_are_renamed_for_the_terminal() -> None:
    call = ToolCall(id="c1", name="query", args={"manager": "Part"})
    result = ToolResult(id="c1", name="query", result={"data": []})
    assert for_terminal(call) is call and for_terminal(result) is result
    planned_call = event_from_dict({**call.to_dict(), "task_id": "task_1"})
    planned_result = event_from_dict(
        {**result.to_dict(), "task_id": "task_1", "evidence_id": "task_1:query:1"}
    )
    renamed_call, renamed_result = for_terminal(planned_call), for_terminal(planned_result)
    assert isinstance(renamed_call, ToolCall) and renamed_call.name == "task_1 query"
    assert isinstance(renamed_result, ToolResult)
    assert renamed_result.name == "task_1 query (task_1:query:1)"


class PlannedTerminalReplay(TerminalChat, PlannedReplay):
    """``gmchat ask``'s chat playing the recorded planned turn of the widget tests."""


async def test_gmchat_ask_prints_a_planned_turn_with_its_tasks_and_plan() -> None:
    chat = PlannedTerminalReplay()
    out = io.StringIO()
    try:
        status = await ask_and_summarize(chat, PLANNED_QUESTION, out=out)
    finally:
        await chat.aclose()
    lines = out.getvalue().splitlines()
    assert status == 0
    assert lines[0].startswith('→ [1] task_1 query {"manager": "Part", ')
    assert lines[1] == "← [1] task_1 query (task_1:query:1)"
    assert lines[-4:] == [
        "plan: 3 tasks, 1 resolved (partial)",
        "task_2 unresolved: no matching data found (manager_unresolved)",
        "task_3 unresolved: a task it depends on failed (dependency_blocked)",
        "task_1:calculation:2 sum = 117.25 EUR (5 inputs)",
    ]
    # The turn's record keeps the events as they were reported.
    assert chat.turns[-1].events[0]["name"] == "query"


SCRIPT = {
    "rounds": [
        {"chunks": ["Looking. "], "tool_calls": [{"name": "query", "args": QUERY}]},
        {"text": "Gear is made of cobalt."},
    ]
}


async def printed(chat: Chat, ask: Callable[..., Awaitable[int]]) -> str:
    out = io.StringIO()
    try:
        await ask(chat, "Which parts are cobalt?", out=out)
    finally:
        await chat.aclose()
    return out.getvalue()


async def test_a_turn_without_a_plan_prints_exactly_as_before() -> None:
    before = await printed(
        Chat(provider=ScriptedProvider(SCRIPT), store=":memory:"), ask_in_terminal
    )
    now = await printed(
        TerminalChat(provider=ScriptedProvider(SCRIPT), store=":memory:"), ask_and_summarize
    )
    assert now == before
    assert "→ [1] query {" in now and "← [1] query\n" in now and "plan:" not in now


def test_the_terminal_shows_a_change_as_it_is_stored() -> None:
    """A bidi override in a change's input is written out and warned of, never rendered."""
    out = io.StringIO()
    event = ConfirmMutation(
        id="c1", mutation="createPart", input={"name": "invoice\u202efdp.exe"}, sequence=1
    )
    RENDERERS[event.type](event, out, {})
    shown = out.getvalue()
    assert (
        'createPart {"name": "invoice\u27e8U+202E\u27e9fdp.exe"} needs your confirmation' in shown
    )
    assert "\u202e" not in shown and "display differently from what is stored" in shown

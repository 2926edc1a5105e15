"""The eval command line and its reports as a user meets them: real subprocesses, the real demo
project (in process and served over HTTP), scripted providers instead of models."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import CaseResult, compare, run
from gmchat_nb.evals.diagnostics import diagnose
from gmchat_nb.evals.report import trace_record
from tests.conftest import DemoServer

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.evals.test_cli_report"

STEEL = {
    "name": "steel_parts",
    "conversation": [{"user": "Which parts are made of steel?"}],
    "expectations": {"answer_contains": ["Bolt"]},
}


class NotedProvider(BaseLLMProvider):
    """A canned stand-in that says so in its ``description``."""

    name: ClassVar[str] = "canned"
    description: ClassVar[str] = "canned answers, not a real model"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        yield TextChunkEvent("Bolt.")
        yield DoneEvent()


class MoodyProvider(BaseLLMProvider):
    """Answers "Bolt." but breaks (not a provider error: the chat itself fails) on "explode"."""

    name: ClassVar[str] = "moody"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        if "explode" in messages[-1].content:
            raise RuntimeError("exploded as asked")
        yield TextChunkEvent("Bolt.")
        yield DoneEvent()


def cli(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=dict(env) if env is not None else None,
    )


def dataset(tmp_path: Path, *cases: Mapping[str, Any], name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(list(cases)))
    return path


def script(tmp_path: Path, rounds: list[dict[str, Any]]) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(rounds))
    return path


# -- progress --------------------------------------------------------------------------------


def test_on_result_is_called_once_per_case_and_provider() -> None:
    seen: list[CaseResult] = []
    cases = [STEEL, {**STEEL, "name": "steel_again"}]
    results = compare(["offline", NotedProvider()], cases, on_result=seen.append)
    assert len(seen) == 4
    assert sorted(map(id, seen)) == sorted(map(id, results.results))
    single: list[CaseResult] = []
    run(cases, provider="offline", on_result=single.append, concurrency=1)
    assert [r.case.name for r in single] == ["steel_parts", "steel_again"]


def test_progress_bar_on_a_terminal_goes_to_stderr_and_never_to_stdout(tmp_path: Path) -> None:
    path = dataset(tmp_path, STEEL, {**STEEL, "name": "steel_again"})
    master, slave = pty.openpty()
    # a terminal 100 columns wide (a fresh pty has no size, and tqdm draws nothing in 0 columns)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "gmchat_nb.evals", "--dataset", str(path)],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )
    os.close(slave)
    terminal = b""
    try:
        while select.select([master], [], [], 60)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed its end of the terminal
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        os.close(master)
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    assert process.wait(timeout=60) == 0
    text = terminal.decode(errors="replace")
    assert "eval" in text and "0/2" in text and "2/2" in text, text
    assert stdout.startswith("Dimension")
    assert "\r" not in stdout and "/2" not in stdout and "case/s" not in stdout


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    done = cli("--dataset", str(dataset(tmp_path, STEEL)))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "\r" not in done.stdout and "1/1" not in done.stdout


# -- HTML report -----------------------------------------------------------------------------

ALUMINUM_QUERY = {
    "name": "query",
    "args": {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Aluminum"}},
}


def test_report_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    answer = "<script>alert('x')</script> Bearing."
    rounds = [
        {"tool_calls": [ALUMINUM_QUERY], "usage": {"input_tokens": 7, "output_tokens": 2}},
        {"text": answer, "usage": {"input_tokens": 11, "output_tokens": 5}},
    ]
    evil = "evil_<script>document.cookie</script>"
    path = dataset(
        tmp_path,
        {
            "name": "aluminum_parts",
            "conversation": [{"user": "Aluminum parts?"}],
            "expectations": {"results_contain": ["Bearing"], "answer_contains": ["Bearing"]},
        },
        {
            "name": evil,
            "description": "a <b>bold</b> description",
            "conversation": [{"user": "Steel parts?"}],
            "expectations": {"answer_contains": ["Bolt"]},
        },
    )
    report = tmp_path / "report.html"
    done = cli(
        "--dataset",
        str(path),
        "--provider",
        f"scripted:{script(tmp_path, rounds)}",
        "--report-html",
        str(report),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "<b>" not in page
    assert "evil_&lt;script&gt;document.cookie&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Bearing." in page
    assert "a &lt;b&gt;bold&lt;/b&gt; description" in page
    # self-contained: nothing loaded from elsewhere
    assert "src=" not in page and "<link" not in page and "href=" not in page
    # summary, per-case table (status, requests, tokens), failures with reasons
    assert "<th>Overall</th>" in page and "1 PASS, 1 FAIL, 0 UNSCORED" in page
    assert '<td>aluminum_parts</td><td><span class="pass">PASS</span></td>' in page
    assert '<td class="num">2</td><td class="num">25</td>' in page  # requests, tokens
    assert "Seconds" in page
    assert "<h2>Failures</h2>" in page
    assert "answer score: 0% (missing [&#x27;Bolt&#x27;])" in page
    assert "prompt/answer_quality" in page


def test_html_without_timings_is_the_same_on_every_run() -> None:
    first = run([STEEL], provider="offline").html(timings=False)
    second = run([STEEL], provider="offline").html(timings=False)
    assert first == second and "Seconds" not in first


# -- GraphQL URL targets and --exposed -------------------------------------------------------


PROJECT_CASES = (
    {
        "name": "steel_parts",
        "conversation": [{"user": "Which parts are made of steel?"}],
        "expectations": {
            "tool_calls": [{"name": "query", "args_contain": {"manager": "PartManager"}}],
            "results_contain": ["Bolt"],
            "answer_contains": ["Bolt"],
        },
    },
    {
        # with only Part and Material exposed, projects are out of the chat's sight
        "name": "projects_stay_hidden",
        "conversation": [{"user": "Which projects use parts made of cobalt?"}],
        "expectations": {"answer_excludes": ["Apollo"]},
    },
)


def searched_managers(trace: Path) -> set[str]:
    names: set[str] = set()
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        for call, result in zip(record["tool_calls"], record["tool_results"], strict=True):
            if call["name"] == "search_managers":
                names.update(hit["manager"] for hit in result)
    return names


def test_graphql_url_target_restricted_by_exposed(tmp_path: Path, demo_server: DemoServer) -> None:
    assert demo_server.url.startswith("http://127.0.0.1:")
    path = dataset(tmp_path, *PROJECT_CASES)
    trace = tmp_path / "exposed.jsonl"
    done = cli(
        "--dataset",
        str(path),
        "--project",
        demo_server.url,
        "--exposed",
        "Part,Material",
        "--trace-jsonl",
        str(trace),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Outcomes: 2 PASS, 0 FAIL, 0 UNSCORED" in done.stdout
    assert searched_managers(trace) == {"Part", "Material"}

    # the same server without --exposed: every manager is visible, so the hidden case fails
    everything = tmp_path / "all.jsonl"
    open_run = cli(
        "--dataset", str(path), "--project", demo_server.url, "--trace-jsonl", str(everything)
    )
    assert open_run.returncode == 1, open_run.stdout + open_run.stderr
    assert "Outcomes: 1 PASS, 1 FAIL, 0 UNSCORED" in open_run.stdout
    assert "Project" in searched_managers(everything)


def test_bad_project_targets_stop_before_any_case(tmp_path: Path, demo_server: DemoServer) -> None:
    path = dataset(tmp_path, *PROJECT_CASES)
    unknown = cli("--dataset", str(path), "--project", demo_server.url, "--exposed", "Part,Nope")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "'Nope'" in unknown.stderr
    assert "Unclosed" not in unknown.stderr  # the refused connection's HTTP session was closed
    unreachable = cli("--dataset", str(path), "--project", "http://127.0.0.1:9/graphql")
    assert unreachable.returncode == 2 and unreachable.stdout == ""
    assert "127.0.0.1:9" in unreachable.stderr
    without_project = cli("--dataset", str(path), "--exposed", "Part")
    assert without_project.returncode == 2 and "--project" in without_project.stderr


# -- diagnostics -----------------------------------------------------------------------------

ALUMINUM_SCRIPT = [
    {"tool_calls": [ALUMINUM_QUERY]},
    {"text": "Only Bearing."},
]


def aluminum_case(name: str, expectations: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "conversation": [{"user": "steel parts?"}], "expectations": expectations}


DIAGNOSED_CASES = (
    aluminum_case(
        "skips_material_query",
        {
            "contract": {
                "hard": {
                    "required_tool_calls": [
                        {"name": "query", "args_contain": {"manager": "MaterialManager"}}
                    ]
                }
            }
        },
    ),
    aluminum_case("uses_forbidden_query", {"contract": {"hard": {"forbidden_tools": ["query"]}}}),
    aluminum_case("wrong_rows", {"results_contain": ["Bolt"]}),
    aluminum_case("answer_misses_bolt", {"answer_contains": ["Bolt"]}),
    aluminum_case(
        "deviates_but_passes",
        {
            "contract": {
                "hard": {"results_contain": ["Bearing"]},
                "strategy": {"recommended_tool_calls": [{"name": "search_managers"}]},
            }
        },
    ),
)


def test_diagnostics_and_next_actions_in_gm_layout(tmp_path: Path) -> None:
    path = dataset(tmp_path, *DIAGNOSED_CASES)
    provider = f"scripted:{script(tmp_path, ALUMINUM_SCRIPT)}"
    trace = tmp_path / "trace.jsonl"
    quiet = cli("--dataset", str(path), "--provider", provider, "--trace-jsonl", str(trace))
    assert quiet.returncode == 1
    diagnostics = [
        "Diagnostics:",
        "  prompt: answer_quality=1, missing_required_tool=1, strategy_deviation=1",
        "  tool_schema: wrong_query_result=1",
        "  runtime: forbidden_tool=1",
    ]
    lines = quiet.stdout.splitlines()
    start = lines.index("Diagnostics:")
    assert lines[start : start + 4] == diagnostics, quiet.stdout + quiet.stderr
    assert lines[start - 1] == ""
    assert "Next actions:" not in quiet.stdout

    verbose = cli("--dataset", str(path), "--provider", provider, "-v")
    lines = verbose.stdout.splitlines()
    start = lines.index("Diagnostics:")
    assert lines[start - 1].startswith("    ")  # right under Failures, as GeneralManager prints
    actions = lines[lines.index("Next actions:") + 1 :]
    assert [line.split("]")[0] for line in actions] == [
        "  skips_material_query: [prompt/missing_required_tool",
        "  uses_forbidden_query: [runtime/forbidden_tool",
        "  wrong_rows: [tool_schema/wrong_query_result",
        "  answer_misses_bolt: [prompt/answer_quality",
        "  deviates_but_passes: [prompt/strategy_deviation",
    ]
    assert "(Required tool call missing: query(manager=MaterialManager))" in actions[0]

    records = {r["case"]: r for r in map(json.loads, trace.read_text().splitlines())}
    assert records["wrong_rows"]["failure_category"] == "wrong_query_result"
    assert records["wrong_rows"]["failure_owner"] == "tool_schema"
    assert records["uses_forbidden_query"]["failure_category"] == "forbidden_tool"
    assert records["deviates_but_passes"]["status"] == "pass"
    assert records["deviates_but_passes"]["failure_category"] is None


def test_provider_guardrail_and_unscored_diagnoses(tmp_path: Path) -> None:
    failing = run([STEEL], provider=ScriptedProvider({"rounds": [{"error": "HTTP 500"}]}))
    (result,) = failing.results
    assert result.status == "fail" and result.error == "provider_failed"
    assert diagnose(result)[0].key == "provider/provider_error"
    assert trace_record(result)["failure_category"] == "provider_error"
    assert "  provider: provider_error=1" in failing.report()

    looping = [
        {"tool_calls": [{"name": "search_managers", "args": {"query": f"q{n}"}}]} for n in range(40)
    ]
    endless = ScriptedProvider({"rounds": looping})
    (result,) = run([STEEL], provider=endless).results
    # the loop guard's budget ends the loop before the spec's round cap, with an answer
    assert result.error is None and result.turns[0].stopped_by == "budget_model_requests"
    # a turn the cap itself ended (the loop guard switched off) is the harness's to explain
    capped = dataclasses.replace(result, status="fail", error="turn_limit")
    assert diagnose(capped)[0].key == "harness/turn_request_budget_exhausted"

    missing = run([STEEL], provider=f"scripted:{tmp_path / 'no-such-script.yaml'}")
    (result,) = missing.results
    assert result.status == "unscored"
    assert diagnose(result)[0].key == "provider/provider_error"
    assert "no-such-script.yaml" in (diagnose(result)[0].detail or "")
    assert missing.cases.loc[0, "failure_category"] == "provider/provider_error"


def test_a_clean_pass_has_no_diagnostics() -> None:
    results = run([STEEL], provider="offline")
    assert results.results[0].status == "pass"
    assert diagnose(results.results[0]) == []
    assert "Diagnostics:" not in results.report(verbose=True)


# -- provider notes --------------------------------------------------------------------------


def test_provider_notes_in_every_report(tmp_path: Path) -> None:
    single = run([STEEL], provider=NotedProvider)
    (result,) = single.results
    assert result.provider == "canned" and result.status == "pass"  # the provider's own label
    assert result.provider_note == "canned answers, not a real model"
    legend = "Providers:\n  canned: canned answers, not a real model"
    assert legend in single.report()
    assert trace_record(result)["provider_note"] == "canned answers, not a real model"
    assert single.cases.loc[0, "provider_note"] == "canned answers, not a real model"

    both = compare(["offline", NotedProvider], [STEEL])
    text = both.report()
    assert legend in text and "  offline:" not in text
    assert both.providers == ["offline", "canned"]
    assert "canned: canned answers, not a real model" in both.html()

    plain = run([STEEL], provider="offline")
    assert "Providers:" not in plain.report() and "Providers:" not in plain.html()


def test_provider_note_reaches_the_cli_report(tmp_path: Path) -> None:
    done = cli("--dataset", str(dataset(tmp_path, STEEL)), "--provider", f"{MODULE}.NotedProvider")
    assert done.returncode == 0, done.stderr
    assert "Providers:\n  canned: canned answers, not a real model" in done.stdout


# -- unscored runs and exit statuses ---------------------------------------------------------


def test_a_run_that_scores_nothing_exits_one(tmp_path: Path) -> None:
    exploding = {**STEEL, "name": "explodes", "conversation": [{"user": "explode, please"}]}
    done = cli(
        "--dataset", str(dataset(tmp_path, exploding)), "--provider", f"{MODULE}.MoodyProvider"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Outcomes: 0 PASS, 0 FAIL, 1 UNSCORED" in done.stdout
    assert "error: no case could be scored" in done.stderr
    assert "  runtime: chat_error=1" in done.stdout


def test_some_unscored_and_the_rest_passing_exits_zero(tmp_path: Path) -> None:
    exploding = {**STEEL, "name": "explodes", "conversation": [{"user": "explode, please"}]}
    path = dataset(tmp_path, STEEL, exploding)
    done = cli("--dataset", str(path), "--provider", f"{MODULE}.MoodyProvider")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Outcomes: 1 PASS, 0 FAIL, 1 UNSCORED" in done.stdout
    # the unscored case counts in no dimension
    assert "Answer quality           1      1     100%" in done.stdout
    assert "warning: 1 of 2 cases were unscored" in done.stderr
    compared = cli(
        "--dataset", str(path), "--compare", f"{MODULE}.NotedProvider,{MODULE}.MoodyProvider"
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
    unscored_row = next(
        line for line in compared.stdout.splitlines() if line.startswith("Unscored")
    )
    assert unscored_row.split() == ["Unscored", "0", "1"]


def test_openai_without_credentials_stops_before_any_case(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = cli("--dataset", str(dataset(tmp_path, STEEL)), "--provider", "openai:x", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert "cannot use the provider 'openai:x'" in done.stderr
    assert "OPENAI_API_KEY" in done.stderr  # the SDK's own advice reaches the user


def test_an_unreachable_model_server_scores_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env |= {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"}  # nothing listens
    done = cli("--dataset", str(dataset(tmp_path, STEEL)), "--provider", "openai:x", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Outcomes: 0 PASS, 1 FAIL" in done.stdout
    assert "  provider: provider_error=1" in done.stdout


def test_unconstructible_provider_exits_two_before_running(tmp_path: Path) -> None:
    path = dataset(tmp_path, STEEL)
    done = cli("--dataset", str(path), "--provider", "nosuch")
    assert done.returncode == 2 and done.stdout == ""
    assert "'nosuch'" in done.stderr
    compared = cli("--dataset", str(path), "--compare", "offline,no.such.Provider")
    assert compared.returncode == 2 and "'no.such.Provider'" in compared.stderr
    missing_dir = tmp_path / "missing" / "report.html"
    unwritable = cli("--dataset", str(path), "--report-html", str(missing_dir))
    assert unwritable.returncode == 2 and str(missing_dir) in unwritable.stderr


def test_help_needs_no_configuration(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    done = cli("--help", env=env, cwd=tmp_path)
    assert done.returncode == 0
    assert "--report-html" in done.stdout and "--exposed" in done.stdout
    assert "--provider-config KEY=VALUE" in done.stdout and "max_tokens=256" in done.stdout


# -- deterministic text for notebooks --------------------------------------------------------


def test_report_without_timings_is_deterministic() -> None:
    cases = [STEEL, {**STEEL, "name": "wrong", "expectations": {"answer_contains": ["Gear"]}}]
    first, second = run(cases, provider="offline"), run(cases, provider="offline")
    assert "Seconds" in first.report()
    text = first.report(verbose=True, timings=False)
    assert "Seconds" not in text
    assert text == second.report(verbose=True, timings=False)
    assert repr(first) == first.report(timings=False)


def test_compare_honours_verbose() -> None:
    args = (
        "--dataset",
        "edge_cases",
        "--compare",
        "offline,replay:evals/cassettes/oracle-openai.jsonl",
    )
    quiet = cli(*args)
    loud = cli(*args, "-v")
    assert "Failures of offline:" not in quiet.stdout
    assert "Failures of offline:" in loud.stdout, loud.stdout + loud.stderr
    assert "Next actions:" in loud.stdout
    assert "Failures of openai:oracle:" not in loud.stdout  # the oracle passes every case


# -- a provider that never calls a tool ------------------------------------------------------

NEEDS_MATERIAL_QUERY = aluminum_case(
    "needs_material_query",
    {
        "contract": {
            "hard": {
                "required_tool_calls": [
                    {"name": "query", "args_contain": {"manager": "MaterialManager"}}
                ]
            }
        }
    },
)


def test_a_provider_that_never_calls_a_tool_is_diagnosed_not_the_prompt(tmp_path: Path) -> None:
    # a local server that drops the tools from the request: the model only ever writes text
    text_only = f"scripted:{script(tmp_path, [{'text': 'Steel parts are strong.'}])}"
    path = dataset(tmp_path, NEEDS_MATERIAL_QUERY)
    done = cli("--dataset", str(path), "--provider", text_only, "-v")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  provider: no_tool_calls=1" in done.stdout
    assert "prompt:" not in done.stdout
    (action,) = done.stdout.split("Next actions:\n")[1].splitlines()
    assert action.startswith("  needs_material_query: [provider/no_tool_calls] The provider ")
    assert "the server may not be passing the tools to the model" in action
    assert "gmchat doctor --provider" in action and "tool_choice" in action and "stream" in action
    assert "(no tool call in 1 request that offered tools)" in action

    (result,) = run([NEEDS_MATERIAL_QUERY], provider=f"{text_only}").results
    assert result.turns[0].tool_offers == 1 and result.turns[0].provider_tool_calls == 0
    assert diagnose(result)[0].key == "provider/no_tool_calls"
    assert trace_record(result)["failure_owner"] == "provider"


def test_calling_some_tools_but_not_the_required_one_still_blames_the_prompt(
    tmp_path: Path,
) -> None:
    rounds = [
        {"tool_calls": [{"name": "search_managers", "args": {"query": "material"}}]},
        {"text": "Steel parts are strong."},
    ]
    (result,) = run([NEEDS_MATERIAL_QUERY], provider=ScriptedProvider({"rounds": rounds})).results
    assert result.status == "fail"
    assert diagnose(result)[0].key == "prompt/missing_required_tool"
    assert "provider/no_tool_calls" not in [d.key for d in diagnose(result)]


def test_a_text_answer_to_a_case_that_needs_no_tool_is_not_the_providers_fault() -> None:
    wrong = ScriptedProvider({"rounds": [{"text": "Gear."}]})
    (result,) = run([STEEL], provider=wrong).results  # expects an answer, no tool or rows
    assert result.status == "fail"
    assert [d.key for d in diagnose(result)] == ["prompt/answer_quality"]


# -- --provider-config -----------------------------------------------------------------------


class ConfiguredProvider(BaseLLMProvider):
    """Answers "Bolt." followed by its own provider_config as JSON, for the trace to show."""

    name: ClassVar[str] = "configured"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        yield TextChunkEvent("Bolt. " + json.dumps(dict(self.provider_config), sort_keys=True))
        yield DoneEvent()


def answers(trace: Path) -> list[dict[str, Any]]:
    # the JSON that follows "Bolt. " (the number gate footnotes the config's numbers, which no
    # data gives)
    decode = json.JSONDecoder().raw_decode
    return [decode(json.loads(line)["answer"][len("Bolt. ") :])[0] for line in trace.open()]


def test_provider_config_reaches_every_provider_parsed_as_json(tmp_path: Path) -> None:
    path = dataset(tmp_path, STEEL)
    trace = tmp_path / "trace.jsonl"
    settings = [
        "max_tokens=256",
        "base_url=http://127.0.0.1:8080/v1",  # not JSON: taken as the string
        "stream=false",
        'stop=["\\n"]',
        "seed=null",
        "temperature=0.5",
        "max_tokens=512",  # the last of a key wins
    ]
    options = [item for setting in settings for item in ("--provider-config", setting)]
    provider = f"{MODULE}.ConfiguredProvider"
    done = cli(
        "--dataset", str(path), "--provider", provider, *options, "--trace-jsonl", str(trace)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    expected = {
        "base_url": "http://127.0.0.1:8080/v1",
        "max_tokens": 512,
        "seed": None,
        "stop": ["\n"],
        "stream": False,
        "temperature": 0.5,
    }
    assert answers(trace) == [expected]

    compared = cli(
        "--dataset",
        str(path),
        "--compare",
        f"{provider},{provider}",
        "--provider-config",
        "max_tokens=256",
        "--model",
        "m1",
        "--provider-config",
        "model=m2",  # --model wins
        "--trace-jsonl",
        str(trace),
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert answers(trace) == [{"max_tokens": 256, "model": "m1"}] * 2


def test_a_malformed_provider_config_is_a_usage_error(tmp_path: Path) -> None:
    path = dataset(tmp_path, STEEL)
    for bad in ("max_tokens", "=256", " =256"):
        done = cli("--dataset", str(path), "--provider-config", bad)
        assert done.returncode == 2, (bad, done.stdout, done.stderr)
        assert done.stdout == ""
        assert f"--provider-config takes KEY=VALUE, got {bad!r}" in done.stderr


def test_a_provider_config_value_the_provider_rejects_stops_before_any_case(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "k"}
    args = ("--dataset", str(dataset(tmp_path, STEEL)), "--provider", "openai:x")
    done = cli(*args, "--provider-config", "max_tokens=many", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert "max_tokens must be a positive number, got 'many'" in done.stderr

"""Recording a provider with the eval CLI and replaying it; a case's trajectory table."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gmchat_nb.evals import run, select_cases
from gmchat_nb.evals.trajectory import summarise_result
from tests.vendor_server import Reply, ToolCallSpec, VendorServer

ROOT = Path(__file__).resolve().parents[2]
LIST_MATERIALS = next(c for c in select_cases("basic_queries") if c.name == "list_materials")
ANSWER = "We have Steel, Aluminum, Cobalt, Titanium, Copper, Brass, Nylon and Lead."


async def evals_cli(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    """The CLI as a subprocess, awaited so that this loop keeps serving the vendor server."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gmchat_nb.evals",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    return int(process.returncode or 0), out.decode(), err.decode()


@pytest.fixture
def one_case(tmp_path: Path) -> Path:
    path = tmp_path / "one.yaml"
    cases = yaml.safe_load((ROOT / "evals" / "basic_queries.yaml").read_text())
    path.write_text(yaml.safe_dump([c for c in cases if c["name"] == "list_materials"]))
    return path


async def test_record_to_writes_a_cassette_that_replays_without_the_model(
    tmp_path: Path, one_case: Path
) -> None:
    cassette = tmp_path / "cassettes" / "gpt-test.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    async with VendorServer() as server:
        server.script(
            "openai",
            [
                Reply(
                    tool_calls=[ToolCallSpec("query", {"manager": "Material", "fields": ["name"]})]
                ),
                Reply(text=[ANSWER[:20], ANSWER[20:]], usage=(900, 20)),
            ],
        )
        env |= {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "test-key"}
        status, out, err = await evals_cli(
            "--provider", "openai:gpt-test", "--dataset", str(one_case),
            "--record-to", str(cassette), env=env,
        )  # fmt: skip
        assert (status, err) == (0, ""), out
        assert server.remaining("openai") == 0
    assert "openai:gpt-test" in out
    header = json.loads(cassette.read_text().splitlines()[0])["cassette"]
    assert header == {"label": "openai:gpt-test", "description": "recorded from openai:gpt-test"}
    assert "test-key" not in cassette.read_text()  # credentials never reach a cassette

    # the model is gone: the replay answers exactly as it did, under the recorded label
    status, replayed, err = await evals_cli(
        "--provider", f"replay:{cassette}", "--dataset", str(one_case), env=env
    )  # fmt: skip
    assert status == 0, replayed + err
    assert "Overall                  1      1     100%" in replayed
    assert "openai:gpt-test: recorded from openai:gpt-test" in replayed


def test_record_to_records_one_provider_only(one_case: Path, tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", "--compare", "offline,offline",
         "--dataset", str(one_case), "--record-to", str(tmp_path / "c.jsonl")],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--record-to records one provider" in done.stderr


def test_a_failing_case_reads_as_a_trajectory() -> None:
    results = run([LIST_MATERIALS], "offline")
    steps = results.trajectory("list_materials")
    assert steps.iloc[0].to_dict() == {
        "turn": 1,
        "step": "user",
        "tool": "",
        "detail": "Which materials do we have?",
    }
    query = steps[(steps.step == "result") & (steps.tool == "query")].iloc[-1]
    assert query.detail.startswith("8 of 8 rows: ")
    assert "Lead" in query.detail
    assert steps.iloc[-1].step == "answer" and "Steel" in steps.iloc[-1].detail
    assert list(steps.step).count("call") == list(steps.step).count("result")
    with pytest.raises(KeyError, match="no result for case 'nope'"):
        results.trajectory("nope")


def test_tool_results_are_summarised_in_one_line() -> None:
    error = {"status": "error", "code": "unknown_manager", "message": "No manager 'Vehicle'."}
    assert summarise_result(error) == "error unknown_manager: No manager 'Vehicle'."
    partial = {"data": [{"name": "Bolt"}], "total_count": 40, "complete": False}
    assert summarise_result(partial) == '1 of 40 rows, incomplete: [{"name":"Bolt"}]'
    long = summarise_result({"data": [{"name": "x" * 500}], "total_count": 1})
    assert len(long) == 160 and long.endswith("…")


async def test_the_synchronous_api_works_where_a_loop_runs() -> None:
    """In a notebook cell a loop is running: ``evals.run`` still works (on its own loop)."""
    results = run([LIST_MATERIALS], "offline")
    assert [r.status for r in results.results] == ["pass"]


def test_traces_carry_gm_selection_manifest(tmp_path: Path) -> None:
    """Every record names the run's exact selection (GeneralManager's ``run`` block)."""
    cases = select_cases("basic_queries")[:3]
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run(cases, "offline").write_trace(first)
    run(cases, "offline").write_trace(second)
    records = [json.loads(line) for line in first.read_text().splitlines()]
    blocks = {json.dumps(r["run"], sort_keys=True) for r in records}
    assert len(records) == 3 and len(blocks) == 1
    block = records[0]["run"]
    assert block["datasets"] == ["basic_queries"]
    manifest = block["selection_manifest"]
    assert manifest["version"] == "chat-eval-selection/1"
    assert [c["name"] for c in manifest["cases"]] == [c.name for c in cases]
    assert json.loads(second.read_text().splitlines()[0])["run"] == block  # same selection
    assert manifest["cases"][0]["case_hash"] == cases[0].case_hash
    assert replace(cases[0], tier=cases[0].tier + 1).case_hash != cases[0].case_hash

"""The committed cassettes: labelled as a scripted oracle, and they reproduce exactly.

They were recorded by ``scripts/record_cassettes.py`` through the real OpenAI and Anthropic
adapters against ``tests/vendor_server.py``; a change to the prompt, tools, data or oracle that
alters any request makes these tests fail until the cassettes are recorded again.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from gmchat_nb.evals import compare_async, select_cases
from gmchat_nb.evals.runner import run_cases

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = sorted((ROOT / "evals" / "cassettes").glob("oracle-*.jsonl"))


def recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "record_cassettes", ROOT / "scripts" / "record_cassettes.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_is_a_cassette_per_recorded_vendor() -> None:
    assert [p.name for p in CASSETTES] == ["oracle-anthropic.jsonl", "oracle-openai.jsonl"]


@pytest.mark.parametrize("cassette", CASSETTES, ids=lambda p: p.stem)
def test_every_cassette_says_it_is_not_a_real_model(cassette: Path) -> None:
    header = json.loads(cassette.read_text().splitlines()[0])["cassette"]
    vendor = cassette.stem.removeprefix("oracle-")
    assert header["label"] == f"{vendor}:oracle"
    assert "scripted oracle" in header["description"]
    assert header["description"].endswith("not a real model")


@pytest.mark.parametrize("cassette", CASSETTES, ids=lambda p: p.stem)
async def test_every_case_replays_exactly_from_the_committed_cassette(cassette: Path) -> None:
    oracle = recorder().load_oracle()
    results = (await compare_async([f"replay:{cassette}"], concurrency=8)).results
    assert {r.provider for r in results} == {cassette.stem.replace("oracle-", "") + ":oracle"}
    problems = [(r.case.name, r.status, r.reasons) for r in results if r.status != "pass"]
    assert not problems  # a hash mismatch would be provider_failed here
    for result in results:  # and the answers are the oracle's, as streamed through the adapter
        finals = [r["text"] for r in oracle[result.case.name] if r.get("text")]
        assert [t.answer for t in result.turns] == finals


async def test_recording_again_writes_the_same_lines(tmp_path: Path) -> None:
    """Recording is deterministic, so a re-recorded case matches the committed cassette."""
    module = recorder()
    wanted = {"list_materials", "copper_parts_then_low_stock"}  # one- and two-turn
    cases = [c for c in select_cases() if c.name in wanted]
    out = tmp_path / "oracle-openai.jsonl"
    results = await module.record("openai", cases, module.load_oracle(), out)
    assert [r.status for r in results] == ["pass", "pass"]
    committed = set((ROOT / "evals" / "cassettes" / "oracle-openai.jsonl").read_text().splitlines())
    lines = out.read_text().splitlines()
    assert len(lines) > 3 and set(lines) <= committed
    replayed = await run_cases(cases, [f"replay:{out}"])
    assert [r.answer for r in replayed] == [r.answer for r in results]

"""Record the committed eval cassettes: a scripted oracle model, through the real SDK adapters.

    .venv/bin/python scripts/record_cassettes.py [--vendor openai --vendor anthropic] [--check]

There is no hosted model on CI machines, so the cassettes in ``evals/cassettes/`` are recorded
here: ``tests/vendor_server.py`` speaks each vendor's wire format and plays the oracle's rounds
(``evals/oracle/oracle.yaml``: what a careful model would call and answer, case by case), and
the real ``OpenAIProvider``/``AnthropicProvider`` adapters talk to it over HTTP on 127.0.0.1, so
every request, stream and tool call goes through the same code a real model's would. Each
cassette's header says it holds a scripted oracle, not a real model; eval reports print that.

After recording, every case is replayed from the new cassette and must give the same statuses and
answers; ``--check`` records into a temporary directory and fails when the result differs from
the committed cassettes (the prompt, tools, data or oracle changed: record again).

Real models are recorded with the eval CLI instead:
``python -m gmchat_nb.evals --provider openai:gpt-4.1-mini --record-to evals/cassettes/NAME.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import filecmp
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gmchat_nb.core.providers.base import BaseLLMProvider  # noqa: E402
from gmchat_nb.core.providers.replay import RecordingProvider  # noqa: E402
from gmchat_nb.evals import Case, select_cases  # noqa: E402
from gmchat_nb.evals.runner import CaseResult, run_case, run_cases  # noqa: E402
from tests.vendor_server import Reply, ToolCallSpec, Vendor, VendorServer  # noqa: E402

ORACLE = ROOT / "evals" / "oracle" / "oracle.yaml"
CASSETTES = ROOT / "evals" / "cassettes"
VENDORS: tuple[Vendor, ...] = ("openai", "anthropic")
MODEL = "oracle"
CALL_PREFIX: dict[str, str] = {"openai": "call_", "anthropic": "toolu_"}


def cassette_name(vendor: Vendor) -> str:
    """The committed cassette's file name for ``vendor``."""
    return f"oracle-{vendor}.jsonl"


def describe(vendor: Vendor) -> str:
    """The cassette header's description: what this recording is and is not."""
    return (
        f"scripted oracle model (evals/oracle/oracle.yaml) recorded through the {vendor} "
        "adapter against the wire-format test server: not a real model"
    )


def load_oracle(path: Path = ORACLE) -> dict[str, list[dict[str, Any]]]:
    """Case name -> the oracle's rounds (ScriptedProvider rounds, all turns in order)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} must map case names to lists of rounds")
    return {str(name): list(rounds) for name, rounds in data.items()}


def replies(vendor: Vendor, rounds: Sequence[Mapping[str, Any]]) -> list[Reply]:
    """The oracle's rounds as wire replies; tool-call ids numbered within the case."""
    out, number = [], 0
    for round_ in rounds:
        calls = []
        for call in round_.get("tool_calls") or []:
            number += 1
            calls.append(
                ToolCallSpec(
                    call["name"], dict(call.get("args") or {}), id=f"{CALL_PREFIX[vendor]}{number}"
                )
            )
        text = str(round_.get("text") or "")
        usage = round_.get("usage") or {}
        out.append(
            Reply(
                text=_chunks(text),
                tool_calls=calls,
                usage=(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
            )
        )
    return out


def _chunks(text: str, size: int = 24) -> list[str]:
    """Stream the text in pieces, as a real model does."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def adapter(vendor: Vendor, server: VendorServer) -> BaseLLMProvider:
    """The real SDK adapter for ``vendor``, pointed at the test server."""
    if vendor == "openai":
        from gmchat_nb.core.providers.openai import OpenAIProvider

        return OpenAIProvider(
            {"model": MODEL, "base_url": server.openai_base_url, "api_key": "oracle"}
        )
    from gmchat_nb.core.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        {"model": MODEL, "base_url": server.anthropic_base_url, "api_key": "oracle"}
    )


async def record(
    vendor: Vendor, cases: Sequence[Case], oracle: Mapping[str, Any], out: Path
) -> list[CaseResult]:
    """Append every case's responses (one case at a time: the server's script is a queue)."""
    results = []
    async with VendorServer() as server:
        for case in cases:
            if case.name not in oracle:
                raise SystemExit(f"the oracle has no rounds for the case {case.name!r}")
            server.reset()
            server.script(vendor, replies(vendor, oracle[case.name]))
            recorder = RecordingProvider(adapter(vendor, server), out, describe(vendor))
            result = await run_case(case, recorder, label=recorder.label)
            left = server.remaining(vendor)
            if left:
                result.reasons.append(f"the oracle had {left} rounds left over")
                result.status = "fail"
            results.append(result)
    return results


def _outcome(results: Sequence[CaseResult]) -> list[tuple[str, str, str]]:
    return [(r.case.name, r.status, r.answer) for r in results]


async def record_all(vendors: Sequence[Vendor], directory: Path) -> int:
    """Record, then replay; 0 when every case passed and replayed identically."""
    cases = select_cases()
    oracle = load_oracle()
    failures = 0
    print(f"{'Cassette':<28}{'Cases':>7}{'Pass':>7}{'Replayed':>10}")
    for vendor in vendors:
        path = directory / cassette_name(vendor)
        recorded = await record(vendor, cases, oracle, path)
        replayed = await run_cases(cases, [f"replay:{path}"], concurrency=4)
        same = _outcome(recorded) == _outcome(replayed)
        passed = sum(r.passed for r in recorded)
        print(f"{path.name:<28}{len(cases):>7}{passed:>7}{'same' if same else 'DIFFERS':>10}")
        for result in recorded:
            if not result.passed:
                print(f"  {result.case.name}: {result.status}; {'; '.join(result.reasons)}")
        failures += (passed != len(cases)) + (not same)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vendor", action="append", choices=VENDORS, help="default: all")
    parser.add_argument(
        "--check", action="store_true", help="record into a temporary directory and compare"
    )
    args = parser.parse_args(argv)
    vendors: list[Vendor] = args.vendor or list(VENDORS)
    if not args.check:
        CASSETTES.mkdir(parents=True, exist_ok=True)
        for vendor in vendors:
            (CASSETTES / cassette_name(vendor)).unlink(missing_ok=True)
        return asyncio.run(record_all(vendors, CASSETTES))
    with tempfile.TemporaryDirectory() as scratch:
        status = asyncio.run(record_all(vendors, Path(scratch)))
        for vendor in vendors:
            name = cassette_name(vendor)
            committed = CASSETTES / name
            if not committed.exists() or not filecmp.cmp(
                Path(scratch) / name, committed, shallow=False
            ):
                print(f"{name} differs from the committed cassette: record it again")
                status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())

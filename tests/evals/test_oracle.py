"""Every eval case can be passed through our tools: the oracle (evals/oracle/oracle.yaml) passes all.

The oracle is a scripted model: for each case, the rounds a good model would play (discover the
manager, query it correctly, answer from the results). A case it cannot pass has an expectation no
correct answer satisfies, which is a dataset bug, not a model failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb.core.providers.scripted import ScriptedProvider, load_rounds
from gmchat_nb.evals import Case, select_cases
from gmchat_nb.evals.dataset import dataset_dir
from gmchat_nb.evals.runner import run_case

ORACLE_PATH: Path = dataset_dir() / "oracle" / "oracle.yaml"
# The planned-only calculations are left out of "all datasets"; the oracle answers them too.
CASES: dict[str, Case] = {
    case.name: case for case in [*select_cases(), *select_cases("calculations")]
}

Rounds = list[dict[str, Any]]


@pytest.fixture(scope="module")
def oracle() -> dict[str, Rounds]:
    """Case name -> validated rounds."""
    data = yaml.safe_load(ORACLE_PATH.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{ORACLE_PATH} must map case names to lists of rounds"
    return {str(name): load_rounds(rounds or []) for name, rounds in data.items()}


def _answers(rounds: Rounds) -> list[int]:
    """Positions of the rounds that end a turn: text and no tool calls."""
    return [i for i, r in enumerate(rounds) if r.get("text") and not r.get("tool_calls")]


def test_oracle_covers_exactly_the_dataset_cases(oracle: dict[str, Rounds]) -> None:
    missing = sorted(set(CASES) - set(oracle))
    unknown = sorted(set(oracle) - set(CASES))
    assert not missing, f"cases without an oracle entry: {missing}"
    assert not unknown, f"oracle entries that name no case: {unknown}"


@pytest.mark.parametrize("name", list(CASES))
async def test_oracle_passes_case(name: str, oracle: dict[str, Rounds]) -> None:
    case = CASES[name]
    if name not in oracle:
        pytest.fail(f"no oracle entry for {name!r} in {ORACLE_PATH}")
    rounds = oracle[name]
    # one final answer per user turn, the last round being the last answer
    answers = _answers(rounds)
    assert len(answers) == len(case.conversation), (
        f"{len(answers)} answer rounds for {len(case.conversation)} user turns"
    )
    assert answers[-1] == len(rounds) - 1, "the last round must be the final answer"
    calls = [call["name"] for r in rounds for call in r.get("tool_calls") or []]
    assert "mutate" not in calls, "the eval questions are all reads"
    assert all(r.get("usage") for r in rounds), "every round reports its token usage"

    provider = ScriptedProvider({"rounds": rounds})
    result = await run_case(case, provider)

    assert result.status == "pass", f"{name}: {result.status}\n" + "\n".join(result.reasons)
    # a good model also follows each case's recommended strategy (no deviations)
    assert not result.reasons, "\n".join(result.reasons)
    assert provider.remaining == 0, f"{provider.remaining} rounds were never requested"
    assert result.usage["input_tokens"] > 0
    assert result.usage["output_tokens"] > 0

"""Dataset files in GeneralManager's format run unmodified on GM's eval fixtures.

The files name managers the GM way (``MaterialManager``) and have no ``project`` key; ``--fixture
toy`` and ``--fixture large`` serve GM's fixture data with GM's real schema conventions.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import load_dataset, run

DATASET = Path(__file__).parent / "data" / "gm_toy_dataset.yaml"


def test_the_file_loads_as_it_is() -> None:
    cases = load_dataset(DATASET)
    assert [c.name for c in cases] == [
        "list_all_materials",
        "filter_material_by_name",
        "parts_made_of_aluminum",
        "unknown_vehicles",
    ]
    assert cases[1].expectations.result_set is not None


LARGE_DATASET = Path(__file__).parent / "data" / "gm_large_dataset.yaml"


def evals_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_fixture_toy_serves_gm_toy_data_the_way_gm_generates_schemas() -> None:
    done = evals_cli("--dataset", str(DATASET), "--fixture", "toy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Outcomes: 4 PASS, 0 FAIL, 0 UNSCORED" in done.stdout


def test_fixture_large_holds_gm_synthetic_managers() -> None:
    done = evals_cli("--dataset", str(LARGE_DATASET), "--fixture", "large", "-v")
    assert done.returncode == 1, done.stdout + done.stderr  # the offline model cannot hop
    assert "Outcomes: 2 PASS, 1 FAIL, 0 UNSCORED" in done.stdout
    assert "synthetic_next_item: [tool_schema/wrong_query_result]" in done.stdout


def test_a_model_that_follows_next_item_passes_the_large_fixture_case() -> None:
    hop = ScriptedProvider(
        {
            "rounds": [
                {"tool_calls": [{"name": "search_managers", "args": {"query": "synthetic 01"}}]},
                {
                    "tool_calls": [
                        {
                            "name": "query",
                            "args": {
                                "manager": "SyntheticManager01",
                                "fields": ["name", {"nextItem": ["name"]}],
                            },
                        }
                    ]
                },
                {"text": "It points to the SyntheticManager02 record."},
            ]
        }
    )
    [case] = [c for c in load_dataset(LARGE_DATASET) if c.name == "synthetic_next_item"]
    result = run([case], hop, project="synthetic").results[0]
    assert result.status == "pass", result.reasons


def test_fixture_and_project_exclude_each_other() -> None:
    done = evals_cli("--dataset", str(DATASET), "--fixture", "toy", "--project", "inventory")
    assert done.returncode == 2 and "not both" in done.stderr

"""A dataset file in GeneralManager's format runs unmodified against GM's toy-shaped schema.

The schema is graphene-built in GM's older flat shape (``materialmanagerList``, flat filters, no
ids); the file names managers the GM way (``MaterialManager``) and has no ``project`` key.
"""

from __future__ import annotations

from pathlib import Path

from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import load_dataset, run

from ..core.project.toy_schema import toy_schema

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


def test_it_runs_and_is_judged_with_gm_manager_names() -> None:
    results = run(DATASET, "offline", project=toy_schema)
    assert [(r.case.name, r.status) for r in results.results] == [
        ("list_all_materials", "pass"),
        ("filter_material_by_name", "pass"),
        ("parts_made_of_aluminum", "pass"),
        ("unknown_vehicles", "pass"),
    ]
    by_dimension = results.summary.set_index("dimension")
    assert by_dimension.loc["Exact result sets", "passed"] == 1  # MaterialManager -> Material


def test_a_wrong_query_on_the_toy_schema_fails_the_gm_expectations() -> None:
    wrong = ScriptedProvider(
        {
            "rounds": [
                {
                    "tool_calls": [
                        {"name": "query", "args": {"manager": "Part", "fields": ["name"]}}
                    ]
                },
                {"text": "Bolt, Bearing and Gear."},
            ]
        }
    )
    [case] = [c for c in load_dataset(DATASET) if c.name == "parts_made_of_aluminum"]
    result = run([case], wrong, project=toy_schema).results[0]
    assert result.status == "fail"
    assert any("Bolt" in reason for reason in result.reasons)  # results_exclude caught it

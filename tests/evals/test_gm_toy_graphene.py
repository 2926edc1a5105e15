"""A GeneralManager-format dataset on GM's own toy-fixture shape, built with graphene.

The schema is GM's older flat shape (``materialmanagerList``, flat filters, no ids, no page
wrappers). graphene 3 needs graphql-core 3.2, so this file does not run on the 3.3 line.
"""

from __future__ import annotations

from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import load_dataset, run

from ..core.project.toy_schema import toy_schema
from .test_gm_dataset import DATASET


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

"""Verified queries as an eval dataset: the project's verified questions become its regression
suite (``gmchat knowledge export --as-eval``).

Each verified query becomes one case of GeneralManager's eval format (the list of cases
``gmchat_nb.evals`` loads): its question is the case's one user turn, and its expectations are
the strongest that format holds for a query whose rows are not written down -- the answer must
make the verified query's calls again, in order (``tool_calls``: the same ``query`` tool, manager,
filters and exclusions, with the same values, and the same ordering when it had one), and draw
its chart when it drew one (``chart``: mark, x, y, aggregate). A case runs on the project the
entry belongs to when that is a demo or a GraphQL URL (``project``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import yaml

from ..charts.tool import CHART
from ..project.targets import demo_name, is_graphql_url
from ..project.tools import TOOLS
from ..store import KnowledgeRecord

__all__ = ["as_eval_cases", "as_eval_yaml"]

# The query arguments a case expects as they were verified: which rows, not how many or which
# columns (a model may read more fields, or page differently, and still re-run the query).
EXPECTED_ARGUMENTS: Final = ("manager", "filters", "exclude", "order_by")
CHART_KEYS: Final = ("mark", "x", "y", "aggregate")
MAX_NAME: Final = 60
_NOT_NAME = re.compile(r"[^a-z0-9]+")


def _case_name(name: str, taken: set[str]) -> str:
    base = _NOT_NAME.sub("_", name.casefold()).strip("_")[:MAX_NAME].strip("_") or "verified_query"
    chosen, number = base, 1
    while chosen in taken:
        number += 1
        chosen = f"{base}_{number}"
    taken.add(chosen)
    return chosen


def _project(key: str) -> str | None:
    """The case's ``project``: the demo or URL the entry's project key names, else ``None``."""
    demo = demo_name(key)
    if demo is not None:
        return demo
    return key if is_graphql_url(key) else None


def _expected_call(arguments: Mapping[str, Any]) -> dict[str, Any]:
    expected = {key: arguments[key] for key in EXPECTED_ARGUMENTS if arguments.get(key)}
    return {"name": TOOLS.query.name, "args_contain": expected}


def _when(value: float | None) -> str:
    return "" if value is None else datetime.fromtimestamp(value, UTC).date().isoformat()


def as_eval_cases(records: Iterable[KnowledgeRecord]) -> list[dict[str, Any]]:
    """The eval cases of the verified queries among ``records`` (other kinds are left out)."""
    cases: list[dict[str, Any]] = []
    taken: set[str] = set()
    for record in records:
        if record.kind != "verified_query":
            continue
        calls = [call for call in record.calls if isinstance(call, Mapping)]
        queries = [
            call["arguments"]
            for call in calls
            if call.get("tool") == TOOLS.query.name and isinstance(call.get("arguments"), Mapping)
        ]
        if not queries:
            continue
        verified = " ".join(
            part
            for part in (
                f"by {record.verified_by}" if record.verified_by else "",
                f"on {_when(record.verified_at)}" if record.verified_at else "",
            )
            if part
        )
        case: dict[str, Any] = {
            "name": _case_name(record.name, taken),
            "description": f"Verified query {record.name!r} ({record.id})"
            + (f", verified {verified}" if verified else ""),
            "tier": 0,
            "tags": ["knowledge", "verified_query"],
        }
        project = _project(record.project)
        if project is not None:
            case["project"] = project
        case["conversation"] = [{"user": record.body}]
        expectations: dict[str, Any] = {"tool_calls": [_expected_call(q) for q in queries]}
        chart = next(
            (
                call.get("arguments")
                for call in calls
                if call.get("tool") == CHART.name and isinstance(call.get("arguments"), Mapping)
            ),
            None,
        )
        if chart is not None:
            drawn = {key: chart[key] for key in CHART_KEYS if isinstance(chart.get(key), str)}
            expectations["chart"] = drawn
        case["expectations"] = expectations
        cases.append(case)
    return cases


def as_eval_yaml(records: Iterable[KnowledgeRecord]) -> str:
    """The verified queries among ``records`` as a GeneralManager-format eval dataset (YAML
    text, a list of cases; an empty list when there are none)."""
    cases = as_eval_cases(records)
    header = (
        "# Verified queries as eval cases (gmchat knowledge export --as-eval): each question\n"
        "# must be answered by re-running its verified query. Run them with the knowledge\n"
        "# loaded by putting them under `cases:` beside `knowledge:` (the export), or as they\n"
        "# are to see what the assistant finds without it.\n"
    )
    body = yaml.safe_dump(cases, sort_keys=False, allow_unicode=True, width=100)
    return header + body

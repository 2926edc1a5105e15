"""Evaluations: GeneralManager-format YAML datasets run against providers, judged and reported.

>>> from gmchat_nb import evals
>>> results = evals.run(dataset="basic_queries", provider="offline")
>>> results.summary, results.cases
"""

from __future__ import annotations

from .api import EvalResults, compare, compare_async, run, run_async, select_cases
from .costs import money_text
from .dataset import Case, DatasetError, load_dataset, parse_cases
from .judges import Verdict
from .runner import CaseResult, ResultCallback

__all__ = [
    "Case",
    "CaseResult",
    "DatasetError",
    "EvalResults",
    "ResultCallback",
    "Verdict",
    "compare",
    "compare_async",
    "load_dataset",
    "money_text",
    "parse_cases",
    "run",
    "run_async",
    "select_cases",
]

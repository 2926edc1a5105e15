"""Charts of query results: declared intents checked against a result's columns and built into
Vega-Lite specifications with the result's own rows (``intent.py``, ``columns.py``,
``aggregate.py``, ``spec.py``), suggested without a model (``suggest.py``), and the ``chart`` tool
over a turn's queries (``tool.py``, ``turn.py``), and a table's chart (``answer.py``)."""

from .aggregate import MAX_MARKS
from .answer import chart_answer
from .columns import ColumnKind, Table
from .intent import AGGREGATES, MARKS, ChartIntent
from .spec import SCHEMA, BuiltChart, build_chart, check_spec
from .suggest import chart_options, suggest_intent
from .tool import CHART, ChartedQuery, chart_event, run_chart

__all__ = [
    "AGGREGATES",
    "CHART",
    "MARKS",
    "MAX_MARKS",
    "SCHEMA",
    "BuiltChart",
    "ChartIntent",
    "ChartedQuery",
    "ColumnKind",
    "Table",
    "build_chart",
    "chart_answer",
    "chart_event",
    "chart_options",
    "check_spec",
    "run_chart",
    "suggest_intent",
]

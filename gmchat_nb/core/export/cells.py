"""The code cells of an exported conversation: the parameters, the connection, each query's
cell (the evidence cell's code from the document and variables the query journaled), the cell
that compares its rows with the recorded count, and each chart's Altair cell.

Only this module writes code, and nothing from a model or from data enters it but as a Python
literal: documents, variables, column names and titles are ``repr``/:func:`python_literal`
strings, the project's URL too; every name in the code is ours (``frame_2_1``). A change is never
code (:mod:`.records` shows it as Markdown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..charts import ChartIntent
from ..dsn import without_password
from ..project.errors import ToolError
from ..project.targets import demo_name
from ..session.evidence import JournaledQuery, python_literal
from ..settings import ChatSettings

__all__ = [
    "CHART_ARGUMENTS",
    "INSTALL_HINT",
    "chart_cell",
    "check_cell",
    "connection_cell",
    "frame_name",
    "parameters_cell",
    "query_cell",
    "shown_project",
]

INSTALL_HINT: Final = 'pip install "gmchat_nb[charts]"'
"""What a chart cell needs (the ``[charts]`` extra: Altair), as ``Chart.code()`` says it."""
CHART_ARGUMENTS: Final = ("mark", "x", "y", "color", "aggregate", "sort", "limit", "title")
"""``chart_spec``'s keyword arguments, in the order ``Chart.code()`` writes them."""

_COMPARE_ROWS: Final = '''

def compare_rows(frame, recorded):
    """The rows a query gives now beside the rows the chat read: the data may have changed
    since the conversation, and this says so rather than failing."""
    now = len(frame)
    print(f"rows now: {now} (recorded: {recorded})")
    if now != recorded:
        print(f"difference: {now - recorded:+d} rows since the conversation")'''


def frame_name(turn: int, query: int) -> str:
    """The DataFrame of the ``query``-th query of the ``turn``-th exported turn."""
    return f"frame_{turn}_{query}"


def shown_project(settings: ChatSettings) -> str:
    """Where the project is, as a notebook may show it: its URL without a password."""
    return without_password(settings.project)


def parameters_cell(settings: ChatSettings) -> str:
    """The cell tagged ``parameters`` (papermill sets it): where the project is, its URL's
    password left out, and the HTTP headers its server needs (credentials are never exported)."""
    target = settings.project
    shown = shown_project(settings)
    lines = [
        "# Parameters: the project, and the HTTP headers its server needs. Credentials are not",
        '# exported: put yours back here (HEADERS = {"Authorization": "Bearer ..."}).',
    ]
    if shown != target:
        lines.append("# The project URL's password is not shown either: put it back for ***.")
    lines += [f"PROJECT = {shown!r}", "HEADERS = {}"]
    return "\n".join(lines)


def connection_cell(settings: ChatSettings) -> str:
    """The project connection the evidence cells make (the demo in this kernel, else
    ``gmchat_nb.connect`` with the exposed managers), on ``PROJECT`` and ``HEADERS``, and the
    row count comparison every query's check cell calls."""
    exposed = list(settings.exposed_managers) if settings.exposed_managers is not None else None
    remote = f"await gmchat_nb.connect(PROJECT, exposed={exposed!r}, headers=HEADERS)"
    demo = demo_name(settings.project)
    if demo is None:
        connect = f"project = {remote}"
    else:
        arguments = "" if demo == "inventory" else repr(demo)
        connect = (
            "project = (\n"
            f"    gmchat_nb.demo_project({arguments})\n"
            f"    if PROJECT == {settings.project!r}\n"
            f"    else {remote}\n"
            ")"
        )
    return f"import gmchat_nb\n\n{connect}\n{_COMPARE_ROWS}"


def query_cell(query: JournaledQuery, name: str) -> str:
    """The cell that runs a journaled query again into the DataFrame ``name`` and shows it:
    its document and variables as the chat sent them, every page, the same window of rows."""
    return query.frame_code(name)


def check_cell(name: str, recorded: int) -> str:
    """The cell that compares the rows of ``name`` now with the ``recorded`` count."""
    return f"compare_rows({name}, {int(recorded)})"


def chart_cell(intent: Mapping[str, Any], name: str) -> str | None:
    """The cell that draws a chart with Altair from the DataFrame ``name``, as ``Chart.code()``
    draws it (the chart's intent as applied, written out); ``None`` for an intent that is no
    chart (a journal written by something else)."""
    values = {key: value for key, value in intent.items() if key in CHART_ARGUMENTS}
    try:
        checked = ChartIntent.from_args(values).to_dict()
    except ToolError:
        return None
    arguments = ", ".join(
        f"{key}={python_literal(checked[key])}" for key in CHART_ARGUMENTS if key in checked
    )
    return "\n".join(
        [
            f"# needs the charts extra: {INSTALL_HINT}",
            "import altair as alt",
            "from gmchat_nb.charts import chart_spec",
            "",
            "alt.renderers.enable('mimetype')  # JupyterLab draws the Vega-Lite itself: no CDN",
            f"alt.Chart.from_dict(chart_spec({name}, {arguments}))",
        ]
    )

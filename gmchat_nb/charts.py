"""Charts in Python: the charts a turn drew (``turn.charts``) and the same charts of any rows.

>>> turn = await chat.ask("Chart the ordered quantity by material")
>>> chart = turn.charts[0]          # a notebook shows it (Vega-Lite, with PNG and SVG besides)
>>> chart.spec, chart.intent, chart.to_png(), print(chart.code())

A chart is never code a model wrote: a ``chart`` call declares a query result, a mark and
columns, and :func:`gmchat_nb.core.charts.build_chart` builds the Vega-Lite v5 specification from
the result's own rows. :func:`chart_spec` is that builder for a DataFrame (``turn.frames``'
dotted columns) or a list of rows, so a notebook draws exactly the chart the chat drew.

:class:`Chart` shows itself as ``application/vnd.vegalite.v5+json`` (JupyterLab draws it) and, when
``vl-convert-python`` is installed (the ``[charts]`` extra), as PNG and SVG rendered in process
without a browser or the network, so nbval, HTML exports, VS Code and Colab show it as well.
:meth:`Chart.code` is a notebook cell that runs the chart's query again and draws it with Altair.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import logging
import math
import sys
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from .core.charts import ChartIntent, build_chart, check_spec
from .core.project.errors import ToolError
from .core.session.evidence import planned_ids, query_code

if TYPE_CHECKING:
    from .core.project.project import QueryOutcome
    from .core.settings import ChatSettings

__all__ = [
    "INSTALL_HINT",
    "VEGALITE_MIME",
    "Chart",
    "ChartError",
    "ChartQuery",
    "chart_spec",
    "render_png",
    "render_svg",
    "turn_charts",
]

log = logging.getLogger(__name__)

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
INSTALL_HINT = 'pip install "gmchat_nb[charts]"'
STATIC_WIDTH = 520
"""The width of a PNG or SVG render (the spec's ``"container"`` width needs a page to fill)."""

_INTENT_FIELDS = frozenset(item.name for item in dataclasses.fields(ChartIntent))


class ChartError(ValueError):
    """A chart that cannot be drawn as asked (``code``: ``invalid_arguments``, ``unknown_column``,
    ``invalid_chart``, ``empty_result`` or ``too_many_marks``; the message says what would do)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- building ------------------------------------------------------------------------------------


def chart_spec(
    data: Any,
    *,
    mark: str,
    x: str,
    y: str | None = None,
    color: str | None = None,
    aggregate: str | None = None,
    sort: str | None = None,
    limit: int | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The Vega-Lite v5 specification of a chart of ``data``: a pandas DataFrame (the dotted
    columns ``turn.frames`` gives) or rows (mappings; nested ones are flattened to dotted columns).

    It is built by the chat's own builder, so the same rows and arguments give the very spec a
    ``chart`` call gives. Marks: bar, line, point, area, arc, histogram; aggregates: count, sum,
    mean, min, max; ``sort``: ``x``, ``-x``, ``y``, ``-y``. Raises :class:`ChartError`."""
    given: dict[str, Any] = {"mark": mark, "x": x, "y": y, "color": color, "aggregate": aggregate}
    given |= {"sort": sort, "limit": limit, "title": title}
    try:
        intent = ChartIntent.from_args({k: v for k, v in given.items() if v is not None})
        return build_chart(_rows(data), intent).spec
    except ToolError as error:
        raise ChartError(error.code, error.message) from None


def _rows(data: Any) -> list[Mapping[str, Any]]:
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        columns = [str(name) for name in data.columns]
        return [
            {name: _plain(value) for name, value in zip(columns, values, strict=True)}
            for values in data.itertuples(index=False, name=None)
        ]
    if isinstance(data, Mapping) or not isinstance(data, Iterable) or isinstance(data, str):
        raise TypeError(
            f"chart_spec draws a pandas DataFrame or a list of rows, not {type(data).__name__}"
        )
    rows = list(data)
    for row in rows:
        if not isinstance(row, Mapping):
            raise TypeError(f"a row to chart is a mapping, not {type(row).__name__}")
    return rows


def _plain(value: Any) -> Any:
    """A DataFrame cell as the query gave it: missing values ``None``, NumPy scalars Python
    numbers, dates ISO text (a date-time at midnight without a time zone as its date)."""
    if isinstance(value, list | tuple | dict):
        return value
    if hasattr(value, "tolist") and not isinstance(value, datetime | date):
        value = value.tolist()  # a NumPy scalar or array
        if isinstance(value, list):
            return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if _is_missing(value):
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None and value.time() == datetime.min.time():
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _is_missing(value: Any) -> bool:
    pandas = sys.modules.get("pandas")
    if pandas is None or isinstance(value, str | int | float | bool):
        return False
    try:
        return bool(pandas.isna(value))
    except (TypeError, ValueError):
        return False


# -- rendering -----------------------------------------------------------------------------------


def _converter() -> Any:
    try:
        import vl_convert
    except ImportError:
        raise ModuleNotFoundError(
            f"Rendering a chart as PNG or SVG needs vl-convert-python: {INSTALL_HINT}",
            name="vl_convert",
        ) from None
    return vl_convert


@functools.cache
def _vegalite_version() -> str:
    """The newest Vega-Lite 5 that vl-convert bundles (its default may be a later major)."""
    versions = [v for v in _converter().get_vegalite_versions() if v.split(".")[0] == "5"]
    if not versions:
        raise RuntimeError("this vl-convert-python bundles no Vega-Lite 5: pip install -U it")
    return str(max(versions, key=lambda v: tuple(int(p) for p in v.split("."))))


def _static(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec to render without a page: a fixed width instead of the container's."""
    static = dict(spec)
    if static.get("width") == "container":
        static["width"] = STATIC_WIDTH
    return static


def render_png(spec: Mapping[str, Any], *, scale: float = 1.0) -> bytes:
    """``spec`` as PNG bytes, rendered in process by vl-convert; nothing is fetched (no base URL
    is allowed: a spec that names data elsewhere fails)."""
    converter = _converter()
    png: bytes = converter.vegalite_to_png(
        _static(spec), vl_version=_vegalite_version(), scale=scale, allowed_base_urls=[]
    )
    return png


def render_svg(spec: Mapping[str, Any]) -> str:
    """``spec`` as SVG text, rendered as :func:`render_png` renders."""
    converter = _converter()
    svg: str = converter.vegalite_to_svg(
        _static(spec), vl_version=_vegalite_version(), allowed_base_urls=[]
    )
    return svg


# -- the chart -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ChartQuery:
    """The query a chart draws, from the turn's evidence: what :meth:`Chart.code` re-runs."""

    outcome: QueryOutcome
    settings: ChatSettings


class Chart:
    """A chart: its Vega-Lite v5 ``spec`` (a dict), the ``intent`` it was drawn from (the chart
    call's JSON as applied: ``mark``, ``x``, ``y``, ``aggregate``, ...; ``None`` when unknown), its
    ``title``, how many ``marks`` it draws and, for a turn's chart, the ``evidence_id`` of the
    query it draws and the ``id`` of its ``chart`` call.

    ``spec`` is checked (:func:`~gmchat_nb.core.charts.check_spec`): data inline, nothing that
    fetches or evaluates; anything else is a ``ValueError``."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        intent: ChartIntent | Mapping[str, Any] | None = None,
        title: str | None = None,
        marks: int | None = None,
        evidence_id: str | None = None,
        id: str | None = None,
        query: ChartQuery | None = None,
    ) -> None:
        spec = dict(spec)
        check_spec(spec)
        self.spec: dict[str, Any] = spec
        applied = _intent(intent) if isinstance(intent, Mapping) else intent
        self.intent: dict[str, Any] | None = applied.to_dict() if applied is not None else None
        self.title: str = title if title is not None else str(spec.get("title") or "")
        self.marks: int = marks if marks is not None else len(spec["data"]["values"])
        self.evidence_id = evidence_id
        self.id = id
        self._query = query
        self._renders: dict[str, Any] = {}

    @classmethod
    def from_event(cls, event: Mapping[str, Any], query: ChartQuery | None = None) -> Chart:
        """The chart of a ``chart`` event (live or read back from the journal)."""
        if event.get("type") != "chart" or not isinstance(event.get("spec"), Mapping):
            raise ValueError("not a chart event")
        intent = event.get("intent")
        marks = event.get("marks")
        return cls(
            event["spec"],
            intent=intent if isinstance(intent, Mapping) else None,
            title=str(event["title"]) if event.get("title") is not None else None,
            marks=marks if isinstance(marks, int) and not isinstance(marks, bool) else None,
            evidence_id=str(event["evidence_id"]) if event.get("evidence_id") else None,
            id=str(event["id"]) if event.get("id") else None,
            query=query,
        )

    # -- images ----------------------------------------------------------------------------------

    def to_png(self, *, scale: float = 1.0) -> bytes:
        """The chart as PNG bytes, rendered offline (needs the ``[charts]`` extra)."""
        key = f"png@{scale}"
        if key not in self._renders:
            self._renders[key] = render_png(self.spec, scale=scale)
        png: bytes = self._renders[key]
        return png

    def to_svg(self) -> str:
        """The chart as SVG text, rendered offline (needs the ``[charts]`` extra)."""
        if "svg" not in self._renders:
            self._renders["svg"] = render_svg(self.spec)
        svg: str = self._renders["svg"]
        return svg

    def _repr_mimebundle_(
        self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
    ) -> dict[str, Any]:
        """Vega-Lite for front ends that draw it, PNG and SVG for the others (left out when
        vl-convert is not installed), and a line of text."""
        wanted = set(include) if include is not None else None
        unwanted = set(exclude or ())

        def asked(mime: str) -> bool:
            return (wanted is None or mime in wanted) and mime not in unwanted

        bundle: dict[str, Any] = {"text/plain": repr(self)}
        if asked(VEGALITE_MIME):
            bundle[VEGALITE_MIME] = self.spec
        try:
            if asked("image/png"):
                bundle["image/png"] = base64.b64encode(self.to_png()).decode("ascii")
            if asked("image/svg+xml"):
                bundle["image/svg+xml"] = self.to_svg()
        except ModuleNotFoundError as error:
            if error.name != "vl_convert":
                raise
        except Exception as error:  # a front end that draws Vega-Lite still shows the chart
            log.warning("chart %r not rendered as an image: %s", self.title, error)
        return bundle

    # -- code ------------------------------------------------------------------------------------

    def code(self) -> str:
        """A notebook cell that runs this chart's query again (as the evidence cell does, every
        page of it) and draws the chart with Altair from the new rows: the same spec while the
        data is unchanged. Raises ``LookupError`` for a chart whose query is not in this
        session's evidence (a turn read back from another session's journal)."""
        if self._query is None or self.intent is None:
            raise LookupError(
                "The query this chart draws is not in this session's evidence, so there is no "
                "cell that re-runs it; chart.spec holds the chart's data."
            )
        outcome, settings = self._query.outcome, self._query.settings
        query, shown = query_code(outcome, settings).rsplit("\n", 1)
        if shown != "frame":  # the evidence cell ends by showing the frame
            raise RuntimeError("unexpected evidence cell")
        lines = [query]
        lines += [
            "",
            f"# needs the charts extra: {INSTALL_HINT}",
            "import altair as alt",
            "from gmchat_nb.charts import chart_spec",
            "",
            "alt.renderers.enable('mimetype')  # JupyterLab draws the Vega-Lite itself: no CDN",
            f"alt.Chart.from_dict(chart_spec(frame, {_arguments(_intent(self.intent))}))",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        mark = self.intent["mark"] if self.intent is not None else self.spec.get("mark")
        mark = mark.get("type") if isinstance(mark, Mapping) else mark
        return f"<Chart {self.title!r}: {mark}, {self.marks} marks>"


def _intent(values: Mapping[str, Any]) -> ChartIntent:
    known = {key: value for key, value in values.items() if key in _INTENT_FIELDS}
    try:
        return ChartIntent(**known)
    except TypeError as error:  # no mark or x
        raise ValueError(f"a chart's intent needs a mark and x: {error}") from None


def _arguments(intent: ChartIntent) -> str:
    """``chart_spec``'s keyword arguments for ``intent`` as applied (the aggregate and sort it
    was drawn with written out, so the cell does not depend on defaults)."""
    values = dataclasses.replace(intent, query=None).to_dict()  # the frame is the query
    order = ("mark", "x", "y", "color", "aggregate", "sort", "limit", "title")
    return ", ".join(f"{key}={values[key]!r}" for key in order if key in values)


def turn_charts(
    events: Iterable[Mapping[str, Any]],
    outcomes: Mapping[str, QueryOutcome],
    settings: ChatSettings | None,
) -> list[Chart]:
    """The charts of a turn's ``events``, each with the query it draws when ``outcomes`` (by
    tool call id) holds it. A chart event whose spec fails :func:`check_spec` (a journal
    written by something else) is left out, with a warning in the log."""
    events = list(events)
    by_evidence = {
        ids["evidence_id"]: call_id
        for call_id, ids in planned_ids(events).items()
        if "evidence_id" in ids
    }
    charts: list[Chart] = []
    for event in events:
        if event.get("type") != "chart":
            continue
        evidence_id = str(event.get("evidence_id") or "")
        outcome = outcomes.get(by_evidence.get(evidence_id, evidence_id))
        query = ChartQuery(outcome, settings) if outcome is not None and settings else None
        try:
            charts.append(Chart.from_event(event, query))
        except ValueError as error:
            log.warning("chart %r left out: %s", event.get("id"), error)
    return charts

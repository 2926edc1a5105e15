"""Charts in the widget: a result table's chart (``chart_request``, answered ``chart_options``) and
the chart library a view loads when it draws its first chart (``chart_library``).

The chart is built by :mod:`gmchat_nb.core.charts` from the table's rows as the query returned
them; a picker's choice is an intent like a ``chart`` call's, and a mistake in it comes back as
the answer's ``error`` (the table shows it), never as a failed message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.charts.answer import chart_answer

__all__ = ["CHARTS_UNAVAILABLE", "chart_answer", "chart_library"]

CHARTS_JS = Path(__file__).parent / "static" / "charts.js"
CHARTS_UNAVAILABLE = (
    "The chart library (gmchat_nb/widget/static/charts.js) is not built: run `npm run build` in "
    "frontend/ (or reinstall gmchat_nb), then draw the chart again."
)


def chart_library() -> dict[str, Any]:
    """The ``chart_library`` answer: the library module's text, or an ``error`` saying how to
    build it."""
    try:
        source = CHARTS_JS.read_text(encoding="utf-8")
    except OSError:
        return {"type": "error", "code": "charts_unavailable", "message": CHARTS_UNAVAILABLE}
    return {"type": "chart_library", "source": source}

"""Charts in the side panel, in a real JupyterLab driven by Debian's chromium: the chart a turn
drew (from the journal's ``chart`` event) under its query's card, the result table's Chart button
(the server's chart route), markup in the data and the title staying text, the chart drawn again
after a reload; and the chart library (Vega) loaded as a lazy chunk only when the first chart is
drawn, not with the panel. The turn is the widget's browser test's (tests/widget/browser)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Request, expect

from ..jupyter_app import LABEXTENSION, JupyterApp
from ..widget.browser.test_charts import INERT, ROUNDS, SCRIPT, TITLE, bars
from .conftest import _app
from .test_side_panel import ask, new_conversation, open_panel, panel_after_reload

SETTINGS = {"allowed_mutations": ["createPart"], "injection": {"mutation_intent": False}}


@pytest.fixture(scope="module")
def charts_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose model creates two parts named with markup, queries and charts them."""
    yield from _app(tmp_path_factory, "charts-lab", rounds=ROUNDS, chat=SETTINGS)


def vega_chunk() -> str:
    """The labextension's lazy chunk that holds Vega (the largest of its scripts)."""
    scripts = sorted((LABEXTENSION / "static").glob("*.js"), key=lambda path: path.stat().st_size)
    chunk = scripts[-1]
    assert b"vega-lite" in chunk.read_bytes() or b"Vega-Lite" in chunk.read_bytes(), chunk
    return chunk.name


def file_name(request: Request) -> str:
    return request.url.split("?", 1)[0].rsplit("/", 1)[-1]


def test_a_chart_in_the_panel_its_table_s_chart_button_and_a_reload(
    page: Page, charts_lab: JupyterApp, dialogs: list[str]
) -> None:
    chunk = vega_chunk()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(file_name(request)))
    page.goto(charts_lab.lab_url("charts"))
    root = open_panel(page)
    new_conversation(root)
    assert chunk not in requested  # the panel came up without the chart library

    ask(root, "Chart the parts with markup in their names")

    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Charted.", timeout=40_000
    )
    turn = root.locator("[data-testid=gmchat-turn]").last
    chart = turn.locator("[data-testid=gmchat-chart][data-chart=drawn]")
    expect(chart).to_have_attribute("data-state", "drawn", timeout=30_000)
    assert chunk in requested  # ... and loaded it for the first chart
    expect(bars(chart)).to_have_count(2)
    expect(chart.locator("[data-testid=gmchat-chart-title]")).to_have_text(TITLE)
    assert chart.evaluate("(el) => el.previousElementSibling.dataset.tool") == "query"
    chart.locator("[data-testid=gmchat-chart-table-show]").click()
    expect(chart.locator("[data-testid=gmchat-chart-table] tbody tr")).to_have_count(2)
    chart.locator("[data-testid=gmchat-chart-show]").click()

    # the table's Chart button: the server's chart route suggests the same bars
    table = turn.locator("[data-testid=gmchat-table]")
    table.locator("[data-testid=gmchat-chart-button]").click()
    suggested = table.locator("[data-testid=gmchat-chart][data-chart='suggested:parts']")
    expect(suggested).to_have_attribute("data-state", "drawn", timeout=30_000)
    expect(bars(suggested)).to_have_count(2)
    assert SCRIPT in suggested.locator("svg text").all_text_contents()
    table.locator("[data-testid=gmchat-chart-mark]").select_option("line")
    expect(table.locator("[data-testid=gmchat-chart-picker-status]")).to_contain_text(
        "dates or numbers on x", timeout=15_000
    )
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert turn.locator(INERT).count() == 0

    # a reload draws the chart again from the journal
    page.goto(charts_lab.lab_url("charts", reset=False))
    root = panel_after_reload(page)
    chart = root.locator("[data-testid=gmchat-turn]").last.locator(
        "[data-testid=gmchat-chart][data-chart=drawn]"
    )
    expect(chart).to_have_attribute("data-state", "drawn", timeout=40_000)
    expect(bars(chart)).to_have_count(2)

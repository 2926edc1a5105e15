"""Charts in the chat widget, in a real JupyterLab and browser: a turn answered with a chart (drawn
under its query's card, as SVG, with a table/chart toggle), a result table's Chart button and
pickers, hostile text in the data and the title staying text, and a reload drawing the chart
again from the view's records. The chart library comes from the kernel (charts.js) on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from .lab import ask, chat_widget, save_notebook, show_chat, wait_for_kernel_idle, write_notebook

CHAT_CELL = 1
IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
TITLE = "<img src=x onerror=alert(3)> <script>alert(4)</script>"
# Two parts named with markup, a query that finds them, a chart of it titled with markup.
ROUNDS = [
    *(
        {"tool_calls": [{"name": "mutate", "args": {"mutation": "createPart", "input": part}}]}
        for part in ({"name": IMG, "quantity": 7}, {"name": SCRIPT, "quantity": 3})
    ),
    {
        "tool_calls": [
            {
                "name": "query",
                "id": "parts",
                "args": {
                    "manager": "Part",
                    "fields": ["name", "quantity"],
                    "filters": {"name__contains": "<"},
                },
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "chart",
                "id": "drawn",
                "args": {
                    "query": "parts",
                    "mark": "bar",
                    "x": "name",
                    "y": "quantity",
                    "title": TITLE,
                },
            }
        ]
    },
    {"text": "Charted."},
]
NOTEBOOK = f"""from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

# (the question asks for no change: the intent gate is off, this notebook tests charts)
chat = Chat(
    provider=ScriptedProvider({{"rounds": {json.dumps(ROUNDS)}}}),
    store=":memory:",
    allowed_mutations=["createPart"],
    injection={{"mutation_intent": False}},
)
chat
"""
INERT = "img, script, iframe, object, embed, foreignObject, a"


@pytest.fixture
def charts_notebook(tmp_path: Path) -> Path:
    return write_notebook(tmp_path / "charts.ipynb", "Browser test: charts.", NOTEBOOK)


def bars(chart: Locator) -> Locator:
    """The bars Vega drew (a path each, in the SVG's rect mark group)."""
    return chart.locator("[data-testid=gmchat-chart-canvas] svg g.mark-rect path")


def check_drawn_chart(turn: Locator) -> Locator:
    chart = turn.locator("[data-testid=gmchat-chart][data-chart=drawn]")
    expect(chart).to_have_attribute("data-state", "drawn", timeout=30_000)
    expect(chart.locator("svg")).to_have_count(1)
    expect(bars(chart)).to_have_count(2)
    expect(chart.locator("[data-testid=gmchat-chart-title]")).to_have_text(TITLE)
    labels = chart.locator("svg text").all_text_contents()
    assert SCRIPT in labels and any(label.startswith("<img") for label in labels), labels
    assert chart.locator(INERT).count() == 0
    return chart


def test_a_chart_answer_its_toggle_the_table_s_chart_button_and_a_reload(
    open_lab: Callable[[str | Path], Page], charts_notebook: Path
) -> None:
    page = open_lab(charts_notebook)
    root = show_chat(page, CHAT_CELL)
    ask(page, "Chart the parts with markup in their names")
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Charted.", timeout=30_000
    )
    turn = root.locator("[data-testid=gmchat-turn]").last
    chart = check_drawn_chart(turn)
    # under the card of the query it draws
    assert chart.evaluate("(el) => el.previousElementSibling.dataset.tool") == "query"
    assert chart.get_attribute("data-evidence") == "parts"

    # the toggle: the chart's data as a table, and back
    chart.locator("[data-testid=gmchat-chart-table-show]").click()
    data = chart.locator("[data-testid=gmchat-chart-table]")
    expect(data).to_be_visible()
    expect(data.locator("thead th")).to_have_text(["name", "quantity"])
    expect(data.locator("tbody tr td:first-child")).to_have_text([IMG, SCRIPT])
    expect(chart.locator("[data-testid=gmchat-chart-canvas]")).to_be_hidden()
    chart.locator("[data-testid=gmchat-chart-show]").click()
    expect(data).to_be_hidden()
    expect(bars(chart)).to_have_count(2)

    # the query's table: its Chart button draws the suggested chart; a picker redraws it
    card = turn.locator("[data-testid=gmchat-tool][data-tool=query]")
    if card.get_attribute("open") is None:
        card.locator("summary").first.click()
    table = card.locator("[data-testid=gmchat-table]")
    table.locator("[data-testid=gmchat-chart-button]").click()
    suggested = table.locator("[data-testid=gmchat-chart][data-chart='suggested:parts']")
    expect(suggested).to_have_attribute("data-state", "drawn", timeout=30_000)
    expect(bars(suggested)).to_have_count(2)
    pickers = table.locator("[data-testid=gmchat-chart-pickers]")
    expect(pickers.locator("[data-testid=gmchat-chart-x]")).to_have_value("name")
    pickers.locator("[data-testid=gmchat-chart-mark]").select_option("line")
    status = table.locator("[data-testid=gmchat-chart-picker-status]")
    expect(status).to_contain_text("dates or numbers on x", timeout=15_000)
    expect(table.locator("[data-testid=gmchat-chart]")).to_have_count(0)
    pickers.locator("[data-testid=gmchat-chart-mark]").select_option("bar")
    pickers.locator("[data-testid=gmchat-chart-y]").select_option("")
    redrawn = table.locator("[data-testid=gmchat-chart]")
    expect(redrawn).to_have_attribute("data-state", "drawn", timeout=15_000)
    expect(redrawn.locator("[data-testid=gmchat-chart-title]")).to_have_text(
        "Count of rows by name"
    )
    expect(bars(redrawn)).to_have_count(2)

    # nothing of the markup became an element or ran (the dialogs fixture sees no alert)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert turn.locator(INERT).count() == 0

    # a reload draws the chart again from the view's records
    save_notebook(page)
    page.reload()
    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_be_visible(timeout=30_000)
    check_drawn_chart(root.locator("[data-testid=gmchat-turn]").last)

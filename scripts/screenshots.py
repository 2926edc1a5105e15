"""Photograph the notebook chat widget and the JupyterLab side panel for the docs:
``docs/screenshots/widget-*.png`` and ``docs/screenshots/panel.png``.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]

Starts its own JupyterLab on 127.0.0.1 and Debian chromium exactly as the browser tests do
(``tests/jupyter_app.py``, ``tests/chromium.py``), plays
``tests/widget/browser/notebooks/screenshots.ipynb`` (a scripted provider over the demo project)
and crops each picture to the widget:

* ``widget-answer.png``: a streamed answer with its result table and the evidence panel open;
* ``widget-confirm.png``: the next question's mutation waiting for Confirm / Reject;
* ``widget-chart.png``: the offline provider's answer to "Chart the projects by status", the
  chart under its query's card (a notebook of its own, ``Chat()`` on the demo).

Then a second JupyterLab with the gmchat server extension on the same scripted query (as the side
panel's browser tests run it):

* ``panel.png``: JupyterLab with a notebook open and the side panel on a finished turn, its
  evidence open (the window at 1 device pixel per CSS pixel: a small PNG).

And a third, on the turn of the panel's fitting test (``tests/lab/test_panel_fits.py``: a query,
its chart, the answer, then a change waiting for Confirm), the panel alone with the sidebar
dragged by its handle to each width:

* ``panel-300.png``, ``panel-400.png``, ``panel-600.png``: the log at its end, the confirmation
  card with the answer and its evidence (open) above it, cropped to the panel (1 device pixel per
  CSS pixel).

``--only widget``, ``--only panel`` or ``--only widths`` takes only those pictures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chromium import CHROMIUM, launch_chromium  # noqa: E402  (the repository on sys.path)
from tests.jupyter_app import JupyterApp  # noqa: E402
from tests.lab.test_panel_fits import (  # noqa: E402
    PART,
    WIDTHS,
    set_sidebar_width,
)
from tests.lab.test_panel_fits import ROUNDS as WIDTHS_ROUNDS  # noqa: E402
from tests.lab.test_panel_fits import SETTINGS as WIDTHS_SETTINGS  # noqa: E402
from tests.lab.test_side_panel import ask as ask_panel  # noqa: E402
from tests.lab.test_side_panel import new_conversation, open_panel  # noqa: E402
from tests.widget.browser.lab import (  # noqa: E402
    NOTEBOOKS,
    ask,
    open_notebook,
    show_chat,
    write_notebook,
)

CHAT_CELL = 1  # cell 0 is a markdown note
# The panel's model: the widget tour's first question (a query, then the answer).
PANEL_QUESTION = "Which parts are made of titanium, and how many of each do we have?"
PANEL_ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "name": "query",
                "args": {
                    "manager": "Part",
                    "fields": ["name", "quantity"],
                    "filters": {"material__name": "Titanium"},
                },
            }
        ],
        "usage": {"input_tokens": 1210, "output_tokens": 42},
    },
    {
        "chunks": [
            "Five parts are made of **Titanium**. ",
            "The Titanium Bracket has the most units in stock (120); ",
            "the Turbine Blade the fewest (16).",
        ],
        "usage": {"input_tokens": 1480, "output_tokens": 37},
    },
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--only", choices=("widget", "panel", "widths"))
    args = parser.parse_args(argv)
    takes = {args.only} if args.only else {"widget", "panel", "widths"}
    if CHROMIUM is None:
        print("No Chromium found: install it or set GMCHAT_CHROMIUM.", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gmchat-screenshots-") as tmp:
        if "widget" in takes:
            lab = JupyterApp(Path(tmp))

            def widget_pictures(browser: Browser) -> None:
                shoot(browser, lab, args.out)
                shoot_chart(browser, lab, Path(tmp), args.out)

            in_chromium(lab, widget_pictures)
        if "panel" in takes:
            app = JupyterApp(Path(tmp) / "panel", rounds=PANEL_ROUNDS)
            in_chromium(app, lambda browser: shoot_panel(browser, app, args.out))
        if "widths" in takes:
            widths = JupyterApp(Path(tmp) / "widths", rounds=WIDTHS_ROUNDS, chat=WIDTHS_SETTINGS)
            in_chromium(widths, lambda browser: shoot_panel_widths(browser, widths, args.out))
    return 0


def in_chromium(app: JupyterApp, take: Callable[[Browser], object]) -> None:
    """Run ``take`` with a Chromium; the browser and then ``app`` are stopped afterwards."""
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                take(browser)
            finally:
                browser.close()
    finally:
        app.stop()


def shoot(browser: Browser, lab: JupyterApp, out: Path) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 1600}, device_scale_factor=2)
    path = lab.add_notebook("gmchat-tour", NOTEBOOKS / "screenshots.ipynb")
    open_notebook(page, lab.lab_url("screenshots", path))
    # More room for the notebook: collapse the file browser (click its active sidebar tab).
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    root = show_chat(page, CHAT_CELL)

    ask(page, "Which parts are made of titanium, and how many of each do we have?")
    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text("the fewest (16)", timeout=30_000)
    expect(root.locator("[data-testid=gmchat-table]").last.locator("tbody tr")).to_have_count(5)
    card = root.locator("[data-testid=gmchat-tool][data-tool=query]").last
    if card.get_attribute("open") is None:  # the query's card (with its table) starts folded
        card.locator("summary").first.click()
    expect(card.locator("[data-testid=gmchat-table]")).to_be_visible()
    evidence = root.locator("[data-testid=gmchat-evidence]").last
    evidence.locator("summary").click()
    expect(evidence.locator("tbody tr").first).to_be_visible()
    card.evaluate("(el) => el.scrollIntoView({block: 'start'})")  # the turn from its table on
    settle(page)
    root.screenshot(path=out / "widget-answer.png", animations="disabled")
    print(out / "widget-answer.png")

    card.locator("summary").first.click()  # fold the first turn's query again
    ask(page, "Add a part Titanium Spring with 40 units in stock.")
    box = root.locator("[data-testid=gmchat-confirm-box]").last
    expect(box).to_be_visible(timeout=30_000)
    box.scroll_into_view_if_needed()
    settle(page)
    root.screenshot(path=out / "widget-confirm.png", animations="disabled")
    print(out / "widget-confirm.png")
    box.locator("[data-testid=gmchat-reject]").click()  # let the turn end before the server stops


def shoot_chart(browser: Browser, lab: JupyterApp, tmp: Path, out: Path) -> None:
    """The offline provider's chart answer, in a notebook of its own."""
    page = browser.new_page(viewport={"width": 1200, "height": 1400}, device_scale_factor=2)
    source = write_notebook(
        tmp / "chart.ipynb", "A chart answer.", 'from gmchat_nb import Chat\nChat(store=":memory:")'
    )
    path = lab.add_notebook("gmchat-chart", source)
    open_notebook(page, lab.lab_url("chart-screenshot", path))
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    root = show_chat(page, CHAT_CELL)
    ask(page, "Chart the projects by status")
    chart = root.locator("[data-testid=gmchat-chart]").last
    expect(chart).to_have_attribute("data-state", "drawn", timeout=30_000)
    expect(chart.locator("svg g.mark-rect path")).to_have_count(3)
    card = root.locator("[data-testid=gmchat-tool][data-tool=query]").last
    if card.get_attribute("open") is not None:  # the chart under a folded card: both in view
        card.locator("summary").first.click()
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text("The chart shows")
    root.locator("[data-testid=gmchat-answer]").last.evaluate(
        "(el) => el.scrollIntoView({block: 'end'})"
    )
    settle(page)
    root.screenshot(path=out / "widget-chart.png", animations="disabled")
    print(out / "widget-chart.png")


def shoot_panel(browser: Browser, app: JupyterApp, out: Path) -> None:
    """JupyterLab with a notebook and the side panel on a finished turn, its evidence open."""
    page = browser.new_page(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
    notebook = app.add_notebook("parts")
    page.goto(app.lab_url("panel-screenshot", notebook))
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gmchat:open')",
        timeout=60_000,
    )
    expect(
        page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle")
    ).to_be_visible(timeout=60_000)
    # The file browser folded: room for the notebook next to the panel.
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    page.evaluate("() => window.jupyterapp.commands.execute('gmchat:open')")
    root = page.locator("#gmchat-panel [data-testid=gmchat-root]")
    # The sidebar opens narrow: widen it as a user would, by its handle.
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:visible").last
    box = handle.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] - 190, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    expect(root).to_have_attribute("data-sync", "snapshot", timeout=30_000)
    root.locator("[data-testid=gmchat-input]").fill(PANEL_QUESTION)
    root.locator("[data-testid=gmchat-send]").click()
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "the fewest (16)", timeout=30_000
    )
    evidence = root.locator("[data-testid=gmchat-evidence]").last
    expect(evidence).to_be_visible(timeout=30_000)
    evidence.locator("summary").click()
    expect(evidence.locator("[data-testid=gmchat-insert-cell]").first).to_be_visible()
    root.locator("[data-testid=gmchat-question]").last.evaluate(
        "(el) => el.scrollIntoView({block: 'start'})"
    )
    settle(page)
    page.screenshot(path=out / "panel.png", animations="disabled")
    print(out / "panel.png")


def shoot_panel_widths(browser: Browser, app: JupyterApp, out: Path) -> None:
    """The side panel alone at each of ``WIDTHS``: a turn's chart, answer and evidence, and the
    next turn's confirmation card, the sidebar sized by its handle."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    page.goto(app.lab_url("panel-widths"))
    root = open_panel(page)
    new_conversation(root)
    ask_panel(root, "Which parts are made of titanium? Chart their stock.")
    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text("Five parts", timeout=60_000)
    chart = root.locator("[data-testid=gmchat-chart][data-chart=drawn]").last
    expect(chart).to_have_attribute("data-state", "drawn", timeout=30_000)
    evidence = root.locator("[data-testid=gmchat-evidence]").last
    expect(evidence).to_be_visible(timeout=30_000)
    evidence.locator("summary").click()
    ask_panel(root, f"Add the part {PART}")
    box = root.locator("[data-testid=gmchat-confirm-box]").last
    expect(box).to_be_visible(timeout=60_000)
    for width in WIDTHS:
        set_sidebar_width(page, width)
        # the log at its end, as during the turn: the confirmation card, the evidence above it
        root.locator(".gmchat-log").evaluate("(log) => { log.scrollTop = log.scrollHeight; }")
        settle(page)
        path = out / f"panel-{width}.png"
        page.locator("#gmchat-panel").screenshot(path=path, animations="disabled")
        print(path)
    box.locator("[data-testid=gmchat-reject]").click()  # let the turn end before the server stops


def settle(page: Page) -> None:
    """No caret blinking or hover state in the picture."""
    page.mouse.move(0, 0)
    page.evaluate("document.activeElement && document.activeElement.blur()")


if __name__ == "__main__":
    raise SystemExit(main())

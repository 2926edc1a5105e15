"""The side panel fits JupyterLab's right sidebar, in a real JupyterLab driven by Debian's
chromium: at 300, 400 and 600 px wide (and at the width JupyterLab opens it with), with a turn
that shows every part a user sees (a query's card with its result, the chart the model drew and
the table's own chart, the evidence with its cell actions and → DataFrame, the export's status
line, the confirmation card of the next turn, the knowledge and agents drawers with their
forms), nothing reaches past the panel's right edge or is cut at it, no button or input is cut,
and no region of the panel scrolls sideways: long words wrap or scroll in their own box (a code
block, a result table, the chart). The header shows the server's project and provider. And
with a JupyterLab toast over the sidebar (as its news toast is), the input takes a click at its
centre and typed text.

The sidebar is sized as a user sizes it: by dragging the split handle between the main area and
the sidebar."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from ..jupyter_app import JupyterApp
from .conftest import _app
from .test_side_panel import ask, new_conversation, open_panel, wait_connected

WIDTHS = (300, 400, 600)
# long words: a part name with no place to break, a filter on a nested field
PART = "TitaniumBracketAssemblyLeftHandRevision0042ExtendedWarranty"
ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "id": "parts",
                "name": "query",
                "args": {
                    "manager": "Part",
                    "fields": ["name", "quantity", "unit_price", {"supplier": ["name", "country"]}],
                    "filters": {"material__name": "Titanium"},
                },
            }
        ]
    },
    {
        "tool_calls": [
            {
                "id": "drawn",
                "name": "chart",
                "args": {
                    "query": "parts",
                    "mark": "bar",
                    "x": "name",
                    "y": "quantity",
                    "title": "Titanium parts in stock, by name",
                },
            }
        ]
    },
    {"text": "Five parts are made of Titanium; the chart shows their stock."},
    {
        "tool_calls": [
            {
                "id": "create",
                "name": "mutate",
                "args": {"mutation": "createPart", "input": {"name": PART, "quantity": 4}},
            }
        ]
    },
    {"text": "Created."},
]
SETTINGS = {
    "allowed_mutations": ["createPart"],
    "confirm_mutations": ["createPart"],
    "confirm_timeout_seconds": 600,
    "injection": {"mutation_intent": False},
}
# JupyterLab's news toast, as it asks on a first start (the launcher turns news off: emitted here)
NEWS = "Would you like to receive official Jupyter news?\nPlease read the privacy policy."
NEWS_TOAST = {
    "message": NEWS,
    "type": "info",
    "options": {
        "autoClose": False,
        "actions": [
            {"label": label, "commandId": "apputils:display-notifications"}
            for label in ("Open privacy policy", "Yes", "No")
        ],
    },
}

# What does not fit, as sentences: everything visible in the panel, element by element and text
# by text. An element (or text) past the panel's right edge is wrong unless a box of its own
# inside the panel scrolls it or cuts it with "…" (a code block, a result table, the chart, a
# tool card's arguments); the panel's regions (the chat, the log, the drawers) are no such box:
# they must not scroll sideways. A button or input must be whole across (up and down it may be
# scrolled out of the log), but for a result table's column headings, which scroll with it.
# An empty input's placeholder must fit in it.
MISFITS = """(panel) => {
  const stack = panel.parentElement.getBoundingClientRect();
  const edge = Math.min(panel.getBoundingClientRect().right, stack.right) + 0.5;
  const REGIONS = ".gmchat, .gmchat-log, .gmchat-knowledge, .gmchat-agents";
  const CONTROLS = "button, input, textarea, select";
  const name = (el) => {
    const id = el.getAttribute("data-testid");
    const cls = String(el.className.baseVal ?? el.className).trim().split(/\\s+/)[0];
    return el.localName + (id ? `[${id}]` : cls ? `.${cls}` : "");
  };
  const where = (el) => {
    const path = [];
    for (let node = el; node && node !== panel && path.length < 4; node = node.parentElement) path.unshift(name(node));
    return path.join(" > ");
  };
  const clippers = (el) => {
    const found = [];
    for (let node = el.parentElement; node && node !== panel; node = node.parentElement) {
      if (getComputedStyle(node).overflowX !== "visible") found.push(node);
    }
    return found;
  };
  const ownBox = (el) => clippers(el).some((box) => {
    if (box.matches(REGIONS)) return false;
    const style = getComputedStyle(box);
    const scrolls = style.overflowX === "auto" || style.overflowX === "scroll" || style.textOverflow === "ellipsis";
    return scrolls && box.getBoundingClientRect().right <= edge;
  });
  const shown = (el) => !el.closest("[hidden]") && getComputedStyle(el).visibility !== "hidden";
  const problems = [];
  for (const region of panel.querySelectorAll(REGIONS)) {
    if (shown(region) && region.scrollWidth > region.clientWidth + 1) {
      problems.push(`${where(region)} scrolls sideways (${region.scrollWidth} > ${region.clientWidth} px)`);
    }
  }
  for (const el of panel.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height || !shown(el)) continue;
    if (box.right > edge && !ownBox(el)) problems.push(`${where(el)} reaches ${Math.round(box.right - edge)} px past the panel's right edge`);
    if (!el.matches(CONTROLS) || el.closest(".gmchat-table-scroll:not(.gmchat-evidence *)")) continue;
    for (const clip of clippers(el)) {
      const outer = clip.getBoundingClientRect();
      if (box.left < outer.left - 0.5 || box.right > outer.right + 0.5) problems.push(`${where(el)} is cut by ${where(clip)}`);
    }
  }
  const texts = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let text = texts.nextNode(); text; text = texts.nextNode()) {
    const parent = text.parentElement;
    if (!text.data.trim() || !parent || !shown(parent) || parent.closest("select, textarea, style")) continue;
    range.selectNodeContents(text);
    const past = [...range.getClientRects()].some((line) => line.width && line.right > edge);
    if (past && !ownBox(text)) problems.push(`the text "${text.data.trim().slice(0, 40)}" in ${where(parent)} is cut at the panel's right edge`);
  }
  const input = panel.querySelector("[data-testid=gmchat-input]");
  if (input && !input.value) {
    input.value = input.placeholder;  // (the height its placeholder takes, then empty again)
    const cut = input.scrollHeight > input.clientHeight + 1;
    input.value = "";
    if (cut) problems.push(`the input's placeholder is cut (${input.clientHeight} px of its ${input.scrollHeight})`);
  }
  return problems;
}"""


@pytest.fixture(scope="module")
def fits_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose model queries, charts and answers, then asks to create a part (which
    waits for a confirmation)."""
    yield from _app(tmp_path_factory, "fits-lab", rounds=ROUNDS, chat=SETTINGS)


def tid(root: Locator, testid: str) -> Locator:
    return root.locator(f"[data-testid={testid}]")


def set_sidebar_width(page: Page, width: int) -> None:
    """Drag the handle between the main area and the right sidebar until the panel is ``width``
    px wide (JupyterLab's split panel sizes the sidebar, as when a user drags it)."""
    panel = page.locator("#gmchat-panel")
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:visible").last
    for _attempt in range(4):
        box, grip = panel.bounding_box(), handle.bounding_box()
        assert box is not None and grip is not None
        if abs(box["width"] - width) < 0.5:
            return
        x, y = grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + box["width"] - width, y, steps=4)
        page.mouse.up()
    raise AssertionError(f"the sidebar would not take {width} px: {panel.bounding_box()}")


def misfits(page: Page, state: str) -> list[str]:
    width = round((page.locator("#gmchat-panel").bounding_box() or {"width": 0})["width"])
    found: list[str] = page.locator("#gmchat-panel").evaluate(MISFITS)
    return [f"{width} px, {state}: {problem}" for problem in found]


def play_a_turn_of_every_part(page: Page, root: Locator) -> None:
    """A finished turn (its query card and result open, the model's chart, the table's chart
    with its pickers, the evidence open), its export, and a second turn waiting for Confirm."""
    ask(root, "Which parts are made of titanium? Chart their stock.")
    expect(tid(root, "gmchat-answer").last).to_contain_text("Five parts", timeout=60_000)
    turn = tid(root, "gmchat-turn").last
    expect(turn.locator("[data-testid=gmchat-chart][data-chart=drawn]")).to_have_attribute(
        "data-state", "drawn", timeout=30_000
    )
    query = turn.locator("[data-testid=gmchat-tool][data-tool=query]")
    if query.get_attribute("open") is None:
        query.locator("summary").first.click()
    table = tid(query, "gmchat-table")
    tid(table, "gmchat-chart-button").click()
    expect(table.locator("[data-testid=gmchat-chart]").first).to_have_attribute(
        "data-state", "drawn", timeout=30_000
    )
    expect(tid(table, "gmchat-to-frame")).to_be_visible()
    evidence = tid(turn, "gmchat-evidence")
    expect(evidence).to_be_visible(timeout=30_000)
    evidence.locator("summary").click()
    tid(evidence, "gmchat-graphql-toggle").click()
    expect(tid(evidence, "gmchat-evidence-to-frame")).to_be_visible()
    tid(root, "gmchat-export").click()
    expect(tid(root, "gmchat-export-status")).to_contain_text("Exported to", timeout=30_000)
    ask(root, f"Add the part {PART}")
    expect(tid(root, "gmchat-confirm-box").last).to_be_visible(timeout=60_000)


def test_every_part_of_a_turn_fits_the_sidebar_at_300_400_and_600_px(
    page: Page, fits_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(fits_lab.lab_url("fits"))
    root = open_panel(page)
    new_conversation(root)
    # the header names the server's project and provider, as the widget's names its kernel's
    expect(tid(root, "gmchat-project")).to_have_text("demo:inventory")
    expect(tid(root, "gmchat-provider")).to_have_text("scripted")
    play_a_turn_of_every_part(page, root)

    problems: list[str] = []
    default = round((page.locator("#gmchat-panel").bounding_box() or {"width": 0})["width"])
    problems += misfits(page, f"as JupyterLab opened the sidebar ({default} px)")
    for width in WIDTHS:
        set_sidebar_width(page, width)
        problems += misfits(page, "a turn")
        for part in ("gmchat-project", "gmchat-provider"):  # shown whole, not cut with "…"
            expect(tid(root, part)).to_be_in_viewport(ratio=1)
        tid(root, "gmchat-knowledge-toggle").click()
        drawer = tid(root, "gmchat-knowledge")
        tid(drawer, "gmchat-knowledge-add-definition").click()
        expect(tid(drawer, "gmchat-knowledge-form")).to_be_visible()
        problems += misfits(page, "the knowledge drawer and its form")
        tid(drawer, "gmchat-knowledge-close").click()
        tid(root, "gmchat-agents-toggle").click()
        drawer = tid(root, "gmchat-agents")
        if tid(drawer, "gmchat-agents-secret").count() == 0:
            tid(drawer, "gmchat-agents-create").click()
            tid(drawer, "gmchat-agents-name").fill(f"Claude Code on {PART}")
            problems += misfits(page, "the agents drawer's form")
            tid(drawer, "gmchat-agents-create-submit").click()
        expect(tid(drawer, "gmchat-agents-config")).to_be_visible(timeout=30_000)
        problems += misfits(page, "the agents drawer with a new token's secret")
        tid(drawer, "gmchat-agents-close").click()
        tid(root, "gmchat-confirm-box").last.scroll_into_view_if_needed()
        problems += misfits(page, "the confirmation card in view")
    assert not problems, "the panel does not fit:\n" + "\n".join(problems)
    tid(root, "gmchat-reject").last.click()  # (the turn ends before the server stops)


def test_the_input_takes_a_click_and_text_with_a_toast_over_the_sidebar(
    page: Page, fits_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(fits_lab.lab_url("toast"))
    root = open_panel(page)  # (as JupyterLab opens the sidebar: its narrowest)
    wait_connected(root)
    page.evaluate(
        "(args) => window.jupyterapp.commands.execute('apputils:notify', args)", NEWS_TOAST
    )
    card = page.locator(".jp-toastContainer > *").filter(has_text="receive official Jupyter news")
    toast = card.get_by_text("Would you like to receive official Jupyter news?")
    expect(toast).to_be_visible(timeout=10_000)
    # the toast has come in and rests over the sidebar's bottom, where the input was (else this
    # test proves nothing)
    page.wait_for_function(
        """([panel, toast]) => {
          const a = panel.getBoundingClientRect(), b = toast.getBoundingClientRect();
          const over = b.left < a.right && a.left < b.right && b.top < a.bottom && a.top < b.bottom;
          const moving = toast.getAnimations({ subtree: true }).some((a) => a.playState === "running");
          return over && !moving;
        }""",
        arg=[page.locator("#gmchat-panel").element_handle(), card.element_handle()],
        timeout=15_000,
    )
    message = tid(root, "gmchat-input")
    # the input's centre is the input's, not the toast's (once the panel has made room)
    page.wait_for_function(
        """(input) => {
          const box = input.getBoundingClientRect();
          return document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2) === input;
        }""",
        arg=message.element_handle(),
        timeout=10_000,
    )
    message.click()  # (Playwright clicks the centre, and refuses when something else is there)
    expect(message).to_be_focused()
    page.keyboard.type("Which parts are made of titanium?")
    expect(message).to_have_value("Which parts are made of titanium?")
    tid(root, "gmchat-send").click(trial=True)  # Send can be clicked too
    expect(toast).to_be_visible()  # (still showing: the panel made room, nothing closed it)
    # when the toast goes, the input goes back down to the panel's bottom
    card.locator(".jp-Notification-Toast-Close").click()
    expect(toast).to_be_hidden(timeout=10_000)
    expect(page.locator("#gmchat-panel")).not_to_have_attribute(
        "style", re.compile("--gmchat-toast-clearance"), timeout=10_000
    )

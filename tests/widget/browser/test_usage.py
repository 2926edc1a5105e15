"""The header's cost and context gauge in a real JupyterLab and browser: a scripted provider
priced by the ``prices`` setting (the override keyed by its label, ``scripted``, with a context
window of 10,000 tokens), so each turn's ``done`` carries a cost and a context share. The first
turn fills 73% of the window (the gauge warns), the second 92% (its error state); the header adds
the turns' costs, and a reload (a replay from the saved view, then a snapshot) shows the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from .lab import ask, chat_widget, save_notebook, show_chat, wait_for_kernel_idle, write_notebook

CHAT_CELL = 1
# $1 per million input tokens, $2 per million output tokens, a 10,000-token window:
# turn 1: 7,200 in + 100 out = $0.0074, 73% of the window; turn 2: 9,100 + 100 = $0.0093, 92%.
ROUNDS = [
    {"text": "First answer.", "usage": {"input_tokens": 7200, "output_tokens": 100}},
    {"text": "Second answer.", "usage": {"input_tokens": 9100, "output_tokens": 100}},
]
PRICES = {"scripted": {"input": 1.0, "output": 2.0, "context_window": 10000}}
NOTEBOOK = f"""from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

chat = Chat(
    provider=ScriptedProvider({{"rounds": {json.dumps(ROUNDS)}}}),
    store=":memory:",
    prices={json.dumps(PRICES)},
)
chat
"""


@pytest.fixture
def usage_notebook(tmp_path: Path) -> Path:
    return write_notebook(tmp_path / "usage.ipynb", "Browser test: cost and context.", NOTEBOOK)


def answered(root: Locator, question: str, words: str) -> None:
    ask(root.page, question)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(words, timeout=20_000)
    expect(root).to_have_attribute("data-busy", "false")


def check_gauge(root: Locator, percent: int, state: str) -> None:
    gauge = root.locator("[data-testid=gmchat-usage-header] [data-testid=gmchat-context]")
    expect(gauge).to_have_attribute("data-state", state)
    expect(gauge).to_have_attribute("role", "meter")
    expect(gauge).to_have_attribute("aria-valuenow", str(percent))
    expect(gauge).to_have_attribute("aria-valuemin", "0")
    expect(gauge).to_have_attribute("aria-valuemax", "100")
    valuetext = gauge.get_attribute("aria-valuetext") or ""
    assert valuetext.startswith(f"{percent}% of the context window"), valuetext
    expect(gauge.locator("[data-testid=gmchat-context-value]")).to_have_text(f"context {percent}%")
    # the page's role tree has the meter, named, with its value
    expect(root.get_by_role("meter", name="Context window used")).to_have_count(1)
    weight = gauge.locator("[data-testid=gmchat-context-value]").evaluate(
        "(el) => getComputedStyle(el).fontWeight"
    )
    assert weight in ("600", "bold"), weight  # the warning and error states stand out


def check_both_turns(root: Locator) -> None:
    header = root.locator("[data-testid=gmchat-usage-header]")
    expect(header).to_be_visible()
    turn = header.locator("[data-testid=gmchat-cost-turn]")
    total = header.locator("[data-testid=gmchat-cost-total]")
    expect(turn).to_have_text("$0.0093")
    expect(total).to_have_text("$0.0167")
    title = total.get_attribute("title") or ""
    assert title.startswith("Conversation (2 turns): $0.0167\n"), title
    assert "Tokens: 16,300 input, 200 output, 0 cache read, 0 cache write, 0 reasoning" in title
    assert "Requests: 2\nModels: scripted\nPrices: override" in title, title
    check_gauge(root, 92, "error")


def test_the_header_shows_each_turn_s_cost_the_conversation_s_and_the_context_gauge(
    open_lab: Callable[[str | Path], Page], usage_notebook: Path
) -> None:
    page = open_lab(usage_notebook)
    root = show_chat(page, CHAT_CELL)
    header = root.locator("[data-testid=gmchat-usage-header]")
    expect(header).to_be_hidden()  # no turn, no cost

    answered(root, "First question", "First answer.")
    expect(header).to_be_visible()
    expect(header.locator("[data-testid=gmchat-cost-turn]")).to_have_text("$0.0074")
    expect(header.locator("[data-testid=gmchat-cost-total]")).to_have_text("$0.0074")
    title = header.locator("[data-testid=gmchat-cost-turn]").get_attribute("title") or ""
    assert title.startswith("Last turn (turn 1): $0.0074\nTokens: 7,200 input, 100 output"), title
    check_gauge(root, 73, "warning")
    # the header sits in the widget's header row, beside its buttons
    assert header.evaluate("(el) => el.closest('.gmchat-header') !== null")

    answered(root, "Second question", "Second answer.")
    check_both_turns(root)

    # a reload restores the view from its saved records (a replay) ...
    save_notebook(page)
    page.reload()
    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_have_attribute("data-sync", "replay", timeout=30_000)
    check_both_turns(root)

    # ... and from the kernel's snapshot when the saved view is gone
    cleared = page.evaluate(
        """() => Object.keys(sessionStorage).filter((k) => k.startsWith('gmchat:'))
            .map((k) => (sessionStorage.removeItem(k), k))"""
    )
    assert len(cleared) == 1, cleared
    page.reload()
    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_have_attribute("data-sync", "snapshot", timeout=30_000)
    check_both_turns(root)

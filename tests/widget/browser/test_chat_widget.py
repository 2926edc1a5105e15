"""The chat widget in a real JupyterLab and a real browser (Debian chromium).

Each test opens its own copy of a notebook from ``notebooks/`` whose ScriptedProvider plays the
scenario, runs the cell that displays the chat and works the panel through its ``data-testid``
hooks, the way an analyst would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from .cards import expect_escaped_and_reject
from .lab import (
    ask,
    cell_output,
    chat_widget,
    run_cell,
    save_notebook,
    show_chat,
    wait_for_kernel_idle,
)

# Cell indices in the notebooks (cell 0 is a markdown note).
CHAT_CELL, CHECK_CELL = 1, 2
MATERIALS = ["Steel", "Aluminum", "Cobalt", "Titanium", "Copper", "Brass", "Nylon", "Lead"]
QUESTION = "Which materials are in the inventory?"
LAST_WORDS = "Only Lead is hazardous."

# Records every text the (latest) answer element shows, to prove it grew while the turn ran.
RECORD_ANSWER_TEXTS = """(root) => {
    window.__answerTexts = [];
    const record = () => {
        const answers = root.querySelectorAll('[data-testid=gmchat-answer]');
        const text = answers.length ? answers[answers.length - 1].textContent : '';
        const seen = window.__answerTexts;
        if (text && seen[seen.length - 1] !== text) seen.push(text);
    };
    new MutationObserver(record).observe(root, {subtree: true, childList: true, characterData: true});
}"""


# Records every (tool, status, duration text) the tool cards show, to see the states in between.
RECORD_TOOL_CARDS = """(root) => {
    window.__toolCards = [];
    const record = () => {
        const cards = [...root.querySelectorAll('[data-testid=gmchat-tool]')].map((card) => [
            card.dataset.tool,
            card.dataset.status,
            card.querySelector('[data-testid=gmchat-tool-duration]').textContent,
        ]);
        const state = JSON.stringify(cards);
        const seen = window.__toolCards;
        if (seen[seen.length - 1] !== state) seen.push(state);
    };
    new MutationObserver(record).observe(root, {subtree: true, childList: true, characterData: true,
        attributes: true});
}"""
DURATION = re.compile(r"^(<1|\d+(?:\.\d+)?) (\u00b5s|ms|s)$")
UNIT_MS = {"\u00b5s": 0.001, "ms": 1.0, "s": 1000.0}


def shown_ms(text: str) -> float:
    """A card's duration text (``41 µs``, ``3.4 ms``, ``308 ms``, ``1.2 s``) in milliseconds."""
    match = DURATION.match(text)
    assert match is not None, f"not a duration: {text!r}"
    number = 0.0 if match[1] == "<1" else float(match[1])
    return number * UNIT_MS[match[2]]


def open_result_table(root: Locator) -> Locator:
    """The latest query's table, shown: it sits in the query's tool card, which starts folded."""
    card = root.locator("[data-testid=gmchat-tool][data-tool=query]").last
    expect(card.locator("[data-testid=gmchat-table]")).to_have_count(1, timeout=15_000)
    if card.get_attribute("open") is None:
        card.locator("summary").first.click()
    table = card.locator("[data-testid=gmchat-table]")
    expect(table).to_be_visible()
    return table


def column(table: Locator, index: int = 0) -> list[str]:
    cells = table.locator(f"tbody tr td:nth-child({index + 1})")
    return [text.strip() for text in cells.all_inner_texts()]


def test_a_question_streams_an_answer_and_a_result_table(
    open_lab: Callable[[str], Page],
) -> None:
    page = open_lab("answer.ipynb")
    root = show_chat(page, CHAT_CELL)
    root.evaluate(RECORD_ANSWER_TEXTS)

    ask(page, QUESTION)

    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text(LAST_WORDS, timeout=15_000)
    expect(answer).to_contain_text("8 materials")
    expect(root.locator("[data-testid=gmchat-question]").last).to_have_text(QUESTION)
    table = open_result_table(root)
    expect(table.locator("tbody tr")).to_have_count(len(MATERIALS))
    assert column(table) == MATERIALS
    expect(root.locator("[data-testid=gmchat-evidence]").last).to_contain_text("1 query")
    # The first words were on screen before the last ones arrived (0.5 s later).
    texts: list[str] = page.evaluate("window.__answerTexts")
    assert any("Let me look" in text and LAST_WORDS not in text for text in texts), texts


def test_tool_cards_show_how_long_each_tool_ran_in_the_kernel(
    open_lab: Callable[[str], Page],
) -> None:
    """The query is held 0.3 s in the kernel; the search before it is quick. Each card shows its
    own tool's time, announced as the call starts, and a card waiting for its result says so."""
    page = open_lab("durations.ipynb")
    root = show_chat(page, CHAT_CELL)
    root.evaluate(RECORD_TOOL_CARDS)

    ask(page, "Which materials are there?")

    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "8 materials", timeout=15_000
    )
    search = root.locator("[data-testid=gmchat-tool][data-tool=search_managers]")
    query = root.locator("[data-testid=gmchat-tool][data-tool=query]")
    expect(search).to_have_attribute("data-status", "ok")
    expect(query).to_have_attribute("data-status", "ok")
    search_ms = shown_ms(search.locator("[data-testid=gmchat-tool-duration]").inner_text())
    query_ms = shown_ms(query.locator("[data-testid=gmchat-tool-duration]").inner_text())
    assert query_ms >= 300, query_ms  # the hold, measured around the query in the kernel
    assert search_ms < 300, search_ms  # not the query's hold, nor the round's
    # While the query was held, its card said it was running and showed no time yet, and the
    # search (run and reported before the query started) already showed its own.
    states = [
        [tuple(card) for card in json.loads(state)] for state in page.evaluate("window.__toolCards")
    ]
    held = [
        cards
        for cards in states
        if len(cards) == 2 and cards[1][:2] == ("query", "running") and cards[1][2] == ""
    ]
    assert held, states
    assert all(cards[0][:2] == ("search_managers", "ok") and cards[0][2] for cards in held), held


def test_to_dataframe_binds_the_result_in_the_kernel(open_lab: Callable[[str], Page]) -> None:
    page = open_lab("answer.ipynb")
    root = show_chat(page, CHAT_CELL)
    ask(page, QUESTION)
    table = open_result_table(root)

    table.locator("[data-testid=gmchat-frame-name]").fill("mats")
    table.locator("[data-testid=gmchat-to-frame]").click()

    expect(table.locator("[data-testid=gmchat-frame-bound]")).to_contain_text("mats")
    run_cell(page, CHECK_CELL)
    expect(cell_output(page, CHECK_CELL)).to_have_text(
        "(8, 3) ['Steel', 'Aluminum', 'Cobalt']", timeout=15_000
    )


def _decide(page: Page, button: str) -> Locator:
    """Ask for the Spring part, check the confirmation box, press one of its buttons."""
    root = show_chat(page, CHAT_CELL)
    ask(page, "Create a part called Spring")
    box = root.locator("[data-testid=gmchat-confirm-box]")
    expect(box).to_be_visible(timeout=15_000)
    expect(box).to_contain_text("createPart")
    expect(box).to_contain_text("Spring")

    box.locator(f"[data-testid={button}]").click()

    # Each box decides once ...
    expect(box.locator("[data-testid=gmchat-confirm]")).to_be_disabled()
    expect(box.locator("[data-testid=gmchat-reject]")).to_be_disabled()
    # ... and the kernel acted on it. JupyterLab delivers this click's message on a kernel
    # subshell thread; a widget that resolves the waiting future from there (without hopping to
    # the kernel's loop) leaves the turn hanging until some later cell wakes the loop, so this
    # is the check that catches it (the data check below would pass late).
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Handled the request for the part Spring.", timeout=15_000
    )
    return box


def test_confirming_a_mutation_runs_it_once(open_lab: Callable[[str], Page]) -> None:
    page = open_lab("confirm.ipynb")
    box = _decide(page, "gmchat-confirm")
    expect(box).to_contain_text("applied")
    run_cell(page, CHECK_CELL)
    expect(cell_output(page, CHECK_CELL)).to_have_text("Spring parts: 1", timeout=15_000)


def test_a_bidi_override_in_a_pending_change_shows_as_an_escape(
    open_lab: Callable[[str | Path], Page], tmp_path: Path
) -> None:
    """The model asks to create "invoice\u202efdp.exe" (read "invoice…exe.pdf" on screen): the
    card writes the right-to-left override out, so what it shows is what would be stored."""
    notebook = json.loads((Path(__file__).parent / "notebooks" / "confirm.ipynb").read_text())
    setup = notebook["cells"][CHAT_CELL]
    source = "".join(setup["source"])
    assert '{"name": "Spring"}' in source
    # The notebook's Python source spells the override as an escape.
    setup["source"] = source.replace('{"name": "Spring"}', '{"name": "invoice\\u202efdp.exe"}')
    copy = tmp_path / "confirm_bidi.ipynb"
    copy.write_text(json.dumps(notebook))
    page = open_lab(copy)
    root = show_chat(page, CHAT_CELL)
    ask(page, "Create a part called invoice")
    expect_escaped_and_reject(root.locator("[data-testid=gmchat-confirm-box]"), 15_000)


def test_rejecting_a_mutation_leaves_the_data_unchanged(open_lab: Callable[[str], Page]) -> None:
    page = open_lab("confirm.ipynb")
    box = _decide(page, "gmchat-reject")
    expect(box).to_contain_text("rejected")
    expect(box).not_to_contain_text("applied")
    run_cell(page, CHECK_CELL)
    expect(cell_output(page, CHECK_CELL)).to_have_text("Spring parts: 0", timeout=15_000)


def test_a_page_reload_restores_the_transcript(open_lab: Callable[[str], Page]) -> None:
    page = open_lab("answer.ipynb")
    root = show_chat(page, CHAT_CELL)
    ask(page, QUESTION)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        LAST_WORDS, timeout=15_000
    )
    save_notebook(page)  # the saved output names the widget; the kernel still holds its model

    page.reload()

    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_be_visible(timeout=30_000)
    expect(root.locator("[data-testid=gmchat-question]")).to_have_text([QUESTION], timeout=15_000)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(LAST_WORDS)
    assert column(open_result_table(root)) == MATERIALS


def test_markup_from_the_model_and_the_data_renders_as_inert_text(
    open_lab: Callable[[str], Page], dialogs: list[str]
) -> None:
    page = open_lab("injection.ipynb")
    root = show_chat(page, CHAT_CELL)
    question = 'Parts named <img src=x onerror="window.__pwned=5">?'

    ask(page, question)

    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text('Part: <b id="injected">x</b>', timeout=15_000)
    # The payloads show as the characters the model sent.
    expect(answer).to_contain_text('<img src=x onerror="window.__pwned=1">')
    expect(answer).to_contain_text("<script>window.__pwned=2</script>")
    expect(answer).to_contain_text("Link: click")  # a javascript: link keeps only its label
    expect(answer).to_contain_text("<svg onload=alert(4)></svg>")
    expect(root.locator("[data-testid=gmchat-question]").last).to_have_text(question)
    table = open_result_table(root)
    expect(table.locator("tbody td").first).to_have_text('<b id="injected">x</b>')
    # ... and none of it ran or became markup.
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("#injected").count() == 0
    active = root.evaluate(
        """(root) => [...root.querySelectorAll('*')].flatMap((node) =>
            [...node.attributes]
                .filter((a) => a.name.startsWith('on') || /^\\s*javascript:/i.test(a.value))
                .map((a) => `<${node.localName} ${a.name}="${a.value}">`))"""
    )
    assert active == []
    turn = root.locator("[data-testid=gmchat-turn]")
    assert turn.locator("script, img, svg, iframe, object, embed, b").count() == 0
    assert dialogs == []

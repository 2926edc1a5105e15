"""The gmchat side panel in a real JupyterLab (and Notebook 7), driven by Debian's chromium: the
labextension this checkout builds, the server extension's durable routes, a scripted model and
the demo project. Nothing of ours is mocked."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from ..jupyter_app import JupyterApp
from ..widget.browser.cards import expect_escaped_and_reject
from .conftest import ANSWER_CHUNKS

QUESTION = "Which parts have markup in their names?"
LAST_WORDS = "Done."
PANEL = "#gmchat-panel [data-testid=gmchat-root]"
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"


# -- page actions ----------------------------------------------------------------------------------


def open_panel(page: Page) -> Locator:
    """Run "Open gmchat" from the command palette; the panel once it shows."""
    # (the plugins are active once the app is exposed and our command exists)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gmchat:open')",
        timeout=60_000,
    )
    root = page.locator(PANEL)
    search = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-input")
    item = page.locator(".lm-CommandPalette-item[data-command='gmchat:open']")
    for _attempt in range(3):  # (the modal palette can close again while the shell settles)
        page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:activate-command-palette')"
        )
        try:
            expect(search).to_be_visible(timeout=5_000)
            search.fill("Open gmchat", timeout=5_000)
            expect(item).to_have_text(re.compile(r"^Open gmchat"), timeout=5_000)
            # (the palette re-renders its items as commands change: Enter runs the active one)
            expect(item).to_have_class(re.compile(r"\blm-mod-active\b"), timeout=5_000)
            page.keyboard.press("Enter")
            expect(root).to_be_visible(timeout=10_000)
            return root
        except (AssertionError, PlaywrightTimeoutError):
            page.keyboard.press("Escape")
    expect(root).to_be_visible()
    return root


def panel_after_reload(page: Page) -> Locator:
    """The panel once the reloaded page shows it (the layout restorer does; the command as well
    when the workspace was saved before the panel was opened)."""
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gmchat:open')",
        timeout=60_000,
    )
    root = page.locator(PANEL)
    try:
        expect(root).to_be_visible(timeout=15_000)
    except AssertionError:
        page.evaluate("() => window.jupyterapp.commands.execute('gmchat:open')")
        expect(root).to_be_visible(timeout=30_000)
    return root


def wait_connected(root: Locator) -> int:
    """The panel has shown its first snapshot; how many snapshots it has shown."""
    expect(root).to_have_attribute("data-sync", "snapshot", timeout=30_000)
    return int(root.get_attribute("data-snapshots") or 0)


def new_conversation(root: Locator) -> None:
    """Press New and wait for the (empty) conversation's snapshot."""
    before = wait_connected(root)
    root.locator("[data-testid=gmchat-new]").click()
    expect(root).to_have_attribute("data-snapshots", str(before + 1), timeout=30_000)
    expect(root.locator("[data-testid=gmchat-turn]")).to_have_count(0)


def ask(root: Locator, question: str) -> None:
    root.locator("[data-testid=gmchat-input]").fill(question)
    root.locator("[data-testid=gmchat-send]").click()


def conversation_of(page: Page) -> str:
    """The conversation the panel shows (what it remembers in localStorage)."""
    base = page.locator("#gmchat-panel").get_attribute("data-gmchat-url")
    value = page.evaluate("(key) => localStorage.getItem(key)", f"gmchat:{base}:conversation")
    assert isinstance(value, str) and value
    return value


def open_evidence(root: Locator) -> Locator:
    evidence = root.locator("[data-testid=gmchat-evidence]").last
    expect(evidence).to_be_visible(timeout=30_000)
    evidence.locator("summary").click()
    return evidence


# -- tests -----------------------------------------------------------------------------------------


def test_the_palette_opens_the_panel_and_the_answer_streams_into_it(
    page: Page, answers_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(answers_lab.lab_url("palette"))
    root = open_panel(page)
    tab = page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id=gmchat-panel]")
    expect(tab).to_have_text("gmchat")
    expect(root.locator("[data-testid=gmchat-input]")).to_have_attribute(
        "placeholder", re.compile(r"^Ask about the data")
    )
    new_conversation(root)

    ask(root, QUESTION)

    answer = root.locator("[data-testid=gmchat-answer]").last
    seen: list[str] = []
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        text = answer.text_content() or ""
        if not seen or text != seen[-1]:
            seen.append(text)
        if LAST_WORDS in text:
            break
        time.sleep(0.05)
    final = seen[-1]
    assert final.rstrip().endswith(LAST_WORDS), seen[-3:]
    growing = [text for text in seen if text.strip() and LAST_WORDS not in text]
    assert len(growing) >= 2, f"the answer did not grow while it streamed: {seen}"
    assert all(final.startswith(text.rstrip()) for text in growing)
    # The query's rows: a table that says how many rows the panel holds of how many there are.
    table = root.locator("[data-testid=gmchat-table]")
    expect(table).to_contain_text(re.compile(r"\d+ of \d+ rows"))
    expect(table.locator("tbody td").first).to_have_text('<b id="injected">x</b>')
    expect(root).to_have_attribute("data-busy", "false")
    # The header's cost, as in the widget: a scripted model charges nothing, its window is unknown.
    header = root.locator("[data-testid=gmchat-usage-header]")
    expect(header.locator("[data-testid=gmchat-cost-turn]")).to_have_text("$0.00 (scripted)")
    expect(header.locator("[data-testid=gmchat-cost-total]")).to_have_text("$0.00 (scripted)")
    expect(header.locator("[data-testid=gmchat-context-value]")).to_have_text("context: \u2014")
    # With no notebook open, inserting says why it cannot.
    evidence = open_evidence(root)
    evidence.locator("[data-testid=gmchat-insert-cell]").click()
    expect(evidence.locator("[data-testid=gmchat-cell-status]")).to_contain_text(
        "No notebook is open"
    )


def test_markup_from_the_model_and_the_data_stays_inert_text(
    page: Page, answers_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(answers_lab.lab_url("injection"))
    root = open_panel(page)
    new_conversation(root)
    question = 'Parts named <img src=x onerror="window.__pwned=5">?'

    ask(root, question)

    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text(LAST_WORDS, timeout=40_000)
    expect(answer).to_contain_text('<img src=x onerror="window.__pwned=1">')
    expect(answer).to_contain_text("<script>window.__pwned=2</script>")
    expect(answer).to_contain_text("Link: click")  # a javascript: link keeps only its label
    expect(answer).to_contain_text("<svg onload=alert(4)></svg>")
    expect(root.locator("[data-testid=gmchat-question]").last).to_have_text(question)
    table = root.locator("[data-testid=gmchat-table]")
    expect(table.locator("tbody td").first).to_have_text('<b id="injected">x</b>')
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


def test_a_reload_mid_turn_finishes_the_turn_without_a_gap_or_a_duplicate(
    page: Page, answers_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(answers_lab.lab_url("reload"))
    root = open_panel(page)
    new_conversation(root)
    ask(root, QUESTION)
    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text("p3 ", timeout=30_000)
    assert LAST_WORDS not in (answer.text_content() or "")
    conversation = conversation_of(page)

    page.goto(answers_lab.lab_url("reload", reset=False))  # the same workspace, reloaded

    # The layout restorer shows the panel again, on the conversation it showed.
    root = page.locator(PANEL)
    expect(root).to_be_visible(timeout=60_000)
    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text(LAST_WORDS, timeout=40_000)
    assert conversation_of(page) == conversation
    expect(root.locator("[data-testid=gmchat-question]")).to_have_text([QUESTION])
    text = answer.text_content() or ""
    for chunk in ANSWER_CHUNKS[1:31]:  # every streamed word once: no gap, no duplicate
        assert text.count(chunk) == 1, (chunk, text)
    expect(root.locator("[data-testid=gmchat-table]")).to_have_count(1)
    expect(root.locator("[data-testid=gmchat-tool]")).to_have_count(2)


def test_confirming_a_mutation_in_the_panel_runs_it_once(
    page: Page, confirm_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(confirm_lab.lab_url("confirm"))
    root = open_panel(page)
    new_conversation(root)

    ask(root, "Add a part called Spring")

    box = root.locator("[data-testid=gmchat-confirm-box]")
    expect(box).to_be_visible(timeout=30_000)
    expect(box).to_contain_text("createPart")
    expect(box).to_contain_text("Spring")
    box.locator("[data-testid=gmchat-confirm]").click()
    expect(box.locator("[data-testid=gmchat-confirm]")).to_be_disabled()
    expect(box.locator("[data-testid=gmchat-reject]")).to_be_disabled()
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Handled the request for the part Spring.", timeout=30_000
    )
    expect(box).to_contain_text("applied")
    journal = confirm_lab.journal(conversation_of(page))
    results = [e for e in journal if e["type"] == "tool_result" and e.get("id") == "call-1"]
    assert len(results) == 1, journal
    assert [e["type"] for e in journal].count("done") == 1


def test_a_bidi_override_in_a_pending_change_shows_as_an_escape_in_the_panel(
    page: Page, confirm_bidi_lab: JupyterApp, dialogs: list[str]
) -> None:
    """The card writes the right-to-left override of "invoice\u202efdp.exe" out, with a
    warning, so it cannot show "invoice…exe.pdf" for what would be stored."""
    page.goto(confirm_bidi_lab.lab_url("confirm-bidi"))
    root = open_panel(page)
    new_conversation(root)

    ask(root, "Add a part called invoice")

    expect_escaped_and_reject(root.locator("[data-testid=gmchat-confirm-box]"), 30_000)


def test_a_reload_right_after_confirm_does_not_interrupt_the_turn(
    page: Page, confirm_lab: JupyterApp, dialogs: list[str]
) -> None:
    """The page goes away while ``POST confirm/`` waits for the resumed turn: the durable turn
    runs on, and the reloaded panel shows it finished, its mutation run once."""
    page.goto(confirm_lab.lab_url("confirm-reload"))
    root = open_panel(page)
    new_conversation(root)
    ask(root, "Add a part called Spring, then reload")
    box = root.locator("[data-testid=gmchat-confirm-box]")
    expect(box).to_be_visible(timeout=30_000)
    conversation = conversation_of(page)
    box.locator("[data-testid=gmchat-confirm]").click()
    deadline = time.monotonic() + 15  # the mutation ran: the confirm request is being answered
    while not any(e.get("id") == "call-1" and e["type"] == "tool_result"
                  for e in confirm_lab.journal(conversation)):  # fmt: skip
        assert time.monotonic() < deadline, "the confirmation was not sent"
        time.sleep(0.05)

    page.goto(confirm_lab.lab_url("confirm-reload", reset=False))  # at once: the answer is 2 s off

    root = panel_after_reload(page)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Handled the request for the part Spring.", timeout=30_000
    )
    assert conversation_of(page) == conversation
    journal = confirm_lab.journal(conversation)
    results = [e for e in journal if e["type"] == "tool_result" and e.get("id") == "call-1"]
    assert len(results) == 1, journal
    assert results[0]["result"]["status"] == "executed"
    assert [e["type"] for e in journal][-1] == "done"
    assert not [e for e in journal if e.get("code") == "interrupted"], journal


def test_a_question_asked_elsewhere_shows_its_text(
    page: Page, confirm_lab: JupyterApp, dialogs: list[str]
) -> None:
    """Turns another client admits in the panel's conversation show their questions live, and
    after a reload that forgot this browser's questions: they come from the turns route (the
    second is not the conversation's title)."""
    page.goto(confirm_lab.lab_url("elsewhere"))
    root = open_panel(page)
    new_conversation(root)
    conversation = conversation_of(page)
    questions = [
        "Asked from another browser: add a part called Spring",
        "And a second question from there",  # (refused: the first waits for its confirmation)
    ]
    for number, question in enumerate(questions):
        turn = {"conversation_id": conversation, "turn_id": f"elsewhere-{number}-{time.time_ns()}"}
        confirm_lab.post("gmchat/chat/turns/", {**turn, "text": question})
        shown = root.locator("[data-testid=gmchat-question]")
        expect(shown).to_have_text(questions[: number + 1], timeout=30_000)
    base = page.locator("#gmchat-panel").get_attribute("data-gmchat-url")
    page.evaluate("(key) => localStorage.removeItem(key)", f"gmchat:{base}:questions")
    page.goto(confirm_lab.lab_url("elsewhere", reset=False))
    root = panel_after_reload(page)
    expect(root.locator("[data-testid=gmchat-question]")).to_have_text(questions, timeout=60_000)


def test_evidence_rows_insert_cells_into_the_active_notebook(
    page: Page, answers_lab: JupyterApp, dialogs: list[str]
) -> None:
    path = answers_lab.add_notebook("insert")
    page.goto(answers_lab.lab_url("insert", path))
    expect(page.locator("#jp-main-statusbar").get_by_text(KERNEL_IDLE)).to_be_visible(
        timeout=60_000
    )
    page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1).locator(".jp-InputPrompt").click()
    root = open_panel(page)
    new_conversation(root)
    ask(root, QUESTION)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        LAST_WORDS, timeout=40_000
    )
    conversation = conversation_of(page)
    turn_id = answers_lab.journal(conversation)[0]["turn_id"]
    evidence = open_evidence(root)
    served = answers_lab.get(f"gmchat/chat/conversations/{conversation}/turns/{turn_id}/evidence")
    code = next(row["code"] for row in served["evidence"] if row.get("code"))

    evidence.locator("[data-testid=gmchat-insert-cell]").first.click()
    expect(evidence.locator("[data-testid=gmchat-cell-status]").first).to_contain_text("inserted")
    evidence.locator("[data-testid=gmchat-evidence-frame-name]").first.fill("parts")
    evidence.locator("[data-testid=gmchat-evidence-to-frame]").first.click()
    expect(evidence.locator("[data-testid=gmchat-cell-status]").first).to_contain_text(
        "binding parts"
    )

    sources = page.evaluate(
        """() => {
            const panel = [...window.jupyterapp.shell.widgets('main')].find((w) => w.content && w.content.model);
            return panel.content.model.sharedModel.cells.map((cell) => [cell.cell_type, cell.getSource()]);
        }"""
    )
    # below cell 1 (the active one): the query's code, then (below it) the DataFrame binding
    assert sources[2] == ["code", code]
    assert sources[3][0] == "code"
    assert sources[3][1].endswith("parts = frame\nparts")
    assert sources[3][1].startswith(code.rsplit("\nframe", 1)[0])


def test_without_the_server_extension_the_panel_says_how_to_enable_it(
    page: Page, bare_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(bare_lab.lab_url("bare"))
    root = open_panel(page)
    error = root.locator("[data-testid=gmchat-error]")
    expect(error).to_be_visible(timeout=30_000)
    expect(error).to_contain_text("The gmchat server extension is not enabled")
    expect(error).to_contain_text("jupyter server extension enable gmchat_nb")
    expect(error).to_have_attribute("data-code", "extension_missing")


def test_notebook_7_shows_the_panel_in_its_right_sidebar(
    page: Page, notebook7: JupyterApp, dialogs: list[str]
) -> None:
    path = notebook7.add_notebook("nb7")
    page.goto(f"{notebook7.url}/notebooks/{path}?token={notebook7.token}")
    expect(page.locator(".jp-NotebookPanel")).to_be_visible(timeout=60_000)
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.commands.hasCommand('gmchat:open')",
        timeout=60_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('gmchat:open')")
    root = page.locator(f"#jp-right-stack {PANEL}")
    expect(root).to_be_visible(timeout=30_000)
    wait_connected(root)
    expect(root.locator("[data-testid=gmchat-input]")).to_have_attribute(
        "placeholder", re.compile(r"^Ask about the data")
    )

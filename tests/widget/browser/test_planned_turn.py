"""A planned (orchestrated) turn in the chat widget, in a real JupyterLab and browser.

No provider can run a planned turn yet (the engine is being written), so the notebook's chat is
``tests/widget/planned.py``'s :class:`PlannedReplay`: a real ``Chat`` on the demo project whose
turn plays recorded planned events (its query runs for real). The test builds the notebook from
that module's source, since the kernel cannot import ``tests``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from .. import planned
from .lab import ask, chat_widget, run_cell, show_chat, write_notebook

CHAT_CELL, SECOND_VIEW_CELL = 1, 2
LAST_WORDS = "I found no data about vehicles."


def planned_notebook(folder: Path) -> Path:
    """A notebook whose cell 1 shows a PlannedReplay chat and cell 2 shows it again."""
    source = Path(planned.__file__).read_text(encoding="utf-8")
    return write_notebook(
        folder / "planned.ipynb",
        "Browser test: a recorded planned turn (tests/widget/planned.py).",
        source + "\n\nchat = PlannedReplay()\nchat",
        "chat  # a second view of the same widget: built from what the kernel sends it",
    )


def grid(table: Locator) -> list[list[str]]:
    """The texts of a table's body cells, row by row."""
    rows: list[list[str]] = table.evaluate(
        "(t) => [...t.querySelectorAll('tbody tr')].map((r) =>"
        " [...r.cells].map((c) => c.textContent.trim()))"
    )
    return rows


def check_plan(turn: Locator) -> None:
    """The plan panel, the partial banner and the calculation of the recorded turn."""
    plan = turn.locator("[data-testid=gmchat-plan]")
    expect(plan).to_have_attribute("data-status", "partial")
    expect(plan.locator("[data-testid=gmchat-plan-coverage]")).to_have_text("1 of 3 tasks resolved")
    tasks = plan.locator("[data-testid=gmchat-plan-task]")
    expect(tasks).to_have_count(3)
    states = [
        (tasks.nth(i).get_attribute("data-task"), tasks.nth(i).get_attribute("data-status"))
        for i in range(3)
    ]
    assert states == [("task_1", "resolved"), ("task_2", "blocked"), ("task_3", "blocked")]
    state = "[data-testid=gmchat-task-state]"
    expect(tasks.nth(0).locator(state)).to_have_text("\u2713 resolved")
    expect(tasks.nth(1).locator(state)).to_have_text("\u2715 blocked")
    expect(tasks.nth(0)).to_contain_text("managers: Part")
    expect(tasks.nth(1)).to_contain_text("no manager found")
    expect(tasks.nth(0).locator("[data-testid=gmchat-task-reason]")).to_have_count(0)
    expect(tasks.nth(1).locator("[data-testid=gmchat-task-reason]")).to_have_text(
        "no matching data found (manager_unresolved)"
    )
    expect(tasks.nth(2).locator("[data-testid=gmchat-task-reason]")).to_have_text(
        "a task it depends on failed (dependency_blocked)"
    )
    expect(tasks.nth(2)).to_contain_text("after task_2")
    # The model's markup in an objective is shown as its characters.
    expect(tasks.nth(1).locator("[data-testid=gmchat-task-objective]")).to_have_text(
        f"Vehicles that use them {planned.HOSTILE}"
    )

    banner = turn.locator("[data-testid=gmchat-partial]")
    expect(banner.locator("strong")).to_have_text(
        "Partial answer: 1 of 3 parts of the question could be answered."
    )
    expect(banner.locator("li")).to_have_text(
        [
            f"task_2 Vehicles that use them {planned.HOSTILE}: no matching data found",
            "task_3 Owners of those vehicles: a task it depends on failed",
        ]
    )
    # The banner stands right above the answer it qualifies.
    assert turn.evaluate(
        "(t) => t.querySelector('[data-testid=gmchat-partial]').parentElement"
        ".nextElementSibling.matches('[data-testid=gmchat-answer]')"
    )

    evidence = turn.locator("[data-testid=gmchat-evidence]")
    expect(evidence.locator("summary")).to_have_text("Evidence \u00b7 1 query \u00b7 1 calculation")
    if evidence.get_attribute("open") is None:
        evidence.locator("summary").click()
    expect(evidence.locator("[data-testid=gmchat-evidence-row-id]")).to_have_text("task_1:query:1")
    calculation = evidence.locator("[data-testid=gmchat-calculation]")
    expect(calculation).to_be_visible()
    expect(calculation).to_have_attribute("data-evidence-id", "task_1:calculation:2")
    expect(calculation.locator("[data-testid=gmchat-calc-op]")).to_have_text("sum")
    expect(calculation.locator("[data-testid=gmchat-calc-result]")).to_have_text("117.25 EUR")
    assert grid(calculation.locator("[data-testid=gmchat-calc-inputs]")) == [
        ["task_1:query:1", f"data[{row}].unitPrice", value]
        for row, value in enumerate(["34 EUR", "22.4 EUR", "18.75 EUR"])
    ]
    expect(calculation.locator("[data-testid=gmchat-calc-more]")).to_have_text("and 2 more")
    assert grid(calculation.locator("[data-testid=gmchat-calc-groups]")) == [
        ["in stock", "76.05 EUR", "4"],
        ["<b>sold out</b>", "41.2 EUR", "1"],
    ]


def test_a_planned_turn_shows_its_tasks_plan_and_calculations(
    open_lab: Callable[[str | Path], Page], dialogs: list[str], tmp_path: Path
) -> None:
    page = open_lab(planned_notebook(tmp_path))
    root = show_chat(page, CHAT_CELL)

    ask(page, planned.QUESTION)

    turn = root.locator("[data-testid=gmchat-turn]").last
    expect(turn.locator("[data-testid=gmchat-answer]")).to_contain_text(LAST_WORDS, timeout=15_000)
    card = turn.locator("[data-testid=gmchat-tool][data-tool=query]")
    expect(card).to_have_attribute("data-status", "ok")
    expect(card).to_have_attribute("data-task", "task_1")
    expect(card.locator("[data-testid=gmchat-task-badge]")).to_have_text("task_1")
    expect(card.locator("[data-testid=gmchat-evidence-id]")).to_have_text("task_1:query:1")
    expect(card.locator("[data-testid=gmchat-table] tbody tr")).to_have_count(5)
    check_plan(turn)

    # A second view of the widget is built from what the kernel sends a new view (a replay or
    # a snapshot): the plan is there too.
    run_cell(page, SECOND_VIEW_CELL)
    views = chat_widget(page)
    expect(views).to_have_count(2, timeout=30_000)
    second = views.nth(1).locator("[data-testid=gmchat-turn]")
    expect(second).to_have_count(1, timeout=15_000)
    expect(second.locator("[data-testid=gmchat-task-badge]")).to_have_text("task_1")
    check_plan(second)

    # Nothing hostile ran or became markup.
    assert page.evaluate("typeof window.__pwned") == "undefined"
    for view in (turn, second):
        assert view.locator("script, img, b").count() == 0
    assert dialogs == []

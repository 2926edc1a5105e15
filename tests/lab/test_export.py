"""Export as notebook in the JupyterLab side panel, driven by Debian's chromium: the panel fetches
the conversation's notebook from ``GET {url}conversations/{id}/notebook``, writes it through
JupyterLab's contents API beside the active notebook (or at the root when no document is
active), never over an existing file (``Title 1.ipynb`` …), and JupyterLab opens it. The offline
provider answers and the demo project is queried; nothing of ours is mocked.
"""

from __future__ import annotations

from collections.abc import Iterator

import nbformat
import pytest
from playwright.sync_api import Locator, Page, expect

from ..jupyter_app import JupyterApp, write_notebook
from ..widget.browser.knowledge_steps import QUESTION, answered
from .test_side_panel import KERNEL_IDLE, open_panel, wait_connected

NAME = "Which parts are made of titanium"


@pytest.fixture(scope="module")
def export_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose chat answers with the offline provider (deterministic)."""
    app = JupyterApp(tmp_path_factory.mktemp("export-lab"), provider="offline")
    yield app
    app.stop()


def current_path(page: Page) -> str | None:
    """The path of the document JupyterLab shows in its main area (None: not a document)."""
    return page.evaluate(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return w && w.context ? w.context.path : null; }"
    )


def export(page: Page, root: Locator, path: str) -> None:
    """Press Export as notebook; it says it wrote ``path``, and JupyterLab shows that notebook."""
    root.get_by_role("button", name="Export as notebook").click()
    status = root.locator("[data-testid=gmchat-export-status]")
    expect(status).to_have_text(f"Exported to {path}", timeout=30_000)
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp.shell.currentWidget;"
        " return Boolean(w && w.context && w.context.path === path); }",
        arg=path,
        timeout=30_000,
    )
    tab = page.locator(".jp-mod-current.lm-TabBar-tab .lm-TabBar-tabLabel")
    expect(tab.first).to_have_text(path.rsplit("/", 1)[-1])


def test_the_panel_exports_beside_the_active_notebook_and_opens_it_never_over_a_file(
    page: Page, export_lab: JupyterApp, dialogs: list[str]
) -> None:
    (export_lab.root / "work").mkdir()
    write_notebook(export_lab.root / "work" / "analysis.ipynb", "# Analysis", "1 + 1")
    page.goto(export_lab.lab_url("export", "work/analysis.ipynb"))
    expect(page.locator("#jp-main-statusbar").get_by_text(KERNEL_IDLE)).to_be_visible(
        timeout=60_000
    )
    assert current_path(page) == "work/analysis.ipynb"
    root = open_panel(page)
    wait_connected(root)
    answered(root, QUESTION)

    # beside the active notebook, opened in JupyterLab
    export(page, root, f"work/{NAME}.ipynb")
    first = export_lab.root / "work" / f"{NAME}.ipynb"
    notebook = nbformat.read(first, as_version=4)
    nbformat.validate(notebook)
    headings = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    assert any(cell.startswith(f"## 1. {NAME}") for cell in headings)  # the question
    written = first.read_bytes()

    # again (the exported notebook is the active one now, in the same folder): a numbered name
    export(page, root, f"work/{NAME} 1.ipynb")
    assert (export_lab.root / "work" / f"{NAME} 1.ipynb").is_file()
    assert first.read_bytes() == written  # the first file is left as it was
    assert (export_lab.root / "work" / "analysis.ipynb").is_file()

    # with no document active (a launcher): at the root
    page.evaluate("() => window.jupyterapp.commands.execute('launcher:create')")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " return Boolean(w && !w.context && w.id.startsWith('launcher')); }",
        timeout=30_000,
    )
    export(page, root, f"{NAME}.ipynb")
    assert (export_lab.root / f"{NAME}.ipynb").is_file()
    assert sorted(p.name for p in (export_lab.root / "work").glob("*.ipynb")) == [
        f"{NAME} 1.ipynb",
        f"{NAME}.ipynb",
        "analysis.ipynb",
    ]

"""Fixtures of the browser tests: one JupyterLab server per session, Debian chromium, and a
notebook per test opened in its own JupyterLab workspace (so no test sees another's tabs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from playwright.sync_api import Browser, BrowserType, Dialog, Page, Playwright, sync_playwright

from .lab import CHROMIUM, CHROMIUM_FLAGS, JupyterLab, open_notebook


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright launches Debian's chromium (``playwright install`` needs the internet)."""
    if CHROMIUM is None or not Path(CHROMIUM).exists():
        pytest.fail(
            "The browser tests drive Chromium and found none on PATH: install it (Debian/Ubuntu: "
            "apt-get install chromium, as .ci/run does) or set GMCHAT_CHROMIUM to a Chromium or "
            "Chrome binary.",
            pytrace=False,
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


# pytest-playwright's own playwright/browser fixtures live for the whole session. Its sync API
# marks its event loop as running between calls, and pytest-asyncio then refuses to run any async
# test that comes later ("Runner.run() cannot be called from a running event loop"). These
# package-scoped versions stop playwright when the last browser test is done.


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="package")
def browser_type(playwright: Playwright, browser_name: str) -> BrowserType:
    return cast(BrowserType, getattr(playwright, browser_name))


@pytest.fixture(scope="package")
def browser(
    browser_type: BrowserType, browser_type_launch_args: dict[str, Any]
) -> Iterator[Browser]:
    browser = browser_type.launch(**browser_type_launch_args)
    yield browser
    browser.close()


@pytest.fixture(scope="package")
def browser_context_args() -> dict[str, Any]:
    """(The plugin's version needs the session-wide playwright.)"""
    return {"viewport": {"width": 1280, "height": 1000}}


@pytest.fixture(scope="package")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """A JupyterLab on 127.0.0.1 with its own config, data, settings and workspaces."""
    lab = JupyterLab(tmp_path_factory.mktemp("jupyterlab"))
    yield lab
    lab.stop()


@pytest.fixture
def dialogs(page: Page) -> list[str]:
    """Every alert/confirm/prompt the page opens (dismissed); tests expect none."""
    seen: list[str] = []

    def record(dialog: Dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", record)
    return seen


@pytest.fixture
def open_lab(
    jupyterlab: JupyterLab, page: Page, dialogs: list[str], request: pytest.FixtureRequest
) -> Iterator[Callable[[str | Path], Page]]:
    """``open_lab("answer.ipynb")``: a copy of that notebook (a name in ``notebooks/`` or a
    path) named after the test, opened in a fresh workspace with its kernel idle. The kernel is
    shut down after the test."""
    opened: list[str] = []

    def open_(source: str | Path) -> Page:
        name = re.sub(r"[^\w-]+", "-", request.node.name).strip("-")
        path = jupyterlab.add_notebook(source, name)
        opened.append(path)
        open_notebook(page, jupyterlab.notebook_url(path, workspace=name))
        return page

    yield open_
    for path in opened:
        jupyterlab.shutdown_kernels(path)
    assert not dialogs, f"the page opened dialogs: {dialogs}"

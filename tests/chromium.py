"""The one Chromium of the browser tests, ``bench/frontend.py`` and ``scripts/screenshots.py``:
the system's browser binary (``playwright install`` needs the internet), launched with flags that
stop its background traffic.

The pytest fixtures below are imported by ``tests/lab/conftest.py`` and
``tests/widget/browser/conftest.py``, so each package gets them package-scoped: pytest-playwright's
own ``playwright``/``browser`` fixtures live for the whole session, and its sync API marks its
event loop as running between calls, so pytest-asyncio then refuses every async test that comes
later ("Runner.run() cannot be called from a running event loop"). These stop playwright when the
package's last browser test is done.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from playwright.sync_api import Browser, BrowserType, Dialog, Page, Playwright, sync_playwright

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "browser",
    "browser_type",
    "browser_type_launch_args",
    "dialogs",
    "launch_chromium",
    "missing_chromium",
    "playwright",
    "watch_dialogs",
]

# Debian's and Ubuntu's packages, Fedora's, Homebrew's Chromium and Chrome, in that order;
# GMCHAT_CHROMIUM names any other browser binary.
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHROMIUM_APPS = (
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) binary to drive, wherever the platform keeps it; None if none."""
    configured = os.environ.get("GMCHAT_CHROMIUM")
    if configured:
        return configured
    for name in _CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return next((app for app in _CHROMIUM_APPS if Path(app).exists()), None)


CHROMIUM = find_chromium()
CHROMIUM_FLAGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING = (
    "The browser tests drive Chromium and found none on PATH: install it (Debian/Ubuntu: apt-get "
    "install chromium, as .ci/run does) or set GMCHAT_CHROMIUM to a Chromium or Chrome binary."
)


def missing_chromium() -> str | None:
    """Why no browser can be launched (the message to show), or None when one can."""
    return MISSING if CHROMIUM is None or not Path(CHROMIUM).exists() else None


def launch_chromium(playwright: Playwright) -> Browser:
    """Chromium, launched as the browser tests launch it (for bench/ and scripts/)."""
    if CHROMIUM is None:
        raise RuntimeError(MISSING)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)


# -- fixtures (imported by the browser packages' conftests) ---------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright launches the system's Chromium; without one, every browser test fails
    with the way to get it (a skip would pass a run that tested nothing)."""
    missing = missing_chromium()
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


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


def watch_dialogs(page: Page) -> list[str]:
    """Every alert/confirm/prompt ``page`` opens from now on, dismissed and listed."""
    seen: list[str] = []

    def record(dialog: Dialog) -> None:
        seen.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", record)
    return seen


@pytest.fixture
def dialogs(page: Page) -> Iterator[list[str]]:
    """Every alert/confirm/prompt the page opens (dismissed); the test fails if there was one."""
    seen = watch_dialogs(page)
    yield seen
    assert not seen, f"the page opened dialogs: {seen}"

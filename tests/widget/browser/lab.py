"""A private JupyterLab server and Debian chromium for the widget's browser tests (and
``scripts/screenshots.py``), plus the few page actions the tests need.

Everything stays on 127.0.0.1: the server gets a token, its own config/data/runtime/settings/
workspace directories and settings overrides that stop the news and update checks; chromium
gets flags that stop its background traffic. The kernel is this interpreter (``sys.executable``),
so it imports the ``gmchat_nb`` under test.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "NOTEBOOKS",
    "JupyterLab",
    "ask",
    "cell",
    "cell_output",
    "chat_widget",
    "open_notebook",
    "run_cell",
    "save_notebook",
    "show_chat",
    "wait_for_kernel_idle",
]

# Debian's and Ubuntu's packages, Fedora's, Homebrew's Chromium and Chrome, in that order;
# GMCHAT_CHROMIUM names any other browser binary.
_CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_CHROMIUM_APPS = (
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)


def write_notebook(path: Path, title: str, *sources: str) -> Path:
    """A notebook at ``path``: a markdown ``title`` cell (cell 0), then one code cell per source
    (cells 1, 2, ...), for a Python 3 kernel."""

    def code(text: str) -> dict[str, Any]:
        return {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": text.splitlines(keepends=True),
        }

    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": [title]},
            *(code(source) for source in sources),
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


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
NOTEBOOKS = Path(__file__).parent / "notebooks"
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"

# No news toast, no update check (commsOverSubshells stays at its default on purpose: the
# confirmation tests must see comm messages arrive on a kernel subshell, as users' do).
SETTINGS_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class JupyterLab:
    """A JupyterLab subprocess serving ``root`` on 127.0.0.1 with a random token."""

    def __init__(self, base: Path, *, timeout: float = 60) -> None:
        self.base = base
        self.root = base / "root"
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        dirs = {
            name: base / name
            for name in ("config", "data", "runtime", "settings", "workspaces", "app_settings")
        }
        for path in (self.root, *dirs.values()):
            path.mkdir(parents=True, exist_ok=True)
        (dirs["app_settings"] / "overrides.json").write_text(json.dumps(SETTINGS_OVERRIDES))
        kernel = dirs["data"] / "kernels" / "python3"  # first on the data path: wins
        kernel.mkdir(parents=True, exist_ok=True)
        (kernel / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                    "metadata": {"debugger": True},
                }
            )
        )
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("JUPYTER", "IPYTHON", "ANYWIDGET"))
        }
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            IPYTHONDIR=str(base / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            PYTHONUNBUFFERED="1",
        )
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            f"--LabServerApp.app_settings_dir={dirs['app_settings']}",
            "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        self.log = (base / "jupyterlab.log").open("w")
        self.process = subprocess.Popen(
            command, env=env, cwd=self.root, stdout=self.log, stderr=subprocess.STDOUT
        )
        try:
            self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited ({self.process.returncode}): {self.logs()}")
            try:
                self.api("GET", "status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise RuntimeError(f"JupyterLab did not answer within {timeout} s: {self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return (self.base / "jupyterlab.log").read_text(errors="replace")[-4000:]

    def api(self, method: str, path: str) -> Any:
        """One REST call to the server (``path`` below ``/api/``)."""
        request = urllib.request.Request(
            f"{self.url}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def add_notebook(self, source: str | Path, name: str) -> str:
        """Copy a notebook into the server's root as ``<name>.ipynb``; returns its path there."""
        path = f"{name}.ipynb"
        shutil.copyfile(NOTEBOOKS / source if isinstance(source, str) else source, self.root / path)
        return path

    def notebook_url(self, path: str, workspace: str) -> str:
        """A fresh workspace (``?reset``) that shows just this notebook."""
        query = urllib.parse.urlencode({"reset": "", "token": self.token})
        return f"{self.url}/lab/workspaces/{workspace}/tree/{urllib.parse.quote(path)}?{query}"

    def shutdown_kernels(self, path: str) -> None:
        """End the sessions (and kernels) of one notebook."""
        for session in self.api("GET", "sessions"):
            if session.get("path") == path:
                self.api("DELETE", f"sessions/{session['id']}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # jupyter_server shuts its kernels down on SIGTERM
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()


# -- page actions ----------------------------------------------------------------------------------


def notebook(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel:visible")


def wait_for_kernel_idle(page: Page, timeout: float = 60_000) -> None:
    """The status bar says the kernel is connected and idle (the toolbar indicator says 'idle'
    before the kernel is even connected)."""
    expect(page.locator("#jp-main-statusbar").get_by_text(KERNEL_IDLE)).to_be_visible(
        timeout=timeout
    )


def open_notebook(page: Page, url: str) -> None:
    page.goto(url)
    expect(notebook(page).locator(".jp-Cell").first).to_be_visible(timeout=60_000)
    wait_for_kernel_idle(page)


def cell(page: Page, index: int) -> Locator:
    return notebook(page).locator(".jp-Cell").nth(index)


def cell_output(page: Page, index: int) -> Locator:
    return cell(page, index).locator(".jp-OutputArea-output")


def run_cell(page: Page, index: int) -> None:
    """Select a cell by its prompt and press the toolbar's run button (more reliable than
    Shift+Enter in an editor)."""
    cell(page, index).locator(".jp-InputPrompt").click()
    expect(cell(page, index)).to_have_class(re.compile(r"\bjp-mod-selected\b"))
    notebook(page).locator("[data-command='notebook:run-cell-and-select-next']").click()


def save_notebook(page: Page) -> None:
    notebook(page).locator("[data-command='docmanager:save']").click()
    expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=10_000)


# -- the chat widget -------------------------------------------------------------------------------


def chat_widget(page: Page) -> Locator:
    """The chat panel (the notebook shows one)."""
    return notebook(page).locator("[data-testid=gmchat-root]")


def ask(page: Page, question: str) -> None:
    """Type a question into the widget and press Send."""
    root = chat_widget(page)
    root.locator("[data-testid=gmchat-input]").fill(question)
    root.locator("[data-testid=gmchat-send]").click()


def show_chat(page: Page, index: int) -> Locator:
    """Run the cell that displays the chat and wait for the panel."""
    run_cell(page, index)
    root = chat_widget(page)
    expect(root).to_be_visible(timeout=30_000)
    expect(root.locator("[data-testid=gmchat-input]")).to_be_editable()
    return root

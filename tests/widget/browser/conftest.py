"""Fixtures of the browser tests: one JupyterLab server for the package, Chromium, and a notebook
per test opened in its own JupyterLab workspace (so no test sees another's tabs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from ...chromium import (  # noqa: F401  (the shared browser fixtures, package-scoped here)
    browser,
    browser_type,
    browser_type_launch_args,
    dialogs,
    playwright,
)
from ...jupyter_app import JupyterApp
from .lab import NOTEBOOKS, open_notebook


@pytest.fixture(scope="package")
def browser_context_args() -> dict[str, Any]:
    """(The plugin's version needs the session-wide playwright.)"""
    return {"viewport": {"width": 1280, "height": 1000}}


@pytest.fixture(scope="package")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """A JupyterLab on 127.0.0.1 with its own config, data, settings and workspaces."""
    lab = JupyterApp(tmp_path_factory.mktemp("jupyterlab"))
    yield lab
    lab.stop()


@pytest.fixture
def open_lab(
    jupyterlab: JupyterApp,
    page: Page,
    dialogs: list[str],  # noqa: F811  (the fixture imported above)
    request: pytest.FixtureRequest,
) -> Iterator[Callable[[str | Path], Page]]:
    """``open_lab("answer.ipynb")``: a copy of that notebook (a name in ``notebooks/`` or a
    path) named after the test, opened in a fresh workspace with its kernel idle. The kernel is
    shut down after the test (and the test fails if the page opened a dialog)."""
    opened: list[str] = []

    def open_(source: str | Path) -> Page:
        name = re.sub(r"[^\w-]+", "-", request.node.name).strip("-")
        path = jupyterlab.add_notebook(
            name, NOTEBOOKS / source if isinstance(source, str) else source
        )
        opened.append(path)
        open_notebook(page, jupyterlab.lab_url(name, path))
        return page

    yield open_
    for path in opened:
        jupyterlab.shutdown_kernels(path)

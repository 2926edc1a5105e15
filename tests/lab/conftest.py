"""Fixtures of the side panel's browser tests: Chromium (``tests/chromium.py``), and JupyterLab /
Notebook 7 servers (``tests/jupyter_app.py``) with the gmchat server extension on scripted
providers (or without it).

The playwright, browser and server fixtures are package-scoped (as in tests/widget/browser), so
the event loop pytest-playwright's sync API holds is released when the last test here is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..chromium import (  # noqa: F401  (the shared browser fixtures, package-scoped here)
    browser,
    browser_type,
    browser_type_launch_args,
    dialogs,
    playwright,
)
from ..jupyter_app import JupyterApp

# One question, three model requests: a part named with markup is created (allowed, no
# confirmation), a query finds it (its rows become the result table and the evidence), then an
# answer streams slowly (about 4 s) carrying more hostile markup. The panel must show all of it
# as inert text (as tests/widget/browser/notebooks/injection.ipynb does for the widget).
PART = '<b id="injected">x</b>'
ANSWER_CHUNKS = [
    "Parts: ",
    *[f"p{i} " for i in range(30)],
    'Image: <img src=x onerror="window.__pwned=1"> ',
    "Script: <script>window.__pwned=2</script> ",
    "Link: [click](javascript:window.__pwned=3) ",
    "Alert: <svg onload=alert(4)></svg> ",
    "Done.",
]
ANSWER = "".join(ANSWER_CHUNKS)
ANSWER_ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "id": "m-1",
                "name": "mutate",
                "args": {"mutation": "createPart", "input": {"name": PART}},
            }
        ]
    },
    {
        "tool_calls": [
            {
                "id": "q-1",
                "name": "query",
                "args": {"manager": "Part", "fields": ["name"], "filters": {"name__contains": "<"}},
            }
        ]
    },
    {"chunks": ANSWER_CHUNKS, "chunk_delay_seconds": 0.12},
]
# A mutation that waits for the panel's Confirm button (as examples/add_part.yaml), then an
# answer that takes a while (time enough to reload the page while the resumed turn runs).
CONFIRM_ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "id": "call-1",
                "name": "mutate",
                "args": {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}},
            }
        ]
    },
    {"text": "Handled the request for the part Spring.", "delay_seconds": 2.0},
]
# The same mutation for a part whose name holds a right-to-left override: it reads
# "invoice…exe.pdf" on screen while "invoice\u202efdp.exe" would be stored.
BIDI_NAME = "invoice\u202efdp.exe"
BIDI_CONFIRM_ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {
                "id": "call-1",
                "name": "mutate",
                "args": {"mutation": "createPart", "input": {"name": BIDI_NAME}},
            }
        ]
    },
    {"text": "Handled the request for the part."},
]
# (the questions ask for no change: the intent gate is off, these tests are about the panel)
ANSWER_SETTINGS = {"allowed_mutations": ["createPart"], "injection": {"mutation_intent": False}}
CONFIRM_SETTINGS = {
    "allowed_mutations": ["createPart"],
    "confirm_mutations": ["createPart"],
    "confirm_timeout_seconds": 120,
    "injection": {"mutation_intent": False},
}


@pytest.fixture(scope="package")
def browser_context_args() -> dict[str, Any]:
    return {"viewport": {"width": 1400, "height": 1000}}


def _app(factory: pytest.TempPathFactory, name: str, **options: Any) -> Iterator[JupyterApp]:
    app = JupyterApp(factory.mktemp(name), **options)
    yield app
    app.stop()


@pytest.fixture(scope="package")
def answers_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose model queries the parts, then streams a slow answer."""
    yield from _app(tmp_path_factory, "answers-lab", rounds=ANSWER_ROUNDS, chat=ANSWER_SETTINGS)


@pytest.fixture(scope="package")
def confirm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose model asks to create a part, which waits for a confirmation."""
    yield from _app(tmp_path_factory, "confirm-lab", rounds=CONFIRM_ROUNDS, chat=CONFIRM_SETTINGS)


@pytest.fixture(scope="package")
def confirm_bidi_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose model asks to create a part named with a right-to-left override."""
    yield from _app(
        tmp_path_factory, "confirm-bidi-lab", rounds=BIDI_CONFIRM_ROUNDS, chat=CONFIRM_SETTINGS
    )


@pytest.fixture(scope="package")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab with the labextension but without the gmchat server extension."""
    yield from _app(tmp_path_factory, "bare-lab", gmchat=False)


@pytest.fixture(scope="package")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """Notebook 7 (``python -m notebook``) with the gmchat server extension."""
    yield from _app(
        tmp_path_factory, "notebook7", app="notebook", rounds=ANSWER_ROUNDS, chat=ANSWER_SETTINGS
    )

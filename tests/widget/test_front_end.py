"""The front end's pure parts (markdown rendering, sanitization, replay bookkeeping), tested with
node's own runner."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JS_TESTS = Path(__file__).parent / "js"


@pytest.mark.parametrize("script", ["test_markdown.mjs", "test_replay.mjs"])
def test_the_front_end_helpers(script: str) -> None:
    node = shutil.which("node")
    assert node is not None, (
        "node is needed for the front-end tests (it is on every machine of this project's kind)"
    )
    done = subprocess.run(
        [node, str(JS_TESTS / script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout

"""The installed package, from the wheel or the sdist, in a fresh venv without Node
(``scripts/check-release`` installs it and runs this file with that venv's Python, from an empty
folder, with the checkout last on sys.path)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.release

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str, cwd: Path | None = None, exits: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=cwd, env=os.environ.copy()
    )
    assert done.returncode in exits, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # jupyter's colours


def test_this_is_the_installed_package_on_a_machine_without_node() -> None:
    """Otherwise every other test here would prove nothing."""
    import gmchat_nb

    assert os.environ.get("GMCHAT_INSTALLED_FROM") in {"wheel", "sdist"}
    assert ROOT not in Path(gmchat_nb.__file__).resolve().parents
    assert shutil.which("node") is None and shutil.which("npm") is None
    assert sys.prefix != sys.base_prefix  # a venv of its own


def test_gmchat_ask_answers_on_the_demo_project(tmp_path: Path) -> None:
    said = run(str(BIN / "gmchat"), "ask", "Which projects use parts made of cobalt?", cwd=tmp_path)
    assert 'There is 1 project where parts → material → name is "Cobalt": Apollo.' in said


def test_jupyter_finds_the_labextension_and_the_server_extension(tmp_path: Path) -> None:
    labextensions = run(str(BIN / "jupyter"), "labextension", "list", cwd=tmp_path)
    line = next(line for line in labextensions.splitlines() if "gmchat-nb" in line)
    assert "enabled" in line and "OK" in line and "(python, gmchat_nb)" in line, labextensions
    extensions = run(str(BIN / "jupyter"), "server", "extension", "list", cwd=tmp_path)
    line = next(line for line in extensions.splitlines() if "gmchat_nb.server_ext" in line)
    assert "enabled" in line, extensions
    assert re.search(r"gmchat_nb\.server_ext\s+OK", extensions), extensions


def test_the_eval_cli_compares_providers_on_a_bundled_cassette(tmp_path: Path) -> None:
    """The README's example, installed: the datasets and the cassette found inside the package
    by name (exit 1: the offline provider misses the pass-rate gate, as documented)."""
    said = run(
        sys.executable,
        "-m",
        "gmchat_nb.evals",
        "--compare",
        "offline,replay:oracle-openai",
        cwd=tmp_path,
        exits=(0, 1),
    )
    assert "openai:oracle" in said and "offline" in said, said[-2000:]
    assert "Traceback" not in said


def test_the_side_panel_opens_from_the_installed_labextension_and_answers(
    tmp_path: Path,
) -> None:
    """JupyterLab of this venv, with nothing linked from the checkout: the palette's Open gmchat
    opens the panel the wheel installed, and a question gets the offline answer."""
    from playwright.sync_api import expect, sync_playwright

    from tests.chromium import CHROMIUM, CHROMIUM_FLAGS
    from tests.jupyter_app import JupyterApp
    from tests.lab.test_side_panel import PANEL, ask, open_panel

    assert CHROMIUM is not None, "this test drives Chromium (apt-get install chromium)"
    lab = JupyterApp(tmp_path / "lab", provider="offline", link_labextension=False, timeout=180)
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "gmchat-nb"
    assert (installed / "package.json").is_file()  # the wheel's shared data, in this venv
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(lab.lab_url("release"), timeout=120_000)
                root = open_panel(page)
                expect(page.locator(PANEL)).to_be_visible()
                ask(root, "Which projects use parts made of cobalt?")
                expect(root).to_contain_text("Apollo", timeout=120_000)
            finally:
                browser.close()
    finally:
        lab.stop()

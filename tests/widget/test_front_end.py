"""The front end's pure parts (markdown rendering and sanitization in a jsdom document, replay
bookkeeping, charts: their spec check, views and pickers, drawn by the chart library in jsdom,
the header's cost and context gauge, knowledge: the recall step, the trusted label, the save
form, the knowledge view and the panel's knowledge requests, invisible characters written out
on the confirmation card, the panel's agent tokens, Export as notebook: the file's name, the
panel's exporter, the widget's request and the status line; the panel's room for JupyterLab's
toasts),
tested with node's own runner against the built modules; and the built modules themselves,
which must be what the TypeScript sources in ``frontend/`` build to today."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gmchat_nb._frontend import staleness
from gmchat_nb.core.guards.invisible import INVISIBLE_RANGES

JS_TESTS = Path(__file__).parent / "js"
ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
STATIC = ROOT / "gmchat_nb" / "widget" / "static"
BUILT = ("chat.js", "charts.js", "chat.css")
PACKAGE = ROOT / "gmchat_nb"
REBUILD = (
    "rebuild it: `npm run build` in frontend/ with the venv's bin on PATH (or `pip install -e .`)"
)


def assert_built_from_todays_sources() -> None:
    why = staleness(PACKAGE, FRONTEND)
    assert why is None, f"the built front end is stale: {why}; {REBUILD}"


def node() -> str:
    found = shutil.which("node")
    assert found is not None, (
        "node is needed for the front-end tests (it is on every machine of this project's kind)"
    )
    return found


@pytest.mark.parametrize(
    "script",
    [
        "test_markdown.mjs",
        "test_replay.mjs",
        "test_guard_display.mjs",
        "test_charts.mjs",
        "test_usage.mjs",
        "test_knowledge.mjs",
        "test_invisible.mjs",
        "test_agent_tokens.mjs",
        "test_notebook_export.mjs",
        "test_fit.mjs",
    ],
)
def test_the_front_end_helpers(script: str) -> None:
    # they import the built chat.js: a stale one would test yesterday's code
    assert_built_from_todays_sources()
    done = subprocess.run(
        [node(), str(JS_TESTS / script)], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout


def test_the_card_reveals_the_characters_the_guards_strip() -> None:
    """The front end's ranges (frontend/src/invisible.ts) are the Python guard's, exactly."""
    script = (
        f"const m = await import({json.dumps((STATIC / 'chat.js').as_uri())});"
        "console.log(JSON.stringify(m.INVISIBLE_RANGES));"
    )
    done = subprocess.run(
        [node(), "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [tuple(pair) for pair in json.loads(done.stdout)] == list(INVISIBLE_RANGES)


def test_the_built_front_end_and_labextension_are_the_build_of_todays_sources() -> None:
    """Every built file (the widget's chat.js, charts.js, chat.css and the side panel's whole
    labextension, which tests/lab loads) is the one `npm run build` recorded, and the sources it
    recorded (frontend/src, the package and lock files, the build scripts) are today's: a source
    edited without a rebuild, or a built file edited by hand, fails here."""
    assert_built_from_todays_sources()


def test_the_installed_front_end_is_a_fresh_build_of_its_sources(tmp_path: Path) -> None:
    """A stale chat.js, charts.js or chat.css (sources changed, no rebuild) fails here: the
    sources are built again into a temporary folder and the installed files must match byte for
    byte. (The build itself fails when chat.js would hold the chart library.)"""
    assert (FRONTEND / "node_modules").is_dir(), (
        "frontend/node_modules is missing: `pip install -e .` installs it (or `npm ci` in frontend/)"
    )
    done = subprocess.run(
        [node(), str(FRONTEND / "build.mjs"), "--outdir", str(tmp_path)],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    stale = [
        name
        for name in BUILT
        if not (STATIC / name).is_file()
        or (STATIC / name).read_bytes() != (tmp_path / name).read_bytes()
    ]
    assert not stale, (
        f"{stale} in gmchat_nb/widget/static/ are not what frontend/ builds: "
        "run `npm run build` in frontend/ (or `pip install -e .`)"
    )

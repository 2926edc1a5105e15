"""The examples of the README and of the pages in docs/ run as written: every shell command and
Python block in them is run here, in reading order (the README, then :data:`PAGES`), or excused
below with the reason (so a new example cannot slip by unrun). Shell commands run in bash from
the checkout with the venv's programs first on PATH; servers the examples start with ``&`` are
started the same way and stopped afterwards. The README's tour writes its code inline: its Python
runs as notebook cells in a real kernel and its commands in bash, from a folder outside the
checkout (:func:`test_the_tour_runs_as_written`)."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
# The documentation in reading order: later pages use what earlier ones set up (``$U``, ``$H``).
PAGES = (
    "widget",
    "panel",
    "project",
    "chat-api",
    "charts",
    "export",
    "knowledge",
    "cost",
    "server",
    "mcp",
    "providers",
    "evals",
    "planned",
    "reliability",
    "development",
)
DOCUMENTS = [ROOT / "README.md", *(ROOT / "docs" / f"{page}.md" for page in PAGES)]
README = "\n".join(path.read_text() for path in DOCUMENTS)
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)
ASSIGNMENT = re.compile(r"^[A-Z]\w*=\S")

# Commands not run here, by how they start, and why. Each must still match a README command.
EXCUSED = {
    "python3 -m venv .venv": "the set-up commands: .ci/run runs them on a fresh machine",
    "pip install -e '.[ollama]'": "needs an Ollama server with a model",
    "pip install -e '.[openai]'": "needs an OpenAI-compatible model server",
    "python -m gmchat_nb.evals --provider openai:": "needs an OpenAI API key",
    "python -m gmchat_nb.evals --dataset my_cases.yaml": "a team's own dataset and server",
    "websocat": "not installed here; the WebSocket is tested with the websockets library",
}
# The local-model examples need scripts/build-llama-cpp: they run in their own test, marked
# local_model like every test that needs the build.
LOCAL_MODEL = (
    "GGUF=$(",
    'gmchat ask "Which projects are active?" --provider "local:',
    "python -m llama_cpp.server",
    "gmchat doctor",
)
# What some commands must print (a substring), beyond exiting as documented.
PRINTS = {
    'gmchat ask "Which materials': "Steel",
    '"Which parts are made of steel?"}\' $U/': '"answer"',
    "$U/stream/": "data: {",
    "$U/confirm/": '"status": "executed"',
    "gmchat tool get_manager_schema": '"manager": "FleetVehicle"',
    "--compare offline": "Failures of offline:",
    "gmchat doctor": "A chat turn can work with this provider.",
    "$U/conversations/$C/events": '"sequence": 1',
    "8891/gmchat/chat/conversations/$C/events": '"turn_id": "hub-0001"',
    "/turns/turn-0001/cancel": '"result": "too_late"',
    '--provider "local:': '] query {"manager": ',
    "--dataset charts --max-cost": "  offline: $0.00, 0 tokens: within",
    "--dataset basic_queries --max-cost": "OVER (cost could not be priced",
    'gmchat ask "Which parts are made of cobalt?"': "Verified query: titanium parts",
    "gmchat knowledge remove --mine": "removed 2 entries",
    "--nbval-current-env -p no:cacheprovider -q ~/copper.ipynb": " passed",
}
# The hub example's database is the tests' PostgreSQL server (a fresh schema of it).
README_DATABASE = "postgresql://chat:secret@db.internal:5432/gmchat"
# Python blocks run elsewhere, by their first line, and why.
PYTHON_ELSEWHERE = {
    "# jupyterhub_config.py": "tests/jupyterhub/test_jupyterhub.py applies it to a real hub",
}
# The eval CLI exits 1 when a case failed (documented): the offline model fails some.
EVAL_CLI = "python -m gmchat_nb.evals"


def fenced(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README) if lang == language]


def python_examples() -> list[str]:
    """The Python blocks this test runs (not those :data:`PYTHON_ELSEWHERE` runs)."""
    return [body for body in fenced("python") if not body.startswith(tuple(PYTHON_ELSEWHERE))]


def test_every_python_example_run_elsewhere_is_in_the_readme() -> None:
    for first_line in PYTHON_ELSEWHERE:
        assert any(body.startswith(first_line) for body in fenced("python")), first_line


def shell_commands() -> list[str]:
    """Every command of every bash block, continuation lines joined, in README order."""
    commands = []
    for block in fenced("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line.strip())
    return commands


def excuse(command: str) -> str | None:
    return next((why for start, why in EXCUSED.items() if command.startswith(start)), None)


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    """The venv first on PATH; Jupyter's and the chat store's files in a temporary home."""
    config = tmp_path / "jupyter-config"
    config.mkdir()
    # As root (CI) jupyter server refuses to start without allow_root; no browser either way.
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"allow_root": True, "open_browser": False}})
    )
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "GMCHAT_STORE": str(tmp_path / "chat.sqlite3"),
    }


class Background:
    """Commands the README starts with ``&``: started alike, stopped at the end."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.environment = environment
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, command: str, assignments: Sequence[str] = ()) -> None:
        prefix = "".join(f"{assignment}; " for assignment in assignments)
        process = subprocess.Popen(
            ["bash", "-c", f"{prefix}exec {command.strip().rstrip('&').strip()}"],
            cwd=ROOT,
            env=self.environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(process)
        port = re.search(r"--port[ =](\d+)", command)
        url = f"http://127.0.0.1:{port.group(1) if port else 8888}/"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, f"{command!r} exited with {process.returncode}"
            try:
                urllib.request.urlopen(url, timeout=1)
                return
            except urllib.error.HTTPError:
                return  # it answers (a 4xx for a bare GET is an answer)
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{command!r} did not start listening on {url}")

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)


@pytest.fixture
def background(environment: dict[str, str]) -> Iterator[Background]:
    running = Background(environment)
    yield running
    running.stop()


def test_every_excuse_matches_a_readme_command() -> None:
    commands = shell_commands()
    for start in EXCUSED:
        assert any(c.startswith(start) for c in commands), f"no README command starts {start!r}"


def test_the_shell_examples_run_as_written(
    environment: dict[str, str], background: Background, postgresql_store: str
) -> None:
    commands = [
        command.replace(README_DATABASE, postgresql_store)
        for command in shell_commands()
        if not command.startswith(LOCAL_MODEL)
    ]
    assert any(postgresql_store in command for command in commands)
    ran = run_examples(commands, environment, background)
    (ROOT / "report.html").unlink(missing_ok=True)  # what the --report-html example writes
    assert ran >= 12


@pytest.mark.local_model
def test_the_local_model_examples_run_as_written(
    environment: dict[str, str], background: Background
) -> None:
    local = [c for c in shell_commands() if c.startswith(LOCAL_MODEL)]
    assert run_examples(local, environment, background) == 2


def run_examples(commands: list[str], environment: dict[str, str], background: Background) -> int:
    """Run ``commands`` in order (assignments carried forward, ``&`` ones in the background);
    how many ran in the foreground."""
    assignments: list[str] = []
    ran = 0
    for command in commands:
        if excuse(command) is not None:
            continue
        if ASSIGNMENT.match(command):
            assignments.append(command)
            continue
        if command.split("#")[0].rstrip().endswith("&"):
            background.start(command.split("#")[0], assignments)
            continue
        said = run_documented_command(command, ROOT, environment, prelude=assignments)
        for start, printed in PRINTS.items():
            if start in command:
                assert printed in said, f"{command} printed:\n{said[-2000:]}"
        ran += 1
    return ran


@pytest.mark.parametrize("number", range(len(python_examples())))
def test_the_python_examples_run_as_written(
    number: int, environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GMCHAT_STORE", "JUPYTER_DATA_DIR"):
        monkeypatch.setenv(key, environment[key])
    source = python_examples()[number]
    code = compile(
        source, f"README python example {number + 1}", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    namespace: dict[str, Any] = {}
    result = eval(code, namespace)
    if asyncio.iscoroutine(result):
        asyncio.run(result)


# The tour: inline code in its sentences. Its commands start so; `pip install` is the set-up the
# README's first lines run; every other span is Python when it compiles and calls or awaits
# something, else a fragment of a sentence (a route, an option, a path, ``replay:NAME``).
TOUR_HEADING = "## A 30-second tour"
TOUR_COMMANDS = ("gmchat ", "python -m ")
TOUR_SET_UP = "pip install"
INLINE_CODE = re.compile(r"`([^`]+)`")
# What the tour's commands must print, beyond exiting as documented.
TOUR_PRINTS = {"replay:oracle-openai": "openai:oracle"}  # the bundled cassette's column
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def tour_code() -> list[str]:
    """The tour's code spans in reading order, each on one line as a reader types it."""
    readme = (ROOT / "README.md").read_text()
    tour = readme.split(f"\n{TOUR_HEADING}\n", 1)[1].split("\n## ", 1)[0]
    return [" ".join(span.split()) for span in INLINE_CODE.findall(tour)]


def is_python(span: str) -> bool:
    """Python the tour asks a reader to run: it compiles (with top-level ``await``, as a
    notebook allows) and calls or awaits something."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        tree = compile(span, "<tour>", "exec", flags)
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Call | ast.Await) for node in ast.walk(tree))


def test_the_tour_s_python_is_told_from_its_fragments() -> None:
    assert is_python('turn = await chat.ask("…")')
    assert is_python("from gmchat_nb import Chat; chat = Chat(); chat")
    for fragment in ("replay:NAME", "--execute", "evals/", "GET …/turns/{turn_id}/evidence"):
        assert not is_python(fragment), fragment


def test_the_tour_runs_as_written(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In reading order, from a folder outside the checkout (so ``replay:oracle-openai`` can
    only be a bundled cassette's name): its Python as cells of one notebook in a real kernel
    (the first shows the chat panel), its commands in bash with the same store."""
    for key in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        monkeypatch.setenv(key, environment[key])  # the kernel's, as the commands'
    monkeypatch.setenv("GMCHAT_STORE", environment["GMCHAT_STORE"])
    folder = tmp_path / "analysis"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook()
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(folder)}}
    )
    printed: dict[str, str] = {}
    with client.setup_kernel():
        for span in tour_code():
            if span.startswith(TOUR_SET_UP):
                continue  # installs what the kernel and the commands run: already installed
            if span.startswith(TOUR_COMMANDS):
                printed[span] = run_documented_command(span, folder, environment)
            elif is_python(span):
                cell = nbformat.v4.new_code_cell(span)
                notebook.cells.append(cell)
                client.execute_cell(cell, len(notebook.cells) - 1)  # raises on an error
    python = [cell.source for cell in notebook.cells]
    assert len(python) >= 3 and "chat = Chat()" in python[0], python
    assert any(WIDGET_VIEW in output.get("data", {}) for output in notebook.cells[0].outputs)
    assert len(printed) >= 3, list(printed)
    saved = re.search(r'knowledge\.save_turn\(turn, name="([^"]+)"\)', "\n".join(python))
    assert saved is not None, python
    listing = next(out for command, out in printed.items() if "knowledge list" in command)
    assert saved.group(1) in listing, listing
    for written in re.findall(r"[\w-]+\.ipynb", " ".join([*python, *printed])):
        assert (folder / written).is_file(), f"the tour's {written} was not written"
    for start, expected in TOUR_PRINTS.items():
        output = next(out for command, out in printed.items() if start in command)
        assert expected in output, output[-2000:]


def run_documented_command(
    command: str, folder: Path, environment: dict[str, str], *, prelude: list[str] | None = None
) -> str:
    """Run a command the docs show in ``folder`` (after the ``prelude`` of assignments written
    before it); what it printed. The eval CLI may exit 1 (a provider below its gate)."""
    done = subprocess.run(
        ["bash", "-c", "; ".join([*(prelude or []), command])],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    allowed = (0, 1) if command.startswith(EVAL_CLI) else (0,)
    assert done.returncode in allowed, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr, f"{command}\n{done.stderr[-2000:]}"
    return done.stdout

"""``gmchat export``: the real command, run as a subprocess on a SQLite store that ``gmchat ask``
filled (the offline provider on the demo project); the notebook it writes checked by nbformat,
and run in a fresh kernel with ``--execute``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gmchat_nb.core.store import ChatStore

QUESTION = "Which parts are made of steel?"
HEADING = "Which parts are made of steel"  # (the Markdown escapes the question mark)


class Gmchat:
    """``gmchat`` on one store in one folder, as alice unless told otherwise."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.store = str(folder / "chat.sqlite3")

    def __call__(
        self, *args: str, user: str = "alice", timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "gmchat_nb.cli", *args, "--store", self.store]
        return subprocess.run(
            [*command, "--user", user],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.folder,
        )

    def conversations(self, user: str = "alice") -> list[str]:
        with ChatStore(self.store) as store:
            return [c.id for c in store.conversations(f"local:{user}")]


@pytest.fixture
def gmchat(tmp_path: Path) -> Gmchat:
    run = Gmchat(tmp_path)
    asked = run("ask", QUESTION, "--provider", "offline")
    assert asked.returncode == 0, asked.stderr
    return run


def failed(done: subprocess.CompletedProcess[str], status: int = 1) -> str:
    """The one-line message of a command that failed (never a traceback)."""
    assert done.returncode == status, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.startswith("gmchat: "), done.stderr
    return done.stderr


def notebook(path: Path) -> nbformat.NotebookNode:
    written = nbformat.read(path, as_version=4)
    nbformat.validate(written)
    return written


def markdown(written: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in written.cells if cell.cell_type == "markdown")


def test_the_latest_conversation_and_one_by_id(gmchat: Gmchat) -> None:
    done = gmchat("export", "--latest", "--output", "latest.ipynb")
    assert done.returncode == 0, done.stderr
    latest = notebook(gmchat.folder / "latest.ipynb")
    assert done.stderr == f"wrote latest.ipynb ({len(latest.cells)} cells)\n"
    assert HEADING in markdown(latest)
    assert any("Part" in cell.source for cell in latest.cells if cell.cell_type == "code")

    [conversation] = gmchat.conversations()
    by_id = gmchat("export", "--conversation", conversation, "--output", "by-id.ipynb")
    assert by_id.returncode == 0, by_id.stderr
    same = notebook(gmchat.folder / "by-id.ipynb")
    # the same conversation: the same cells, but for the first (it names the date it was made)
    assert [c.source for c in same.cells[1:]] == [c.source for c in latest.cells[1:]]


def test_an_existing_file_is_replaced_only_with_force(gmchat: Gmchat) -> None:
    mine = gmchat.folder / "mine.ipynb"
    mine.write_text("my own notebook", encoding="utf-8")
    message = failed(gmchat("export", "--latest", "--output", "mine.ipynb"))
    assert message == (
        "gmchat: mine.ipynb exists: choose another --output, or --force to replace it.\n"
    )
    assert mine.read_text(encoding="utf-8") == "my own notebook"
    forced = gmchat("export", "--latest", "--output", "mine.ipynb", "--force")
    assert forced.returncode == 0, forced.stderr
    assert HEADING in markdown(notebook(mine))


def test_no_such_conversation_is_a_message_and_nothing_written(gmchat: Gmchat) -> None:
    target = gmchat.folder / "out.ipynb"
    unknown = failed(gmchat("export", "--conversation", "nope", "--output", "out.ipynb"))
    assert unknown == "gmchat: export: No conversation with that id belongs to you. [not_found]\n"
    [alices] = gmchat.conversations()
    # bob names alice's conversation: the same answer as an unknown id
    foreign = gmchat("export", "--conversation", alices, "--output", "out.ipynb", user="bob")
    assert failed(foreign) == unknown
    nothing = failed(gmchat("export", "--latest", "--output", "out.ipynb", user="bob"))
    assert nothing == "gmchat: export: bob has no conversation in this store. [not_found]\n"
    assert not target.exists()
    elsewhere = failed(gmchat("export", "--latest", "--output", "no/such/folder/out.ipynb"))
    assert "no folder no/such/folder" in elsewhere


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "x.ipynb"], "one of the arguments --conversation --latest is required"),
        (["--latest"], "the following arguments are required: --output"),
        (["--latest", "--conversation", "c", "--output", "x.ipynb"], "not allowed with"),
        (["--latest", "--output", "x.ipynb", "--user", "a b"], "--user takes a user name"),
        (["--latest", "--output", "x.ipynb", "--timeout", "0"], "--timeout takes"),
    ],
)
def test_bad_options_exit_two(gmchat: Gmchat, args: list[str], message: str) -> None:
    command = [sys.executable, "-m", "gmchat_nb.cli", "export", *args, "--store", gmchat.store]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=gmchat.folder)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (gmchat.folder / "x.ipynb").exists()


def test_execute_runs_it_in_a_fresh_kernel_and_saves_the_outputs(gmchat: Gmchat) -> None:
    done = gmchat("export", "--latest", "--output", "run.ipynb", "--execute", timeout=300)
    assert done.returncode == 0, done.stderr
    assert ", executed in " in done.stderr
    executed = notebook(gmchat.folder / "run.ipynb")
    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert code and all(isinstance(cell.execution_count, int) for cell in code)
    outputs = [output for cell in code for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    shown = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
        for output in outputs
    )
    assert "Bolt" in shown  # the steel part the conversation found, read again
    assert "outputs" in executed.cells[0].source  # the title cell says they were saved
    unexecuted = gmchat("export", "--latest", "--output", "plain.ipynb")
    assert unexecuted.returncode == 0, unexecuted.stderr
    assert "outputs" not in notebook(gmchat.folder / "plain.ipynb").cells[0].source


def test_execute_names_the_cell_that_failed_and_writes_nothing(gmchat: Gmchat) -> None:
    # the notebook's PROJECT is a GraphQL endpoint where nothing listens: its first query fails
    down = "http://127.0.0.1:9/graphql"
    done = gmchat(
        "export", "--latest", "--output", "run.ipynb", "--execute", "--project", down,
        timeout=300,
    )  # fmt: skip
    message = failed(done)
    assert message.startswith("gmchat: export --execute: cell "), message
    assert "failed: " in message and message.endswith("; nothing was written.\n")
    assert not (gmchat.folder / "run.ipynb").exists()

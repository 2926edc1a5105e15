"""An exported conversation of reads (a chart, a follow-up, an empty result) runs top to bottom
in a fresh kernel: ``pytest --nbval`` on the written file, in a subprocess, as the notebooks of
notebooks/ are run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gmchat_nb.core.export import conversation_notebook, notebook_text

from .conversations import play_reads


async def exported_reads(store: str) -> nbformat.NotebookNode:
    chat = await play_reads(store)
    try:
        session = await chat.session()
        assert chat.conversation_id is not None
        return conversation_notebook(session.store, chat.conversation_id, settings=chat.settings)
    finally:
        await chat.aclose()


def test_an_exported_conversation_of_reads_passes_nbval(tmp_path: Path) -> None:
    # The dev environment has a kernel; .ci/run's graphql-core 3.3 job installs none.
    pytest.importorskip("ipykernel", reason="no Jupyter kernel installed")
    pytest.importorskip("nbval", reason="nbval is not installed")
    notebook = asyncio.run(exported_reads(str(tmp_path / "chat.sqlite3")))
    path = tmp_path / "copper parts.ipynb"
    path.write_text(notebook_text(notebook), encoding="utf-8")
    code = sum(cell.cell_type == "code" for cell in notebook.cells)
    run = tmp_path / "run"  # no configuration of the checkout: nbval's defaults
    run.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval",
         "--nbval-current-env", "-q", str(path)],
        cwd=run, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{code} passed" in done.stdout, done.stdout[-2000:]

"""``gmchat export``: a conversation of the store as a notebook that re-runs (docs/export.md)::

    gmchat export (--conversation ID | --latest) --output FILE.ipynb [--execute] [--force]
                  [--project P] [--config C] [--store S] [--user NAME] [--timeout SECONDS]

The notebook is built from the store alone (the project is not connected): each query's
journaled GraphQL, its chart, the answer with its evidence, a change as a record. ``--latest``
is the user's most recently updated conversation; ``--user NAME`` acts as ``local:NAME``, as
``gmchat ask --user`` does, and only that user's conversations can be exported. ``--project``
and ``--config`` are the settings the notebook names (its parameter cell's ``PROJECT``).

``--execute`` runs the notebook top to bottom in a fresh Python kernel (nbclient, with the
output file's folder as its working directory) and saves its outputs; a cell that fails writes
nothing and names the cell and its error. An existing file is never replaced without
``--force``.

Exit status: 0 written; 1 no such conversation of yours (or none at all), nothing to export yet,
an existing file without ``--force``, a cell that failed under ``--execute``, or a store, folder
or kernel that could not be used; 2 bad options.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from .cli_knowledge import add_user_option, user_actor
from .core.turns import ChatStore, StoreUnavailableError

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from .core.settings import ChatSettings

__all__ = ["add_export_parser", "export", "run_notebook"]

EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2
CELL_TIMEOUT: Final = 600.0  # seconds one cell may run under --execute (a big query's page walk)
KERNEL_START_TIMEOUT: Final = 120.0


class CellFailed(Exception):
    """A cell of an executed notebook raised: which one (1-based, as a reader counts; ``None``
    when the kernel cannot say) and how."""

    def __init__(self, cell: int | None, error: str) -> None:
        super().__init__(f"{'a cell' if cell is None else f'cell {cell}'} failed: {error}")
        self.cell = cell
        self.error = error


def add_export_parser(commands: Any) -> None:
    """``gmchat export`` on ``gmchat``'s sub-parsers."""
    export = commands.add_parser(
        "export",
        help="write a conversation as a notebook that re-runs its queries",
        description="Write one of your conversations as a Jupyter notebook: its questions, a "
        "cell per query (the journaled GraphQL) and per chart, the answers with their "
        "evidence, changes as records. Built from the store alone; see docs/export.md.",
    )
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("--conversation", metavar="ID", help="the conversation to export")
    which.add_argument(
        "--latest", action="store_true", help="your most recently updated conversation"
    )
    export.add_argument(
        "--output", metavar="FILE.ipynb", required=True, help="the notebook file to write"
    )
    export.add_argument(
        "--execute",
        action="store_true",
        help="run it in a fresh Python kernel and save the outputs (needs nbclient, ipykernel)",
    )
    export.add_argument("--force", action="store_true", help="replace an existing file")
    export.add_argument(
        "--timeout",
        type=float,
        default=CELL_TIMEOUT,
        metavar="SECONDS",
        help=f"with --execute: how long one cell may run (default {CELL_TIMEOUT:g})",
    )
    export.add_argument("--project", help="the project the notebook names (default: settings)")
    export.add_argument("--config", help="a YAML settings file")
    export.add_argument("--store", help="the conversation store (a path or a postgresql:// URL)")
    add_user_option(export)


def export(options: argparse.Namespace) -> int:
    """Run ``gmchat export``; returns the exit status."""
    # (nbformat and the exporter load for this command only, not for every `gmchat`)
    from .chat_export import ExportError, write_notebook
    from .core.settings import ChatConfigurationError, load_settings

    output = Path(options.output).expanduser()
    if options.timeout <= 0:
        return _fail("--timeout takes a number of seconds above 0.", EXIT_USAGE)
    try:
        actor = user_actor(options.user)
        overrides = {
            key: value
            for key, value in (("project", options.project), ("store", options.store))
            if value is not None
        }
        settings = load_settings(options.config, **overrides)
    except (ChatConfigurationError, ValueError) as error:
        return _fail(str(error), EXIT_USAGE)
    if output.exists() and not options.force:  # before any work; the write checks again
        return _fail(f"{output} exists: choose another --output, or --force to replace it.")
    if not output.parent.is_dir():
        return _fail(f"cannot write {output}: no folder {output.parent}.")
    try:
        notebook = _notebook(options, settings, actor.id)
        started = time.monotonic()
        if options.execute:
            run_notebook(notebook, folder=output.parent, timeout=options.timeout)
        write_notebook(notebook, output, overwrite=options.force)
    except ExportError as error:
        return _fail(f"export: {error.message} [{error.code}]")
    except CellFailed as failed:
        return _fail(f"export --execute: {failed}; nothing was written.")
    except FileExistsError as error:
        return _fail(f"{error}: use --force to replace it.")
    except (OSError, StoreUnavailableError, sqlite3.Error, ImportError, RuntimeError) as error:
        return _fail(str(error))  # the store, the folder or the kernel is out of reach
    ran = f", executed in {time.monotonic() - started:.1f} s" if options.execute else ""
    print(f"wrote {output} ({len(notebook.cells)} cells{ran})", file=sys.stderr)
    return 0


def _notebook(options: argparse.Namespace, settings: ChatSettings, actor_id: str) -> NotebookNode:
    from .chat_export import ExportError, export_conversation
    from .core.session.compose import open_store

    with open_store(settings, options.store) as store:
        conversation_id = options.conversation or _latest(store, actor_id)
        if conversation_id is None:
            user = actor_id.removeprefix("local:")
            raise ExportError("not_found", f"{user} has no conversation in this store.")
        return export_conversation(
            store,
            conversation_id,
            actor_id=actor_id,
            settings=settings,
            execute_hint=options.execute,
        )


def _latest(store: ChatStore, actor_id: str) -> str | None:
    conversations = store.conversations(actor_id)  # most recently updated first
    return conversations[0].id if conversations else None


def run_notebook(notebook: NotebookNode, *, folder: Path, timeout: float = CELL_TIMEOUT) -> None:
    """Run ``notebook`` in place in a fresh kernel of its kernelspec (working in ``folder``),
    keeping every output; :class:`CellFailed` names the first cell that raised."""
    try:
        from jupyter_client.kernelspec import NoSuchKernel
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    except ImportError as error:
        raise ImportError(
            f"--execute needs nbclient and ipykernel (pip install 'gmchat_nb[lab]'): {error}"
        ) from None
    client = NotebookClient(
        notebook,
        timeout=timeout,
        startup_timeout=KERNEL_START_TIMEOUT,
        resources={"metadata": {"path": str(folder)}},
    )
    # The kernel's own log (ipykernel warns of its transport on every start) is not the
    # command's output: it is kept aside and shown only when the kernel fails.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as kernel_log:
        try:
            client.execute(stderr=kernel_log)
        except CellExecutionError as error:
            raise CellFailed(_failed_cell(notebook), f"{error.ename}: {error.evalue}") from None
        except CellTimeoutError:
            raise CellFailed(None, f"it ran longer than {timeout:g} s (--timeout)") from None
        except DeadKernelError as error:
            raise CellFailed(None, f"the kernel died ({error}){_tail(kernel_log)}") from None
        except NoSuchKernel as error:
            raise RuntimeError(f"--execute: no Jupyter kernel named {error}") from None
        except RuntimeError as error:  # the kernel did not start
            raise RuntimeError(f"--execute: {error}{_tail(kernel_log)}") from None


def _tail(log: IO[str], lines: int = 5) -> str:
    """The last lines the kernel wrote, for a message about its failure."""
    log.seek(0)
    written = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    return "".join(f"\n  {line}" for line in written[-lines:])


def _failed_cell(notebook: NotebookNode) -> int | None:
    """The 1-based number of the first cell with an error output, if one has."""
    for number, cell in enumerate(notebook.cells, 1):
        if any(output.get("output_type") == "error" for output in cell.get("outputs", [])):
            return number
    return None


def _fail(message: str, status: int = EXIT_FAILURE) -> int:
    print(f"gmchat: {message}", file=sys.stderr)
    return status

"""The one launcher of a private JupyterLab (or Notebook 7) for the browser tests (``tests/lab``,
``tests/widget/browser``, ``tests/widget/test_guard_display.py``), ``bench/frontend.py`` and
``scripts/screenshots.py``.

Everything stays on 127.0.0.1 and in ``base``: a random token; its own config, data, runtime,
settings, workspace and IPython directories (no ``JUPYTER*``, ``IPYTHON*``, ``ANYWIDGET*`` or
``GMCHAT*`` variable of the caller's environment reaches it); settings overrides and flags that
stop the news toast, the update check and the extension manager's requests. The kernel is this
interpreter (``sys.executable``, or ``python``), so it imports the ``gmchat_nb`` under test.

The checkout's labextension (``gmchat_nb/labextension/``, what ``frontend/`` builds) is linked
first on the data path, so a rebuild is tested without reinstalling (``link_labextension=False``:
the installed one, as a user's JupyterLab finds it). The gmchat server extension runs a scripted
provider (``rounds``) or ``provider`` on the demo project, the store a SQLite file in ``base``
unless ``store`` names one; ``gmchat=False`` disables it, as on a server where it was never
enabled. The app is exposed as ``window.jupyterapp`` (the tests read notebook models and run
commands through it).
"""

from __future__ import annotations

import json
import os
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

import yaml

__all__ = ["LABEXTENSION", "SETTINGS_OVERRIDES", "JupyterApp", "free_port", "write_notebook"]

ROOT = Path(__file__).resolve().parents[1]
LABEXTENSION = ROOT / "gmchat_nb" / "labextension"
KERNEL_NAME = "Python 3 (ipykernel)"

# No news toast, no update check (commsOverSubshells stays at its default on purpose: the
# widget's confirmation tests must see comm messages arrive on a kernel subshell, as users' do).
SETTINGS_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}
}
LAB_FLAGS = [
    "--LabApp.news_url=None",
    "--LabApp.extension_manager=readonly",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
]
PRIVATE_PREFIXES = ("JUPYTER", "IPYTHON", "ANYWIDGET", "GMCHAT")


def free_port() -> int:
    """A port free on 127.0.0.1 now (the server is started with ``port_retries=0`` on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
            "kernelspec": {"display_name": KERNEL_NAME, "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


class JupyterApp:
    """``python -m jupyterlab`` (``app="notebook"``: Notebook 7) on 127.0.0.1, private to
    ``base``, ready (its ``api/status`` answers) when the constructor returns.

    ``rounds``: the scripted provider's rounds (each conversation plays them from the first;
    default one answer, "Hello."); ``provider``: another provider instead (``"offline"``:
    deterministic answers from the question); ``chat``: more gmchat settings
    (``GMChat.chat_settings``); ``store``: the chat store; ``gmchat=False``: the server extension
    disabled. ``timeout``: how long to wait for the server, a deadline for a hang only.
    """

    def __init__(
        self,
        base: Path,
        *,
        app: str = "jupyterlab",
        rounds: list[dict[str, Any]] | None = None,
        provider: str | None = None,
        chat: dict[str, Any] | None = None,
        store: str | None = None,
        gmchat: bool = True,
        link_labextension: bool = True,
        python: str = sys.executable,
        timeout: float = 180,
    ) -> None:
        if link_labextension and not (LABEXTENSION / "package.json").is_file():
            raise RuntimeError(
                "gmchat_nb/labextension/ is missing: `pip install -e .` builds it "
                "(or `npm run build` in frontend/ with the venv's bin on PATH)"
            )
        self.base = base
        self.root = base / "root"
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.chat_url = f"{self.url}/gmchat/chat/"
        dirs = {
            name: base / name
            for name in ("config", "data", "runtime", "settings", "workspaces", "app_settings")
        }
        for path in (self.root, *dirs.values()):
            path.mkdir(parents=True, exist_ok=True)
        (dirs["app_settings"] / "overrides.json").write_text(json.dumps(SETTINGS_OVERRIDES))
        if link_labextension:
            (dirs["data"] / "labextensions").mkdir(exist_ok=True)
            (dirs["data"] / "labextensions" / "gmchat-nb").symlink_to(LABEXTENSION)
        kernel = dirs["data"] / "kernels" / "python3"  # first on the data path: wins
        kernel.mkdir(parents=True, exist_ok=True)
        (kernel / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": KERNEL_NAME,
                    "language": "python",
                    "metadata": {"debugger": True},
                }
            )
        )
        config: dict[str, Any] = {
            "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": gmchat}},
            "LabApp": {"expose_app_in_browser": True},
            "JupyterNotebookApp": {"expose_app_in_browser": True},
        }
        if gmchat:
            script = base / "rounds.yaml"
            script.write_text(yaml.safe_dump(rounds or [{"text": "Hello."}]))
            config["GMChat"] = {
                "provider": provider or f"scripted:{script}",
                "project": "demo",
                "store": store or str(base / "chat.sqlite3"),
                "chat_settings": chat or {},
            }
        (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
        env = {
            key: value for key, value in os.environ.items() if not key.startswith(PRIVATE_PREFIXES)
        }
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            IPYTHONDIR=str(base / "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
            # the private data and config directories first (in a venv jupyter_core puts the
            # environment's first), so the link to the checkout's build and the kernel above win
            # over an installed copy
            JUPYTER_PREFER_ENV_PATH="0",
            PYTHONUNBUFFERED="1",
        )
        command = [
            python,
            "-m",
            app,
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
        ]
        if app == "jupyterlab":
            command += [f"--LabServerApp.app_settings_dir={dirs['app_settings']}", *LAB_FLAGS]
        self.log_path = base / f"{app}.log"
        # A free port is probed, then bound by the server: another process (a test worker's
        # server or client) can take it in between, so a start that lost its port tries another.
        for attempt in range(3):
            if attempt:
                self.port = free_port()
                self.url = f"http://127.0.0.1:{self.port}"
                self.chat_url = f"{self.url}/gmchat/chat/"
                command = [
                    f"--port={self.port}" if part.startswith("--port=") else part
                    for part in command
                ]
            self.log = self.log_path.open("w")
            self.process = subprocess.Popen(
                command, env=env, cwd=self.root, stdout=self.log, stderr=subprocess.STDOUT
            )
            try:
                self._wait_until_ready(timeout)
                return
            except BaseException:
                self.stop()
                if attempt == 2 or "already in use" not in self.log_path.read_text():
                    raise

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Jupyter exited ({self.process.returncode}): {self.logs()}")
            try:
                self.get("api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise RuntimeError(f"Jupyter did not answer within {timeout} s: {self.logs()}")

    def logs(self) -> str:
        """The end of the server's log (for a failure's message)."""
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    # -- the REST API ------------------------------------------------------------------------------

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, timeout: float = 60
    ) -> Any:
        """One request to ``path`` (below the server's root) with the token, ``body`` as JSON;
        the JSON answer (None for an empty one)."""
        request = urllib.request.Request(
            f"{self.url}/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = response.read()
        return json.loads(answer) if answer else None

    def get(self, path: str) -> Any:
        """GET ``path`` (below the server's root); the JSON answer."""
        return self.call("GET", path)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` to ``path`` (below the server's root); the JSON answer."""
        return self.call("POST", path, body)

    def journal(self, conversation: str) -> list[dict[str, Any]]:
        """Every journaled event of a conversation, read from the events route up to the last
        position the server has now."""
        latest = int(
            self.get(f"gmchat/chat/conversations/{conversation}/turns/")["latest_sequence"]
        )
        events: list[dict[str, Any]] = []
        if latest == 0:
            return events
        request = urllib.request.Request(
            f"{self.chat_url}conversations/{conversation}/events?after=0",
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            while not events or events[-1]["position"] < latest:
                line = response.readline().decode()
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
        return events

    def shutdown_kernels(self, path: str | None = None) -> None:
        """End the sessions (and kernels) of the notebook ``path``, or all of them."""
        for session in self.get("api/sessions"):
            if path is None or session.get("path") == path:
                self.call("DELETE", f"api/sessions/{session['id']}")

    # -- notebooks and pages -----------------------------------------------------------------------

    def add_notebook(self, name: str, source: Path | None = None) -> str:
        """``<name>.ipynb`` in the server's root: a copy of ``source``, else a title cell and one
        code cell; its path there."""
        path = f"{name}.ipynb"
        if source is None:
            write_notebook(self.root / path, f"# {name}", "1 + 1")
        else:
            shutil.copyfile(source, self.root / path)
        return path

    def lab_url(self, workspace: str, path: str | None = None, *, reset: bool = True) -> str:
        """A JupyterLab workspace of its own (``reset``: fresh), optionally with a notebook."""
        query = urllib.parse.urlencode(
            {"reset": "", "token": self.token} if reset else {"token": self.token}
        )
        tree = f"/tree/{urllib.parse.quote(path)}" if path else ""
        return f"{self.url}/lab/workspaces/{workspace}{tree}?{query}"

    def stop(self) -> None:
        """SIGTERM (jupyter_server shuts its kernels down), SIGKILL after 15 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()

"""A private JupyterLab (or Notebook 7) for the side panel's browser tests, with the gmchat
server extension on a scripted provider and the demo project, or without the extension.

It uses the checkout's labextension (``gmchat_nb/labextension/``, what ``frontend/`` builds): a
link to it comes first on the server's data path, so a rebuild is tested without reinstalling.
Everything else is as in ``tests/widget/browser/lab.py``: 127.0.0.1, a token, its own config,
data, runtime, settings and workspace directories, no news or update checks.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from ..widget.browser.lab import SETTINGS_OVERRIDES, free_port, write_notebook

__all__ = ["LABEXTENSION", "ROOT", "JupyterApp"]

ROOT = Path(__file__).resolve().parents[2]
LABEXTENSION = ROOT / "gmchat_nb" / "labextension"


class JupyterApp:
    """``python -m jupyterlab`` (or ``notebook``) on 127.0.0.1 with a random token.

    ``rounds``: the scripted provider's rounds (each conversation plays them from the first);
    ``provider``: another provider instead (``"offline"``: deterministic answers from the
    question); ``chat``: more gmchat settings (``GMChat.chat_settings``); ``store``: the chat
    store (default: a SQLite file in ``base``); ``gmchat=False``: the server extension disabled,
    as on a server where it was never enabled.
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
        timeout: float = 60,
    ) -> None:
        if not (LABEXTENSION / "package.json").is_file():
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
        (dirs["data"] / "labextensions").mkdir(exist_ok=True)
        (dirs["data"] / "labextensions" / "gmchat-nb").symlink_to(LABEXTENSION)
        kernel = dirs["data"] / "kernels" / "python3"
        kernel.mkdir(parents=True, exist_ok=True)
        (kernel / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                }
            )
        )
        config: dict[str, Any] = {
            "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": gmchat}},
            # the tests read the notebook's model through window.jupyterapp
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
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("JUPYTER", "IPYTHON", "ANYWIDGET", "GMCHAT"))
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
            # environment's first), so the link to the checkout's build wins over an installed copy
            JUPYTER_PREFER_ENV_PATH="0",
            PYTHONUNBUFFERED="1",
        )
        command = [
            sys.executable,
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
            command += [
                f"--LabServerApp.app_settings_dir={dirs['app_settings']}",
                "--LabApp.news_url=None",
                "--LabApp.extension_manager=readonly",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]
        self.log = (base / f"{app}.log").open("w")
        self.process = subprocess.Popen(
            command, env=env, cwd=self.root, stdout=self.log, stderr=subprocess.STDOUT
        )
        try:
            self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
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
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-4000:]

    def get(self, path: str) -> Any:
        """GET ``path`` (below the server's root) with the token; the JSON answer."""
        request = urllib.request.Request(
            f"{self.url}/{path}", headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` as JSON to ``path`` (below the server's root) with the token; the JSON
        answer."""
        request = urllib.request.Request(
            f"{self.url}/{path}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = response.read()
        return json.loads(answer) if answer else None

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

    def add_notebook(self, name: str) -> str:
        """An empty-ish notebook (a title cell and one code cell) in the server's root."""
        write_notebook(self.root / f"{name}.ipynb", f"# {name}", "1 + 1")
        return f"{name}.ipynb"

    def lab_url(self, workspace: str, path: str | None = None, *, reset: bool = True) -> str:
        """A JupyterLab workspace of its own (``?reset``: fresh), optionally with a notebook."""
        query = urllib.parse.urlencode(
            {"reset": "", "token": self.token} if reset else {"token": self.token}
        )
        tree = f"/tree/{urllib.parse.quote(path)}" if path else ""
        return f"{self.url}/lab/workspaces/{workspace}{tree}?{query}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()

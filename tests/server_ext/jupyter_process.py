"""A real `jupyter server` subprocess on 127.0.0.1 with the gmchat extension and a token.

The HTTP, SSE, WebSocket and MCP tests' server: no JupyterLab, no kernel, a fixed token and a
minimal environment (the browser tests' JupyterLab is ``tests/jupyter_app.py``'s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from ..jupyter_app import free_port

TOKEN = "t0ken-for-tests"
# How long a server may take to answer its first request: a deadline for a hang only (a loaded
# machine running tests in parallel starts one in seconds, not in minutes).
START_TIMEOUT = 120
# sh -c's script for a server on "another host": set the namespace's host name, then run it
OTHER_HOST = 'hostname "$0" && exec "$@"'
AUTH = {"Authorization": f"token {TOKEN}"}
ROOT = Path(__file__).resolve().parents[2]


class JupyterServer:
    """`jupyter server` with gmchat: a scripted provider playing ``rounds``, the store at
    ``tmp/chat.sqlite3`` (kept across restarts in the same ``tmp``), and ``gmchat`` settings.
    With ``hostname`` it runs in a UTS namespace of its own under that host name (``unshare``,
    as root): to this machine's other servers it is a server on another host, whose process
    they cannot see."""

    def __init__(
        self,
        tmp: Path,
        rounds: list[dict[str, Any]],
        *,
        base_url: str = "/",
        hostname: str | None = None,
        **gmchat: Any,
    ) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        script = tmp / "rounds.yaml"
        script.write_text(yaml.safe_dump(rounds))
        self.store_path = tmp / "chat.sqlite3"
        self.store = str(gmchat.get("store", self.store_path))
        config = {
            "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": True}},
            "GMChat": {
                "provider": f"scripted:{script}",
                "project": "demo",
                "store": str(self.store_path),
                **gmchat,
            },
        }
        (tmp / "config").mkdir(exist_ok=True)
        (tmp / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        env = {
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "JUPYTER_DATA_DIR": str(tmp / "data"),
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp),
        }
        # A free port is probed, then bound by the server: another process (a test worker's
        # server or client) can take it in between, so a start that lost its port tries another.
        for _attempt in range(3):
            if self._start(tmp, env, base_url, hostname):
                return
            if "already in use" not in self.log.read_text():
                break
        raise RuntimeError(f"jupyter server did not start:\n{self.log.read_text()[-3000:]}")

    def _start(self, tmp: Path, env: dict[str, str], base_url: str, hostname: str | None) -> bool:
        self.port = free_port()
        self.log = tmp / f"server-{self.port}.log"
        host = [] if hostname is None else ["unshare", "--uts", "sh", "-c", OTHER_HOST, hostname]
        self.process = subprocess.Popen(
            [
                *host,
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={tmp}",
                f"--ServerApp.base_url={base_url}",
                "--allow-root",
            ],
            env=env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            cwd=ROOT,  # `tests.server_ext` importable for hooks named by dotted path
        )
        self.url = f"http://127.0.0.1:{self.port}{base_url}"
        self.chat_url = self.url + "gmchat/chat/"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                answered = httpx.get(self.url + "api/status", headers=AUTH).status_code == 200
            except httpx.TransportError:
                answered = False
            # (answered by this process: not another worker's server that took the port)
            if answered and self.process.poll() is None and "is running at" in self.log.read_text():
                return True
            time.sleep(0.1)
        self.stop()
        return False

    @property
    def ws_url(self) -> str:
        """The chat WebSocket's URL."""
        return self.chat_url.replace("http://", "ws://") + "ws"

    def kill(self) -> None:
        """kill -9: no shutdown hook runs, nothing is flushed."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=15)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)

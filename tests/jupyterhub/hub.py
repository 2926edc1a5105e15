"""A real JupyterHub on 127.0.0.1 for the tests: ``jupyterhub`` from PyPI, its
``configurable-http-proxy`` from npm (``scripts/install-proxy`` puts it in the cache), the dummy
authenticator and the simple local-process spawner. Every user's single-user server loads the
gmchat extension (enabled on install) with the settings given, and the environment given (the
store's ``GMCHAT_STORE``). The tests talk to it as a client would: through the hub's proxy, with
each user's own API token."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ADMIN_TOKEN = "hub-admin-token-for-tests"
MISSING_PROXY = (
    "The JupyterHub test needs configurable-http-proxy (npm): run scripts/install-proxy (as "
    ".ci/run does), or set GMCHAT_PROXY to its executable."
)


def proxy_command() -> str:
    """configurable-http-proxy: ``GMCHAT_PROXY``, the cache ``scripts/install-proxy`` fills, or
    ``PATH``."""
    cache = Path(os.environ.get("GMCHAT_CACHE") or Path.home() / ".cache" / "gmchat_nb")
    for candidate in (
        os.environ.get("GMCHAT_PROXY"),
        str(cache / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"),
        shutil.which("configurable-http-proxy"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError(MISSING_PROXY)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Hub:
    """``jupyterhub`` in ``home`` configured by ``config`` (a deployment's
    ``jupyterhub_config.py``), then by the test's own settings: users' servers run
    ``jupyterhub-singleuser`` with ``server_args`` and ``environment`` added to the config's; the
    hub's API through the proxy at :attr:`url`."""

    def __init__(
        self,
        home: Path,
        *,
        server_args: list[str],
        environment: dict[str, str],
        config: str = "",
    ) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        port, hub_port, api_port = _free_port(), _free_port(), _free_port()
        self.url = f"http://127.0.0.1:{port}/"
        settings = {
            "bind_url": self.url,
            "hub_bind_url": f"http://127.0.0.1:{hub_port}",
            "proxy_api_url": f"http://127.0.0.1:{api_port}",
            "proxy": proxy_command(),
            "db": f"sqlite:///{home / 'jupyterhub.sqlite'}",
            "cookie_secret": str(home / "cookie_secret"),
            "homes": str(home / "users" / "{username}"),
            "python": sys.executable,
            "server_args": server_args,
            "environment": environment,
            "token": ADMIN_TOKEN,
        }
        (home / "settings.json").write_text(json.dumps(settings))
        (home / "jupyterhub_config.py").write_text(config + "\n" + CONFIG)
        self.log = home / "jupyterhub.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(home / "jupyterhub_config.py")],
            cwd=home,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "HUB_SETTINGS": str(home / "settings.json")},
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if self.api("GET", "").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"jupyterhub did not start:\n{self.log.read_text()[-4000:]}")

    def api(self, method: str, path: str, **options: Any) -> httpx.Response:
        """A request to the hub's REST API as the test's admin service."""
        headers = {"Authorization": f"token {ADMIN_TOKEN}"}
        return httpx.request(
            method, self.url + "hub/api/" + path, headers=headers, timeout=30, **options
        )

    def add_user(self, name: str) -> str:
        """Create ``name`` and return an API token of theirs (what their browser session or
        their scripts would hold)."""
        created = self.api("POST", f"users/{name}")
        assert created.status_code in (201, 409), created.text
        token = self.api("POST", f"users/{name}/tokens", json={"note": "gmchat tests"})
        assert token.status_code == 201, token.text
        return str(token.json()["token"])

    def start(self, name: str) -> str:
        """Start ``name``'s server and wait until it is ready; its URL through the proxy."""
        started = self.api("POST", f"users/{name}/server")
        assert started.status_code in (201, 202), started.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            server = self.api("GET", f"users/{name}").json()["servers"].get("", {})
            if server.get("ready"):
                return f"{self.url}user/{name}/"
            time.sleep(0.2)
        raise RuntimeError(f"{name}'s server did not start:\n{self.log.read_text()[-4000:]}")

    def stop_server(self, name: str) -> None:
        """Stop ``name``'s server as the hub does (its spawner stops the process) and wait."""
        stopped = self.api("DELETE", f"users/{name}/server")
        assert stopped.status_code in (202, 204), stopped.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not self.api("GET", f"users/{name}").json()["servers"]:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name}'s server did not stop")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


# The hub's configuration, read from the settings the test wrote (JSON beside it).
CONFIG = """
import json, os
settings = json.load(open(os.environ["HUB_SETTINGS"]))
c = get_config()  # noqa: F821
c.JupyterHub.bind_url = settings["bind_url"]
c.JupyterHub.hub_bind_url = settings["hub_bind_url"]
c.ConfigurableHTTPProxy.api_url = settings["proxy_api_url"]
c.ConfigurableHTTPProxy.command = [settings["proxy"]]
c.JupyterHub.db_url = settings["db"]
c.JupyterHub.cookie_secret_file = settings["cookie_secret"]
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = settings["homes"]
c.Spawner.cmd = [settings["python"], "-m", "jupyterhub.singleuser"]
configured_args = c.Spawner.args if isinstance(c.Spawner.args, list) else []
c.Spawner.args = [*configured_args, "--allow-root", *settings["server_args"]]
configured_environment = c.Spawner.environment if isinstance(c.Spawner.environment, dict) else {}
c.Spawner.environment = {**configured_environment, **settings["environment"]}
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 60
c.Spawner.http_timeout = 60
c.JupyterHub.services = [{"name": "gmchat-tests", "api_token": settings["token"]}]
c.JupyterHub.load_roles = [
    {
        "name": "gmchat-tests",
        "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"],
        "services": ["gmchat-tests"],
    }
]
"""

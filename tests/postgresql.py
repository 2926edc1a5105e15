"""A throwaway PostgreSQL server for the tests, and a fresh schema per test.

``GMCHAT_TEST_POSTGRES`` names a server to use (a ``postgresql://`` URL whose user may create
schemas). Otherwise the session starts its own cluster from Debian's ``postgresql`` package
(``/usr/lib/postgresql/<version>/bin``) in a temporary folder on a free port of 127.0.0.1 and
stops it at the end; as root it runs the binaries as the ``postgres`` user (the server refuses
root). Without either the tests fail with the command that installs it: a backend the tests do
not run is not a backend we ship.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg

MISSING = (
    "The PostgreSQL store tests need a PostgreSQL server: install Debian's package "
    "(apt-get install postgresql, as .ci/run does) or set GMCHAT_TEST_POSTGRES to a "
    "postgresql:// URL."
)


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(command: list[str], as_postgres: bool) -> None:
    if as_postgres:
        command = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


class Cluster:
    """A throwaway PostgreSQL cluster in a temporary folder on a free port of 127.0.0.1 (as the
    ``postgres`` user when run as root): :meth:`stop` and :meth:`start` it as an outage would."""

    def __init__(self, *, fsync: bool = False) -> None:
        binaries = _binaries()
        if binaries is None:
            raise RuntimeError(MISSING)
        self._as_postgres = os.geteuid() == 0
        self.folder = Path(tempfile.mkdtemp(prefix="gmchat-pg-"))
        if self._as_postgres:
            shutil.chown(self.folder, "postgres")
        self._data, port = self.folder / "data", _free_port()
        self._pg_ctl = str(binaries / "pg_ctl")
        self._options = (
            f"-p {port} -k {self.folder} -c listen_addresses=127.0.0.1 "
            f"-c fsync={'on' if fsync else 'off'}"
        )
        _run(
            [str(binaries / "initdb"), "-D", str(self._data), "-A", "trust", "-U", "postgres"],
            self._as_postgres,
        )
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.start()

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        log = str(self.folder / "log")
        command = [self._pg_ctl, "-D", str(self._data), "-o", self._options, "-l", log]
        _run([*command, "-w", "start"], self._as_postgres)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate``: as a crash would, no clean shutdown)."""
        _run([self._pg_ctl, "-D", str(self._data), "-m", mode, "-w", "stop"], self._as_postgres)

    def remove(self) -> None:
        """Stop it (if it runs) and delete its folder."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def cluster(*, fsync: bool = False) -> Iterator[str]:
    """A server's URL: ``GMCHAT_TEST_POSTGRES`` or a throwaway :class:`Cluster` for the block
    (without fsync unless asked: tests need no crash safety of the machine, benchmarks want it
    real)."""
    configured = os.environ.get("GMCHAT_TEST_POSTGRES")
    if configured:
        yield configured
        return
    running = Cluster(fsync=fsync)
    try:
        yield running.url
    finally:
        running.remove()


def wait_until_ready(url: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A store URL whose tables live in a new, empty schema (dropped afterwards): tests share
    the server, never each other's rows."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in url else "?"
    try:
        yield f"{url}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")

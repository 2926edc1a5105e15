"""Who drives a turn, and who may take it over when its driver is gone.

Every process that drives turns has an :data:`OWNER` identity: its host, pid and start time
(which a reused pid does not share), and on a JupyterHub the hub user and server name it serves.
A turn also carries a *scope*: the servers that may take it over once its owner's lease lapses.
On a hub that is the hub user's servers (``JUPYTERHUB_USER``) and never another user's; off a hub
it is the servers sharing the store. A notebook kernel's turns have a scope of their own: no server
runs a kernel's turn (its settings and its tables live in the kernel), only the kernel's ``Chat``
asked again under the same turn id does.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path
from typing import Final

__all__ = [
    "HOST",
    "OWNER",
    "hub_user",
    "kernel_scope",
    "owner_alive",
    "owner_on_this_host",
    "server_scope",
]


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (Linux), which a reused pid does not share."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5); [0] is field 3


def hub_user() -> str:
    """The JupyterHub user this process serves ('' off a hub)."""
    return os.environ.get("JUPYTERHUB_USER", "")


def _hub_label() -> str:
    user = hub_user()
    if not user:
        return ""
    return f":{user}/{os.environ.get('JUPYTERHUB_SERVER_NAME', '')}"


HOST: Final = socket.gethostname()
OWNER: Final = f"{HOST}:{os.getpid()}:{_start_time(os.getpid()) or uuid.uuid4().hex}{_hub_label()}"
"""This process as a turn owner: host, pid and start time (a random token without /proc), then
on a hub ``:user/server``."""


def server_scope() -> str:
    """The take-over scope of a Jupyter server's turns: ``hub:<user>`` on a hub, else ''."""
    user = hub_user()
    return f"hub:{user}" if user else ""


def kernel_scope() -> str:
    """The scope of a kernel's turns (``kernel:`` and the hub user): no server sweeps them."""
    return f"kernel:{hub_user()}"


def _parts(owner: str) -> tuple[str, str, str]:
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    started = rest.partition(":")[0]
    return host, pid_text, started


def owner_on_this_host(owner: str) -> bool:
    """Whether ``owner`` names a process of this host (whose liveness can be checked here)."""
    return _parts(owner)[0] == HOST


def owner_alive(owner: str) -> bool:
    """Whether the process named by ``owner`` may still be running.

    On this host the answer is exact (the pid exists and started when the owner says). An owner
    on another host cannot be checked from here, so it counts as alive: its lease tells when it
    stopped renewing its claim.
    """
    if owner == OWNER:
        return True
    host, pid_text, started = _parts(owner)
    if host != HOST:
        return bool(host)
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    current = _start_time(pid)
    if current is not None:
        return current == started
    if Path("/proc/self/stat").exists():
        return False  # /proc works here and has no such process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True

"""Hooks named by dotted path in server tests: a ``message_received`` hook that blocks the turn
until the test releases it, recording on which thread it ran and whether it was released."""

from __future__ import annotations

import threading
from typing import Any

ENTERED = threading.Event()
RELEASE = threading.Event()
RELEASED: list[bool] = []
THREADS: list[str] = []
BLOCK_SECONDS = 5.0


def reset() -> None:
    """Forget earlier calls."""
    ENTERED.clear()
    RELEASE.clear()
    RELEASED.clear()
    THREADS.clear()


def block_until_released(**_: Any) -> None:
    """Block the turn (synchronously, as CPU-heavy work would) until :data:`RELEASE` is set."""
    THREADS.append(threading.current_thread().name)
    ENTERED.set()
    RELEASED.append(RELEASE.wait(BLOCK_SECONDS))

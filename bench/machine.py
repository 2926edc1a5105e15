"""What every benchmark prints about the machine it ran on (these machines are shared and noisy:
a number means little without the load it was measured under)."""

from __future__ import annotations

import os
import platform
import sys

__all__ = ["describe", "load"]


def load() -> str:
    """The 1/5/15-minute load averages ("n/a" where the platform has none)."""
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def describe() -> str:
    """Python, CPUs and the current load, for a benchmark's header."""
    return (
        f"Python {sys.version.split()[0]}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load()}"
    )

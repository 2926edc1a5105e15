"""Real file-system faults for the store tests: a small disk that fills up, a read-only one.

A tmpfs of a few megabytes is mounted for the test (root is needed, as ``.ci/run`` has: the
tests run as root there and here). Filling it makes SQLite fail as a full disk does ("database or
disk is full"); removing the filler gives the space back; remounting it read-only makes a store
file that cannot be written."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NEEDS_ROOT = (
    "This test mounts a small file system (a tmpfs) to fill it or make it read-only, which "
    "needs root (as .ci/run runs the tests)."
)


def _mount(*arguments: str) -> None:
    if os.geteuid() != 0:
        raise RuntimeError(NEEDS_ROOT)
    subprocess.run(["mount", *arguments], check=True, capture_output=True, timeout=30)


@contextmanager
def small_disk(folder: Path, megabytes: int = 16) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` mounted at ``folder`` for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def fill(folder: Path) -> Path:
    """Write a filler file until the file system is full; returns it (delete it to free the
    space)."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\x01" * size
            try:
                while True:
                    os.write(descriptor, block)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(descriptor)
    return filler


def make_read_only(folder: Path) -> None:
    """Remount the small disk at ``folder`` read-only."""
    _mount("-o", "remount,ro", str(folder))

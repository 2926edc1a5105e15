"""A PATH without Node: what a PyPI user's machine or a distribution's build root may be.

Debian's node and npm live in /usr/bin beside everything else, so a PATH cannot simply leave
their directory out: this makes a directory of links to every program on PATH except Node's
(node, nodejs, npm, npx, corepack, yarn, pnpm) and returns a PATH of the given directories
followed by it.

    python tests/release/without_node.py DIR [FIRST ...]   # prints that PATH (scripts/check-release)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

NODE_PROGRAMS = frozenset({"node", "nodejs", "npm", "npx", "corepack", "yarn", "pnpm"})


def path_without_node(links: Path, first: list[Path] | None = None) -> str:
    """Fill ``links`` with links to the programs on today's PATH but Node's; a PATH of ``first``
    (e.g. a venv's bin) and ``links``."""
    links.mkdir(parents=True, exist_ok=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            target = links / program.name
            if program.name in NODE_PROGRAMS or target.exists() or target.is_symlink():
                continue
            if program.is_file() and os.access(program, os.X_OK):
                target.symlink_to(program.resolve())
    return os.pathsep.join([*(str(path) for path in first or []), str(links)])


if __name__ == "__main__":
    print(path_without_node(Path(sys.argv[1]), [Path(arg) for arg in sys.argv[2:]]))

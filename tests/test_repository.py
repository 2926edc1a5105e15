"""The checkout works wherever it is cloned: no file holds a path of one machine."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Home and work folders of one machine or user (built from parts, so this file does not match).
MACHINE_PATH = re.compile(
    "(?<![\\w.~-])/(" + "|".join(["wo" + "rk", "ho" + "me", "ro" + "ot", "Us" + "ers"]) + ")/"
    r"|(?<![\w])[A-Z]:\\(Users|work)\\"
)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".ipynb", ".txt", ""}


def tracked_files() -> list[Path]:
    """The files git tracks (or every file, outside a git checkout)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return [path for path in ROOT.rglob("*") if path.is_file() and ".venv" not in path.parts]
    return [ROOT / name for name in listed.split("\0") if name]


def test_no_file_holds_a_machine_path() -> None:
    found = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if MACHINE_PATH.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not found, "paths of one machine (use paths relative to the checkout):\n" + "\n".join(
        found
    )


def test_the_check_finds_what_it_looks_for() -> None:
    home = "/" + "ho" + "me/ada/gmchat/shared/spec/schema.graphql"
    assert MACHINE_PATH.search(f'SAMPLE = Path("{home}")')
    assert MACHINE_PATH.search('open("/' + "wo" + 'rk/shared/spec/x")')
    assert not MACHINE_PATH.search('CHROMIUM = "/usr/bin/chromium"')
    assert not MACHINE_PATH.search("see ../shared/spec/chat-api-reference.txt")

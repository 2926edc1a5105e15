"""The checkout works wherever it is cloned: no file holds a path of one machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Home and work folders of one machine or user (built from parts, so this file does not match).
MACHINE_PATH = re.compile(
    "(?<![\\w.~-])/(" + "|".join(["wo" + "rk", "ho" + "me", "ro" + "ot", "Us" + "ers"]) + ")/"
    r"|(?<![\w])[A-Z]:\\(Users|work)\\"
)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".jsonl", ".ipynb", ".txt", ""}


def tracked_files() -> list[Path]:
    """The files git tracks or would (not ignored), or every file outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return [path for path in ROOT.rglob("*") if path.is_file() and ".venv" not in path.parts]
    return [ROOT / name for name in listed.split("\0") if name]


def lines_matching(pattern: re.Pattern[str]) -> list[str]:
    """``file:line: text`` of every line of the checkout's text files that ``pattern`` finds."""
    found = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    return found


def test_no_file_holds_a_machine_path() -> None:
    found = lines_matching(MACHINE_PATH)
    assert not found, "paths of one machine (use paths relative to the checkout):\n" + "\n".join(
        found
    )


def test_the_check_finds_what_it_looks_for() -> None:
    home = "/" + "ho" + "me/ada/gmchat/" + "sha" + "red/spec/schema.graphql"
    assert MACHINE_PATH.search(f'SAMPLE = Path("{home}")')
    assert MACHINE_PATH.search('open("/' + "wo" + "rk/sha" + 'red/spec/x")')
    assert not MACHINE_PATH.search('CHROMIUM = "/usr/bin/chromium"')
    assert not MACHINE_PATH.search("see ../" + "sha" + "red/spec/chat-api-reference.txt")


# Names of the team's folder beside a checkout (built from parts, so this file does not match).
BESIDE = re.compile(
    r"\.\./"
    + "sha"
    + r"red\b|"
    + "GMCHAT_"
    + "SHARED|"
    + "sha"
    + r"red/(spec|notes)/|"
    + "DES"
    + "IGN.md"
)


def test_nothing_needs_a_folder_beside_the_checkout() -> None:
    """A clone alone is whole: no file reads, links or points to a folder next to it."""
    found = lines_matching(BESIDE)
    assert not found, "references to a folder beside the checkout:\n" + "\n".join(found)


def test_the_beside_check_finds_what_it_looks_for() -> None:
    assert BESIDE.search("read ../" + "sha" + "red/spec/x.graphql")
    assert BESIDE.search("os.environ['GMCHAT_" + "SHARED']")
    assert not BESIDE.search("a shared store for hubs")


def test_a_clone_alone_runs_the_tests_that_read_fixtures(tmp_path: Path) -> None:
    """The checkout's files copied into an empty folder (nothing beside them) pass the tests
    that once read a schema from beside the checkout."""
    clone = tmp_path / "alone" / "gmchat_nb-clone"
    for path in tracked_files():
        if path.is_file():
            target = clone / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    tests = ["tests/core/project/test_sample_schema.py", "tests/test_docs.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=clone,
        env={**os.environ, "PYTHONPATH": str(clone)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]


def test_the_lab_extras_install_a_jupyterlab_the_side_panel_loads_in() -> None:
    """The side panel shares JupyterLab's packages rather than bundling them, so a JupyterLab
    older than the one it is built against cannot load it: the extras that install JupyterLab
    must not admit one."""
    import json
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    frontend = json.loads((ROOT / "frontend" / "package.json").read_text())
    built_for = Version(frontend["dependencies"]["@jupyterlab/application"].lstrip("^~"))
    floor = Version(f"{built_for.major}.{built_for.minor}")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installing = {
        name: Requirement(line)
        for name, lines in extras["optional-dependencies"].items()
        for line in lines
        if Requirement(line).name == "jupyterlab"
    }
    assert {"lab", "dev"} <= set(installing)
    for name, requirement in installing.items():
        too_old = Version(f"{built_for.major}.{built_for.minor - 1}")
        assert floor in requirement.specifier, f"[{name}] refuses JupyterLab {floor}"
        assert too_old not in requirement.specifier, f"[{name}] admits JupyterLab {too_old}"

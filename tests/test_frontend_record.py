"""The built front end's record (gmchat_nb/_frontend.py): what lets a build from an sdist skip
npm, and what tells a checkout its build is stale. On a small tree of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gmchat_nb._frontend import RECORD, built_files, sources_digest, staleness, write_record


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    frontend = tmp_path / "frontend"
    (frontend / "src" / "lab").mkdir(parents=True)
    (frontend / "schema").mkdir()
    (frontend / "node_modules" / "x").mkdir(parents=True)
    (frontend / "package.json").write_text('{"name": "x"}')
    (frontend / "package-lock.json").write_text("{}")
    (frontend / "src" / "widget.ts").write_text("export const a = 1;\n")
    (frontend / "src" / "lab" / "index.ts").write_text("export const b = 2;\n")
    (frontend / "schema" / "plugin.json").write_text("{}")
    (frontend / "node_modules" / "x" / "index.js").write_text("installed, not a source")
    package = tmp_path / "gmchat_nb"
    (package / "widget" / "static").mkdir(parents=True)
    (package / "labextension" / "static").mkdir(parents=True)
    for name in ("chat.js", "charts.js", "chat.css"):
        (package / "widget" / "static" / name).write_text(f"/* {name} */")
    (package / "labextension" / "package.json").write_text("{}")
    (package / "labextension" / "static" / "remoteEntry.abc.js").write_text("entry")
    return package, frontend


def test_a_fresh_build_is_current_and_records_every_built_file(tree: tuple[Path, Path]) -> None:
    package, frontend = tree
    assert staleness(package, frontend) == f"no build record (gmchat_nb/{RECORD})"
    record = write_record(package, frontend)
    assert staleness(package, frontend) is None
    assert set(record["files"]) == {
        "widget/static/chat.js",
        "widget/static/charts.js",
        "widget/static/chat.css",
        "labextension/package.json",
        "labextension/static/remoteEntry.abc.js",
    }
    assert json.loads((package / RECORD).read_text()) == record


@pytest.mark.parametrize(
    "edit",
    ["src/lab/index.ts", "package-lock.json", "schema/plugin.json", "src/new.ts"],
)
def test_an_edited_or_added_source_makes_the_build_stale(
    tree: tuple[Path, Path], edit: str
) -> None:
    package, frontend = tree
    write_record(package, frontend)
    (frontend / edit).write_text("changed")
    assert staleness(package, frontend) == "the sources in frontend/ changed since the last build"


def test_what_npm_installed_is_not_a_source(tree: tuple[Path, Path]) -> None:
    _, frontend = tree
    before = sources_digest(frontend)
    (frontend / "node_modules" / "x" / "index.js").write_text("another version")
    (frontend / "lib").mkdir()
    (frontend / "lib" / "index.js").write_text("intermediate output")
    assert sources_digest(frontend) == before


def test_the_digest_does_not_depend_on_where_the_tree_is(
    tree: tuple[Path, Path], tmp_path: Path
) -> None:
    _, frontend = tree
    before = sources_digest(frontend)
    moved = tmp_path / "elsewhere" / "frontend"
    moved.parent.mkdir()
    frontend.rename(moved)
    (moved / "src" / "widget.ts").touch()  # a new time, the same bytes
    assert sources_digest(moved) == before
    (moved / "src" / "widget.ts").rename(moved / "src" / "renamed.ts")  # same bytes, new name
    assert sources_digest(moved) != before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("widget/static/chat.js", "built files missing or changed since the build: "),
        (
            "labextension/static/remoteEntry.abc.js",
            "built files missing or changed since the build: ",
        ),
    ],
)
def test_a_built_file_edited_or_deleted_makes_the_build_stale(
    tree: tuple[Path, Path], change: str, expected: str
) -> None:
    package, frontend = tree
    write_record(package, frontend)
    (package / change).write_text("edited by hand")
    assert staleness(package, frontend) == expected + change
    (package / change).unlink()
    assert staleness(package, frontend) == expected + change


def test_an_sdist_without_frontend_sources_trusts_its_record(tree: tuple[Path, Path]) -> None:
    """A tree without frontend/ (nothing to rebuild from) is current when its files are the
    recorded ones."""
    package, frontend = tree
    write_record(package, frontend)
    assert staleness(package, frontend.parent / "absent") is None


def test_a_record_that_is_not_one_is_no_record(tree: tuple[Path, Path]) -> None:
    package, frontend = tree
    (package / RECORD).write_text("[1, 2]")
    assert staleness(package, frontend) == f"no build record (gmchat_nb/{RECORD})"
    assert built_files(package)["labextension/package.json"]

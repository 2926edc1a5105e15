"""The sdist and the wheel as PyPI users get them: what each carries, the wheel built from the
sdist without Node, the sdist's clear refusal when its front end must be built and npm is
missing, and the front end rebuilt elsewhere from the sdist to the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from gmchat_nb._frontend import RECORD, built_files, read_record

from .conftest import Dists, unpack

pytestmark = pytest.mark.release

LABEXTENSION = "share/jupyter/labextensions/gmchat-nb/"


def wheel_names(dists: Dists) -> list[str]:
    with zipfile.ZipFile(dists.wheel) as wheel:
        return wheel.namelist()


def sdist_names(dists: Dists) -> list[str]:
    with tarfile.open(dists.sdist) as sdist:
        return [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]


def test_the_wheel_carries_the_labextension_once_and_the_built_widget(dists: Dists) -> None:
    names = wheel_names(dists)
    data = next(name.split("/", 1)[0] for name in names if ".data/" in name)
    shared = [name.split("/data/", 1)[1] for name in names if name.startswith(f"{data}/data/")]
    assert f"{LABEXTENSION}package.json" in shared
    assert f"{LABEXTENSION}install.json" in shared
    assert any(name.startswith(f"{LABEXTENSION}static/remoteEntry.") for name in shared)
    assert "etc/jupyter/jupyter_server_config.d/gmchat_nb.json" in shared
    assert not [name for name in names if name.startswith("gmchat_nb/labextension/")]
    for built in ("chat.js", "charts.js", "chat.css"):
        assert f"gmchat_nb/widget/static/{built}" in names
    assert f"gmchat_nb/{RECORD}" in names
    assert "gmchat_nb/evals/datasets/cassettes/oracle-openai.jsonl" in names


def test_the_wheel_holds_the_front_end_the_sdist_recorded(dists: Dists) -> None:
    """The wheel built from the sdist did not rebuild: its files are the sdist's, byte for byte."""
    with zipfile.ZipFile(dists.wheel) as wheel:
        record = json.loads(wheel.read(f"gmchat_nb/{RECORD}"))
        data = next(name.split("/", 1)[0] for name in wheel.namelist() if ".data/" in name)
        found = {}
        for name, digest in record["files"].items():
            inside = (
                f"{data}/data/{LABEXTENSION}{name.removeprefix('labextension/')}"
                if name.startswith("labextension/")
                else f"gmchat_nb/{name}"
            )
            found[name] = hashlib.sha256(wheel.read(inside)).hexdigest() == digest
    assert found and all(found.values()), [name for name, same in found.items() if not same]
    with tarfile.open(dists.sdist) as sdist:
        top = sdist.getnames()[0].split("/")[0]
        member = sdist.extractfile(f"{top}/gmchat_nb/{RECORD}")
        assert member is not None
        assert json.loads(member.read()) == record


def test_the_sdist_carries_sources_built_files_and_record_but_nothing_installed(
    dists: Dists,
) -> None:
    names = sdist_names(dists)
    for needed in (
        "pyproject.toml",
        "hatch_build.py",
        "frontend/package.json",
        "frontend/package-lock.json",
        "frontend/src/widget.ts",
        "gmchat_nb/_frontend.py",
        f"gmchat_nb/{RECORD}",
        "gmchat_nb/widget/static/chat.js",
        "gmchat_nb/labextension/package.json",
    ):
        assert needed in names, needed
    assert not [
        name for name in names if name.startswith(("frontend/node_modules", "frontend/lib/"))
    ]


def pip_wheel(tree: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "--wheel-dir",
            str(out),
            str(tree),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_the_sdist_builds_its_wheel_without_node(
    dists: Dists, tmp_path: Path, no_node_path: str
) -> None:
    env = {**os.environ, "PATH": no_node_path}
    assert shutil.which("npm", path=no_node_path) is None
    assert shutil.which("node", path=no_node_path) is None
    done = pip_wheel(dists.sdist, tmp_path, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "front end current with its sources: not rebuilt" in done.stdout + done.stderr
    assert len(list(tmp_path.glob("gmchat_nb-*.whl"))) == 1


def test_an_sdist_whose_front_end_must_be_built_names_npm_and_the_ways_out(
    dists: Dists, tmp_path: Path, no_node_path: str
) -> None:
    """A packager patched a TypeScript source: the build must run npm, which is missing."""
    tree = unpack(dists.sdist, tmp_path / "patched")
    source = tree / "frontend" / "src" / "widget.ts"
    source.write_text(source.read_text() + "\n// patched by a distribution\n")
    env = {**os.environ, "PATH": no_node_path}
    done = pip_wheel(tree, tmp_path / "out", env)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert (
        "the front end must be built (the sources in frontend/ changed since the last build)"
        in said
    )
    assert "npm is not on PATH" in said
    assert "Node.js 20.19 or newer" in said
    assert "--only-binary gmchat_nb" in said
    assert "GMCHAT_FRONTEND_BUILD=never" in said
    assert "Could not find cmd" not in said  # not hatch-jupyter-builder's bare error

    env["GMCHAT_FRONTEND_BUILD"] = "never"
    done = pip_wheel(tree, tmp_path / "out", env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (
        "not rebuilt (the sources in frontend/ changed since the last build)"
        in done.stdout + done.stderr
    )


def test_the_front_end_rebuilt_in_another_folder_is_byte_identical(
    dists: Dists, tmp_path: Path
) -> None:
    """Reproducible: the sdist's bundles were built in the checkout; the same sources built again
    from the unpacked sdist, somewhere else, at another time, give the same bytes (content
    hashes from content; no times, no paths)."""
    assert shutil.which("npm") is not None, "this test builds the front end: Node 20.19+ with npm"
    tree = unpack(dists.sdist, tmp_path / "again")
    package = tree / "gmchat_nb"
    carried = read_record(package)
    assert carried is not None
    shutil.rmtree(package / "labextension")
    for name in ("chat.js", "charts.js", "chat.css"):
        (package / "widget" / "static" / name).unlink()
    bin_dir = str(Path(sys.executable).parent)  # jupyter-builder
    env = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])}
    for command in (["npm", "ci", "--no-audit", "--no-fund"], ["npm", "run", "build"]):
        done = subprocess.run(
            command, cwd=tree / "frontend", capture_output=True, text=True, env=env, timeout=1200
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rebuilt = built_files(package)
    differing = sorted(set(rebuilt) ^ set(carried["files"])) + sorted(
        name for name in rebuilt if carried["files"].get(name, rebuilt[name]) != rebuilt[name]
    )
    assert not differing, differing
    assert read_record(package) == carried

"""What a PyPI user installs: the sdist and the wheel built from it (``scripts/check-release``
builds them once and passes their folder as ``GMCHAT_RELEASE_DIST``; without it the session
builds them here, as that script does)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from .without_node import path_without_node

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


def build_dists(out: Path) -> None:
    """The sdist from the checkout, then the wheel from the sdist on a PATH without Node."""
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(ROOT)], check=True
    )
    (sdist,) = out.glob("*.tar.gz")
    env = {**os.environ, "PATH": path_without_node(out.parent / "no-node-bin")}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(sdist)],
        check=True,
        env=env,
    )


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    given = os.environ.get("GMCHAT_RELEASE_DIST")
    if given:
        out = Path(given)
    else:
        out = tmp_path_factory.mktemp("release") / "dist"
        build_dists(out)
    sdists, wheels = sorted(out.glob("gmchat_nb-*.tar.gz")), sorted(out.glob("gmchat_nb-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, (
        f"one sdist and one wheel in {out}: {sdists + wheels}"
    )
    return Dists(sdists[0], wheels[0])


@pytest.fixture
def no_node_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return path_without_node(tmp_path_factory.getbasetemp() / "no-node-bin")


def unpack(sdist: Path, into: Path) -> Path:
    """The sdist's tree (its one top folder) below ``into``."""
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    (top,) = into.iterdir()
    return top

"""One Node version, said the same everywhere: frontend/package.json's ``engines`` admits only
Node versions every locked package supports (npm would warn EBADENGINE, and frontend/.npmrc's
engine-strict makes that an error), the Node that builds here is one of them, and the README and
the build's error message name that version."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONTEND = ROOT / "frontend"

# semver's own range logic (an npm dependency of the build) judges npm's ranges
CHECK = """
const semver = require(process.argv[1] + "/node_modules/semver");
const pkg = require(process.argv[1] + "/package.json");
const lock = require(process.argv[1] + "/package-lock.json");
const floor = semver.minVersion(pkg.engines.node).version;
const refusing = Object.entries(lock.packages)
  .filter(([, entry]) => entry.engines && typeof entry.engines.node === "string")
  .filter(([, entry]) => !semver.satisfies(floor, entry.engines.node))
  .map(([name, entry]) => `${name}@${entry.version} needs node ${entry.engines.node}`);
console.log(JSON.stringify({
  floor,
  refusing,
  running: process.version,
  runningFits: semver.satisfies(process.version, pkg.engines.node),
}));
"""


def test_every_locked_package_runs_on_the_node_the_engines_field_admits() -> None:
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, "-e", CHECK, str(FRONTEND)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["refusing"] == [], (
        f"engines admits node {found['floor']}, but: {found['refusing']}"
    )
    assert found["runningFits"], f"this machine's node {found['running']} is outside engines"
    assert "engine-strict=true" in (FRONTEND / ".npmrc").read_text().splitlines()

    floor = ".".join(found["floor"].split(".")[:2])  # "20.19"
    readme = (ROOT / "README.md").read_text()
    assert f"Node {floor}" in readme, f"the README should name Node {floor}"
    assert not re.search(r"Node (\d+)(?!\.)\b", readme.replace(f"Node {floor}", "")), (
        "the README names another Node version"
    )
    assert f"Node.js {floor} or newer" in (ROOT / "hatch_build.py").read_text()

"""The built front end's record: which sources in ``frontend/`` its files were built from.

The build (``hatch_build.py``) writes ``gmchat_nb/frontend_build.json`` after ``npm run build``:
the SHA-256 of the front end's sources and of every file it built (the widget's
``widget/static/`` files and the side panel's ``labextension/``). An sdist carries the record with
the built files, so a build from it that finds them current needs no Node (a wheel from an sdist,
``pip install`` of an sdist); the tests compare the record with the checkout to catch a stale build.

Standard library only: the build hook loads this file by path, before gmchat_nb's dependencies
are installed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = [
    "RECORD",
    "REQUIRED",
    "built_files",
    "read_record",
    "source_files",
    "sources_digest",
    "staleness",
    "write_record",
]

RECORD = "frontend_build.json"

# What `npm run build` reads: its own configuration, the locked packages and the sources. A
# change to any of them changes what it builds (lib/ and node_modules/ are its own output).
SOURCE_FILES = (
    "package.json",
    "package-lock.json",
    ".npmrc",
    "tsconfig.json",
    "build.mjs",
    "webpack.config.cjs",
)
SOURCE_DIRS = ("src", "schema")

# What it writes below the package: the widget's bundle and the side panel's labextension.
WIDGET_FILES = ("widget/static/chat.js", "widget/static/charts.js", "widget/static/chat.css")
LABEXTENSION = "labextension"
REQUIRED = (*WIDGET_FILES, f"{LABEXTENSION}/package.json")


def source_files(frontend: Path) -> list[Path]:
    """The files of ``frontend/`` that the build reads, in a stable order."""
    found = [frontend / name for name in SOURCE_FILES if (frontend / name).is_file()]
    for directory in SOURCE_DIRS:
        found += [path for path in (frontend / directory).rglob("*") if path.is_file()]
    return sorted(found, key=lambda path: path.relative_to(frontend).as_posix())


def sources_digest(frontend: Path) -> str:
    """One SHA-256 over the sources' relative paths and bytes (not their times or location)."""
    digest = hashlib.sha256()
    for path in source_files(frontend):
        digest.update(path.relative_to(frontend).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def built_files(package: Path) -> dict[str, str]:
    """Every built file below ``package`` (relative POSIX path) and its SHA-256."""
    paths = [package / name for name in WIDGET_FILES if (package / name).is_file()]
    labextension = package / LABEXTENSION
    if labextension.is_dir():
        paths += [path for path in labextension.rglob("*") if path.is_file()]
    return {
        path.relative_to(package).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(paths)
    }


def write_record(package: Path, frontend: Path) -> dict[str, Any]:
    """Record the sources' digest and the built files after a build."""
    record = {"sources": sources_digest(frontend), "files": built_files(package)}
    (package / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def read_record(package: Path) -> dict[str, Any] | None:
    """The record of the last build, or None when there is none (or it is not a record)."""
    try:
        record = json.loads((package / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        return None
    return record


def staleness(package: Path, frontend: Path) -> str | None:
    """Why the built front end is not the build of today's sources, or None when it is.

    Current means: a record exists, its sources digest is today's, and every file it lists is
    present with the bytes it recorded (and nothing required is missing)."""
    record = read_record(package)
    if record is None:
        return f"no build record ({package.name}/{RECORD})"
    if frontend.is_dir() and record.get("sources") != sources_digest(frontend):
        return "the sources in frontend/ changed since the last build"
    files = record["files"]
    missing = [name for name in REQUIRED if name not in files]
    if missing:
        return f"the record lists no {', '.join(missing)}"
    found = built_files(package)
    changed = sorted(name for name, digest in files.items() if found.get(name) != digest)
    if changed:
        return f"built files missing or changed since the build: {', '.join(changed[:5])}"
    return None


if __name__ == "__main__":  # `npm run build`'s last step (frontend/package.json's build:record)
    PACKAGE = Path(__file__).resolve().parent
    written = write_record(PACKAGE, PACKAGE.parent / "frontend")
    print(f"recorded {len(written['files'])} built files of sources {written['sources'][:12]}…")

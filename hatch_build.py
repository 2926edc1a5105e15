"""Builds the front end (``frontend/``, npm) into the package when, and only when, it must.

Every build (an sdist, a wheel, ``pip install -e .``) needs the widget's bundle and the side
panel's labextension. A checkout has only their sources, so it runs ``npm ci`` (or ``npm install``
beside an existing ``node_modules``) and ``npm run build``, then records the sources' digest and
the built files (``gmchat_nb/_frontend.py``). An sdist carries that record with the built files:
a build from it (its wheel in ``python -m build``, ``pip install gmchat_nb-….tar.gz``) finds them
current and needs no Node, so ``python -m build`` runs the front-end build once, and packagers
without npm can build the wheel. When a build is needed and npm is missing, the error says which
tool and the ways out.

``GMCHAT_FRONTEND_BUILD``: ``auto`` (the default: build when stale), ``always`` (build even when
current: the reproducibility check), ``never`` (use the files present, stale or not; they must
exist).

Why not hatch-jupyter-builder's npm_builder: it runs npm on every build (the sdist did not install
without npm although it carried the built files) and cannot ask for its build tools only when it
builds; this hook's ``dependencies()`` adds jupyter-builder to the build's requirements only then.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODES = ("auto", "always", "never")

# `jupyter-builder build .` (frontend/package.json's build:labextension) bundles the side panel
JUPYTER_BUILDER = "jupyter-builder>=1.3,<2"

NO_NPM = """\
gmchat_nb: the front end must be built ({why}), and npm is not on PATH.
  Install Node.js 20.19 or newer with npm (https://nodejs.org), then build again;
  or install the wheel, which carries the built front end: pip install --only-binary gmchat_nb gmchat_nb;
  or, to use the built files present anyway: GMCHAT_FRONTEND_BUILD=never.
  (docs/development.md, "Building the front end")"""


class FrontEndBuildHook(BuildHookInterface):  # type: ignore[misc]  (hatchling: build-time only)
    PLUGIN_NAME = "custom"

    @functools.cached_property
    def _record(self) -> ModuleType:
        # gmchat_nb/_frontend.py by path: importing gmchat_nb would need its dependencies
        path = Path(self.root) / "gmchat_nb" / "_frontend.py"
        spec = importlib.util.spec_from_file_location("gmchat_nb_frontend_record", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def _mode(self) -> str:
        mode = os.environ.get("GMCHAT_FRONTEND_BUILD", "auto").strip().lower() or "auto"
        if mode not in MODES:
            raise ValueError(f"GMCHAT_FRONTEND_BUILD={mode!r}: expected one of {', '.join(MODES)}")
        return mode

    def _staleness(self) -> str | None:
        root = Path(self.root)
        why: str | None = self._record.staleness(root / "gmchat_nb", root / "frontend")
        return why

    def dependencies(self) -> list[str]:
        mode = self._mode()
        if mode == "always" or (mode == "auto" and self._staleness() is not None):
            return [JUPYTER_BUILDER]
        return []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        mode = self._mode()
        why = self._staleness()
        if mode == "never" or (mode == "auto" and why is None):
            package = Path(self.root) / "gmchat_nb"
            missing = [name for name in self._record.REQUIRED if not (package / name).is_file()]
            if missing:
                raise RuntimeError(
                    f"gmchat_nb: GMCHAT_FRONTEND_BUILD=never, but {', '.join(missing)} "
                    "are not built (gmchat_nb/)"
                )
            self.app.display_info(
                "gmchat_nb: front end "
                + (
                    "current with its sources: not rebuilt"
                    if why is None
                    else f"not rebuilt ({why})"
                )
            )
            return
        self._build(why or "GMCHAT_FRONTEND_BUILD=always")

    def _build(self, why: str) -> None:
        root = Path(self.root)
        frontend = root / "frontend"
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(NO_NPM.format(why=why))
        self.app.display_info(f"gmchat_nb: building the front end ({why})")
        install = "install" if (frontend / "node_modules").is_dir() else "ci"
        for command in ([npm, install, "--no-audit", "--no-fund"], [npm, "run", "build"]):
            subprocess.run(command, cwd=frontend, check=True)
        # `npm run build` ends by recording what it built (gmchat_nb/_frontend.py)
        still = self._staleness()
        if still is not None:
            raise RuntimeError(f"gmchat_nb: the front end was built, yet {still}")

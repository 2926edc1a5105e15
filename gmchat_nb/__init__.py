"""gmchat_nb: a Jupyter-first analytics assistant over GeneralManager GraphQL projects."""

from __future__ import annotations

import sys

from .chat import Chat, Turn
from .core.project import connect, demo_project
from .core.settings import load_settings

__all__ = ["Chat", "Turn", "connect", "demo_project", "load_settings"]
__version__ = "0.1.0"

if "IPython" in sys.modules:  # a notebook kernel: `chat` as a cell's last line shows its panel
    from .widget.display import register_display

    register_display()


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where JupyterLab finds the side panel's prebuilt labextension (built into
    ``gmchat_nb/labextension/`` by ``frontend/``; ``jupyter labextension develop`` links it)."""
    return [{"src": "labextension", "dest": "gmchat-nb"}]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext gmchat_nb``: registers ``%%gmchat`` and ``%gmchat config``."""
    from .widget.display import register_display
    from .widget.magics import load_ipython_extension as load

    register_display(ipython)
    load(ipython)

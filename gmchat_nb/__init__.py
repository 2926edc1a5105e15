"""gmchat_nb: a Jupyter-first analytics assistant over GeneralManager GraphQL projects."""

from __future__ import annotations

from .core.project import connect, demo_project

__all__ = ["connect", "demo_project"]
__version__ = "0.1.0"

"""Demo projects by name, for the CLI, the server and ``gmchat_nb.demo_project``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .data_gm import gm_large_spec, gm_toy_spec
from .data_inventory import inventory_spec
from .data_large import large_spec
from .spec import DemoSpec

__all__ = ["DEMO_NAMES", "demo_spec"]

_FACTORIES: dict[str, Callable[..., DemoSpec]] = {
    "inventory": inventory_spec,
    "large": large_spec,
    # GeneralManager's eval fixtures (``--fixture toy`` / ``--fixture large``), GM-shaped
    "toy": gm_toy_spec,
    "synthetic": gm_large_spec,
}

DEMO_NAMES = tuple(_FACTORIES)
"""The names :func:`demo_spec` accepts."""


def demo_spec(name: str, **options: Any) -> DemoSpec:
    """The spec of demo ``name``; ``options`` go to its factory (``large_spec(manager_count=...)``).

    Raises :class:`ValueError` naming the valid demos for an unknown name, and
    :class:`TypeError` for options the factory does not take.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(f"unknown demo {name!r}; choose one of: {', '.join(DEMO_NAMES)}")
    return factory(**options)

"""Settings that name Python objects by a dotted path: the one function that imports them.

``"package.module.name"`` or ``"package.module:name"``; the longest importable prefix is the
module and the rest are attributes, so ``"package.module.Class.method"`` works too. Hooks,
``permission``, ``audit.logger``, ``planned.catalog`` and dotted provider classes are all read
here, and a path that cannot be used says so in one message naming its setting.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DottedPathError", "resolve_dotted"]

EXAMPLE = "'package.module.name'"


class DottedPathError(ValueError):
    """A dotted path that names nothing importable (or nothing callable, where a callable is
    wanted). ``key`` is the setting that gave it, as :class:`ChatConfigurationError`'s is."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


def resolve_dotted(path: str, *, key: str, want_callable: bool = True) -> Any:
    """The object ``path`` names, for the setting ``key`` (``"hooks.error"``, ``"provider"``).

    Raises :class:`DottedPathError` — ``cannot import the KEY 'PATH': WHY``, or ``the KEY 'PATH'
    is not callable`` when ``want_callable`` — and lets any other error the imported module
    raises while it loads go through unchanged.
    """
    parts = path.replace(":", ".").split(".")
    if len(parts) < 2 or not all(part.strip() for part in parts):
        raise DottedPathError(
            f"cannot import the {key} {path!r}: give a dotted path such as {EXAMPLE}", key=key
        )
    failure: Exception | None = None
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            target: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if not _names_missing(error, module_name):
                failure = error  # the module exists but imports something missing: say that
                break
            failure = error  # not a module: perhaps an attribute of a shorter prefix
            continue
        except ImportError as error:  # the module exists and failed while importing
            failure = error
            break
        try:
            for name in parts[cut:]:
                target = getattr(target, name)
        except AttributeError as error:
            failure = error
            break
        if want_callable and not callable(target):
            raise DottedPathError(f"the {key} {path!r} is not callable", key=key)
        return target
    raise DottedPathError(f"cannot import the {key} {path!r}: {failure}", key=key)


def _names_missing(error: ModuleNotFoundError, module_name: str) -> bool:
    """Whether ``error`` only says that ``module_name`` (or a package above it) does not exist."""
    missing = error.name or ""
    return module_name == missing or module_name.startswith(missing + ".")

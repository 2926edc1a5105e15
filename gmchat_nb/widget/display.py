"""``chat`` as a cell's last line shows its chat panel.

The widget is a view on a :class:`~gmchat_nb.Chat`, so the dependency runs one way: this package
imports the chat, never the reverse. Instead of ``Chat`` building its own widget, this module
tells IPython how to display a ``Chat`` — ``import gmchat_nb`` calls :func:`register_display` when
it finds a running IPython shell (a notebook kernel), so scripts and the CLI never import the
widget libraries.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..chat import Chat
from .chat_widget import ChatWidget

__all__ = ["panel", "register_display"]

_PANELS: weakref.WeakKeyDictionary[Chat, ChatWidget] = weakref.WeakKeyDictionary()


def panel(chat: Chat) -> ChatWidget:
    """The chat's panel: one per chat, so every display of it shows the same live widget."""
    widget = _PANELS.get(chat)
    if widget is None:
        widget = _PANELS[chat] = ChatWidget(chat)
    return widget


def _bundle(chat: Chat, include: Any = None, exclude: Any = None) -> Any:
    return panel(chat)._repr_mimebundle_(include=include, exclude=exclude)


def register_display(shell: Any = None) -> bool:
    """Teach IPython's display to show a :class:`Chat` as its panel (text where widgets
    cannot). ``shell`` defaults to the running IPython shell; False when there is none."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.mimebundle_formatter.for_type(Chat, _bundle)
    return True

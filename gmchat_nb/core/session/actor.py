"""Who is chatting: :class:`Actor`, the one a conversation, its budgets and its confirmations
belong to."""

from __future__ import annotations

import getpass
from dataclasses import dataclass

__all__ = ["Actor"]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is chatting. Anonymous actors may read but never mutate."""

    id: str
    name: str = ""
    authenticated: bool = True

    @classmethod
    def local(cls) -> Actor:
        """The notebook's own user (authenticated: they run the kernel)."""
        user = getpass.getuser()
        return cls(id=f"local:{user}", name=user, authenticated=True)

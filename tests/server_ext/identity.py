"""Test-only auth: an identity provider with one token per user, and permission hooks."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User
from tornado import web

TOKENS = {"alice-token": "alice", "bob-token": "bob"}


class TwoUsers(IdentityProvider):
    """``Authorization: token alice-token`` is alice, ``bob-token`` is bob."""

    async def get_user_token(self, handler: web.RequestHandler) -> User | None:
        name = TOKENS.get(self.get_token(handler) or "")
        if name is None:
            return None
        return User(username=name, name=name, display_name=name)

    def is_token_authenticated(self, handler: web.RequestHandler) -> bool:
        return TOKENS.get(self.get_token(handler) or "") is not None


def deny(user: Any, request: Any) -> bool:
    """The permission hook that says no."""
    return False


def allow(user: Any, request: Any) -> bool:
    """The permission hook that says yes."""
    return True

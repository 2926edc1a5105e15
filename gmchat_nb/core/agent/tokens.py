"""Agent tokens: a person's credential for one agent, on the MCP route only, with scopes.

A Jupyter token is the whole account (every route, kernels included): an agent configured with
one can do anything its person can. An agent token reaches one route, ``{base_url}gmchat/mcp``,
as one person, with the scopes the person gave it: ``read`` (the read tools) and ``propose``
(also ``mutate``, which only ever proposes: a person decides each change). It cannot decide a
change, list or make tokens, or reach any other route.

A token is ``gmat_`` and 43 URL-safe characters (32 random bytes): the prefix lets the MCP route
tell it from Jupyter's before Jupyter's authentication runs, and lets secret scanners find one
that leaked. Only its SHA-256 is stored (the token has 256 bits of entropy, so a fast hash is
enough: there is nothing to guess), with its first characters to recognise it by. It is shown
once, when it is made. Revoked tokens keep their row; expired ones stop working at once.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from ..store import AgentTokenRecord, ChatStore
from ..text import lone_surrogate_at

__all__ = [
    "DEFAULT_DAYS",
    "MAX_DAYS",
    "PROPOSE",
    "READ",
    "SCOPES",
    "TOKEN_PREFIX",
    "AgentTokenError",
    "AgentTokenRecord",
    "AgentTokens",
    "CreatedToken",
    "looks_like_agent_token",
    "parse_expiry",
    "token_json",
]

TOKEN_PREFIX: Final = "gmat_"
READ: Final = "read"
PROPOSE: Final = "propose"
SCOPES: Final = (READ, PROPOSE)
DEFAULT_DAYS: Final = 90
MAX_DAYS: Final = 365
MAX_NAME: Final = 100
SHOWN_CHARACTERS: Final = 12  # the prefix a list shows: "gmat_" and 7 characters of the secret
_SHAPE: Final = re.compile(r"gmat_[A-Za-z0-9_-]{43}")
_DAY: Final = 86400.0


class AgentTokenError(ValueError):
    """A refused request about agent tokens: ``code`` is ``invalid`` or ``not_found``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class CreatedToken:
    """A token just made: its record, and the secret, which is never shown again."""

    record: AgentTokenRecord
    secret: str


def looks_like_agent_token(value: str) -> bool:
    """Whether ``value`` has an agent token's shape (not whether one exists)."""
    return _SHAPE.fullmatch(value) is not None


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def parse_expiry(value: str) -> float | None:
    """``--expires``: ``90d``, ``12h``, a whole number of days, or ``never``; days (None:
    never). Raises :class:`AgentTokenError` saying what it accepts."""
    text = value.strip().lower()
    if text == "never":
        return None
    unit = {"d": 1.0, "h": 1 / 24}.get(text[-1:])
    number = text[:-1] if unit is not None else text
    try:
        days = float(number) * (unit or 1.0)
    except ValueError:
        days = math.nan
    if not math.isfinite(days) or days <= 0 or days > MAX_DAYS:
        raise AgentTokenError(
            "invalid",
            f"--expires must be a duration such as 30d or 12h (at most {MAX_DAYS} days) or "
            f"'never', not {value[:40]!r}.",
        )
    return days


def check_name(name: Any) -> str:
    """A token's name: text a person recognises it by (1 to 100 characters, not blank)."""
    if not isinstance(name, str) or not name.strip():
        raise AgentTokenError("invalid", "'name' must be text, not blank: what the token is for.")
    if lone_surrogate_at(name) is not None:
        raise AgentTokenError("invalid", "'name' holds a character that is not valid Unicode.")
    if len(name.strip()) > MAX_NAME:
        raise AgentTokenError("invalid", f"'name' must be at most {MAX_NAME} characters.")
    return name.strip()


def check_scopes(scopes: Any) -> tuple[str, ...]:
    """The scopes in their order (``propose`` brings ``read``: proposing needs reading)."""
    if isinstance(scopes, str) or not isinstance(scopes, Iterable):
        raise AgentTokenError("invalid", "'scopes' must be a list of 'read' and 'propose'.")
    given = list(scopes)
    unknown = [s for s in given if not isinstance(s, str) or s not in SCOPES]
    if unknown:
        shown = ", ".join(repr(s)[:40] for s in unknown[:3])
        raise AgentTokenError(
            "invalid", f"Unknown scope {shown}: a token's scopes are 'read' and 'propose'."
        )
    if not given:
        raise AgentTokenError("invalid", "'scopes' must name at least 'read'.")
    return tuple(scope for scope in SCOPES if scope in given or scope == READ)


def check_days(days: Any) -> float | None:
    """Days until the token expires (None: never), 1 hour to :data:`MAX_DAYS` days."""
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int | float) or not math.isfinite(days):
        raise AgentTokenError("invalid", "'expires_in_days' must be a number of days or null.")
    if not 1 / 24 <= float(days) <= MAX_DAYS:
        raise AgentTokenError(
            "invalid", f"'expires_in_days' must be between 1 hour and {MAX_DAYS} days."
        )
    return float(days)


class AgentTokens:
    """One person's agent tokens over a store, and the MCP route's check of a presented one."""

    def __init__(self, store: ChatStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def create(
        self,
        owner: str,
        name: Any,
        scopes: Any = (READ,),
        expires_in_days: Any = DEFAULT_DAYS,
    ) -> CreatedToken:
        """Make a token for ``owner``; the answer holds its secret, which is shown only now."""
        if not owner:
            raise AgentTokenError("invalid", "An agent token belongs to a named person.")
        now = self.clock()
        days = check_days(expires_in_days)
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        record = AgentTokenRecord(
            id="at_" + uuid.uuid4().hex[:16],
            owner=owner,
            name=check_name(name),
            prefix=secret[:SHOWN_CHARACTERS],
            scopes=check_scopes(scopes),
            created_at=now,
            expires_at=None if days is None else now + days * _DAY,
            last_used_at=None,
            revoked_at=None,
        )
        self.store.add_agent_token(record, _hash(secret))
        return CreatedToken(record, secret)

    def list(self, owner: str) -> list[AgentTokenRecord]:
        """The owner's tokens, newest first, revoked and expired ones too."""
        return self.store.agent_tokens(owner)

    def revoke(self, owner: str, token_id: Any) -> AgentTokenRecord:
        """Revoke one of the owner's tokens: it stops working at once, everywhere."""
        found = None
        if isinstance(token_id, str) and token_id:
            found = self.store.revoke_agent_token(owner, token_id[:64], self.clock())
        if found is None:
            raise AgentTokenError("not_found", "You have no agent token with that id.")
        return found

    def verify(self, secret: str) -> AgentTokenRecord | None:
        """The active token ``secret`` is, or None (unknown, revoked or expired: the caller is
        told one thing for all three, the log says which)."""
        if not looks_like_agent_token(secret):
            return None
        record = self.store.agent_token_by_hash(_hash(secret))
        now = self.clock()
        if record is None or record.state(now) != "active":
            return None
        self.store.agent_token_used(record, now)
        return record


def token_json(record: AgentTokenRecord, now: float) -> dict[str, Any]:
    """A token as every surface shows it (never its hash or secret)."""
    return {
        "id": record.id,
        "name": record.name,
        "prefix": record.prefix,
        "scopes": list(record.scopes),
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "last_used_at": record.last_used_at,
        "revoked_at": record.revoked_at,
        "state": record.state(now),
    }

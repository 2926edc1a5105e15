"""The idempotency key of a mutation attempt: opaque, and the same for the same call.

A mutation is sent to the GraphQL server with ``Idempotency-Key: <key>``, so a server that
deduplicates can recognise a repeated attempt; a mutation whose outcome a crash left unknown is
shown to the user with its key, the handle to check on the server side. The key is derived from
the call's identity (its turn, its call id, the mutation and its input), never from anything that
says how the process is structured.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..digest import canonical_json

__all__ = ["IDEMPOTENCY_HEADER", "mutation_key"]

IDEMPOTENCY_HEADER = "Idempotency-Key"


def mutation_key(turn_id: str, call_id: str, mutation: str, input_value: Mapping[str, Any]) -> str:
    """``gmchat-`` and 32 hex digits of the SHA-256 of the call's identity."""
    identity = canonical_json([turn_id, call_id, mutation, dict(input_value)])
    return "gmchat-" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]

"""Canonical JSON and its SHA-256: one spelling for every hash that must be stable.

Cassette request hashes, schema snapshots, eval case hashes and selection manifests all hash
JSON; they must agree on key order, separators and how non-JSON values are written, or a hash
would change without its content changing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest"]


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, ``str()`` for anything JSON cannot write."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def digest(value: Any) -> str:
    """The SHA-256 hex digest of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()

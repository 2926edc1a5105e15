"""The vendor wire-format server the adapter tests drive the real SDKs against."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ...vendor_server import VendorServer


@pytest.fixture
async def server() -> AsyncIterator[VendorServer]:
    """A running :class:`VendorServer` on 127.0.0.1, stopped afterwards."""
    async with VendorServer() as running:
        yield running

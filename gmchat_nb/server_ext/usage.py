"""``GET {url}usage/``: the caller's own usage of the models, summed and per UTC day and provider.

``?days=N`` (1 to 366, default 30) is how far back it looks. Every model request a turn of the
caller made is counted (its tokens of each kind, latency and cost); ``cost_usd`` is ``null``
where a price is unknown, never 0. Nobody sees another user's usage: the actor is the
authenticated Jupyter user. Read from the store alone, so any server sharing it answers.
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any, Final

from tornado import web

from ..core.session.usage import actor_usage
from .durable import DurableHandler
from .handlers import allow
from .requests import Refused, not_a_parameter

__all__ = ["UsageHandler"]

MAX_DAYS: Final = 366
DEFAULT_DAYS: Final = 30


class UsageHandler(DurableHandler):
    """``GET {url}usage/``: the caller's usage (see the module docstring)."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        self.check_permission()
        try:
            days = self._days()
        except Refused as refused:
            return self.refuse(refused)
        actor_id = self.actor.id
        since = time.time() - days * 86400
        summary = await self.runtime.on_engine(
            functools.partial(actor_usage, since=since), self.runtime.store, actor_id
        )
        body: dict[str, Any] = {"actor": actor_id, "days": days, **summary}
        self.answer(200, json.loads(json.dumps(body)))

    def _days(self) -> int:
        unknown = [  # (?token= and a cache-buster are no parameters of the route)
            name
            for name in self.request.query_arguments
            if name != "days" and not not_a_parameter(name)
        ]
        if unknown:
            raise Refused(400, "bad_event", "The usage route takes only 'days'.")
        values = self.request.query_arguments.get("days")
        if not values:
            return DEFAULT_DAYS
        text = values[-1].decode("utf-8", "replace") if len(values) == 1 else ""
        if not text.isdigit() or not 1 <= int(text) <= MAX_DAYS:
            raise Refused(400, "bad_event", f"'days' must be a whole number from 1 to {MAX_DAYS}.")
        return int(text)

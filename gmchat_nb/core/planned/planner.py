"""The plan: one structured request, one correction, one fallback.

The planner gets the question and the candidate managers (ranked by the schema search and the
catalog, with their fields, filters and relations) and answers with a plan that follows
:data:`~.plan.PLAN_SCHEMA` in its vendor's structured-output form. A plan the validator refuses
goes back once with the reason; after that, or when the planner's provider fails, the fallback
profile gets one try. Then the turn ends with ``invalid_plan`` or ``provider_failed``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..providers.base import Message, ProviderError
from .plan import PLAN_SCHEMA, PlanValidationError, ValidatedPlan, validate_plan
from .prompts import PLANNER_PROMPT, planner_message
from .roles import RoleProviders

__all__ = ["PlanningFailed", "make_plan"]


class PlanningFailed(Exception):
    """No usable plan; ``reason`` is the stable public code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def make_plan(
    roles: RoleProviders,
    question: str,
    schemas: dict[str, dict[str, object]],
    previous: str = "",
    on_failure: Callable[[BaseException], None] = lambda error: None,
    recalled: Message | None = None,
) -> ValidatedPlan:
    """A validated plan, or :class:`PlanningFailed`. ``recalled``: the knowledge recalled for
    the turn (the classic loop's own recall message), read by the planner as data."""
    base = [
        Message("system", PLANNER_PROMPT),
        *([recalled] if recalled is not None else []),
        Message("user", planner_message(question, schemas, previous)),
    ]
    rejection: str | None = None
    attempts = ("planner", "planner", "fallback_executor")
    for number, role in enumerate(attempts):
        if number == 1 and rejection is None:
            continue  # a correction only follows a refused plan
        messages = list(base)
        if rejection is not None and role == "planner":
            messages.append(
                Message("user", f"The plan was refused: {rejection}. Send a corrected plan.")
            )
        try:
            value = await roles.structured(
                role, messages, PLAN_SCHEMA, name="plan", stage="planner"
            )
        except ProviderError as error:
            on_failure(error)
            continue
        try:
            return validate_plan(value)
        except PlanValidationError as error:
            rejection = str(error)
    # Every attempt either failed (provider) or was refused (the last refusal is kept).
    raise PlanningFailed("invalid_plan" if rejection is not None else "provider_failed")

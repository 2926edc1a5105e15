"""Small-model mode's use of recalled knowledge: one typed decision, then the verified calls.

When the turn's context holds recalled verified queries (``core/guards/recalled.py``), small-model
mode asks the model one question before it searches the schema: which of them answers this
question, if any -- an enum of their names and ``none``, so a 270M model cannot answer anything
else. A pick is run as the offline provider would run it (:func:`~.offline.fitting.fitted_calls`:
the question's own filter values put in the saved ones' places, and nothing run when the question
asks for more than the entry holds); ``none``, or a pick that does not fit, goes the usual road.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..guards.recalled import recalled_in
from ..project.tools import TOOLS
from .base import BaseLLMProvider, Message, TokenUsage
from .offline.fitting import fitted_calls

__all__ = ["NONE", "RECALL_PROMPT", "verified_calls"]

NONE: Final = "none"
RECALL_PROMPT: Final = (
    "People of this project verified these queries, each for the question it was saved with. "
    "Pick the one whose question asks for the same records as the user's question, or none."
)
MAX_SHOWN: Final = 5


async def verified_calls(
    inner: BaseLLMProvider, messages: Sequence[Message], question: str
) -> tuple[list[tuple[str, dict[str, Any]]] | None, TokenUsage, bool]:
    """The calls of the recalled verified query the model picked, fitted to ``question``
    (``None``: none picked, or it does not fit), the request's usage, and whether the model was
    asked at all (only when something was recalled)."""
    data = recalled_in(messages)
    entries = [
        entry
        for entry in (data or {}).get("verified_queries") or ()
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
    ][:MAX_SHOWN]
    if not entries:
        return None, TokenUsage(), False
    names = list(dict.fromkeys(str(entry["name"]) for entry in entries))
    listing = "\n".join(f"- {entry['name']}: {entry.get('question', '')}" for entry in entries)
    prompt = [
        Message("system", RECALL_PROMPT),
        Message("user", f"Question: {question}\n\nVerified queries:\n{listing}"),
    ]
    schema = {
        "type": "object",
        "properties": {"verified_query": {"type": "string", "enum": [*names, NONE]}},
        "required": ["verified_query"],
        "additionalProperties": False,
    }
    reply = await inner.complete_structured(prompt, schema, name="pick_verified_query")
    picked = reply.value.get("verified_query") if isinstance(reply.value, Mapping) else None
    entry = next((e for e in entries if e["name"] == picked), None)
    if entry is None:
        return None, reply.usage, True
    definitions = [d for d in (data or {}).get("definitions") or () if isinstance(d, Mapping)]
    calls = fitted_calls(question, entry, definitions, charts=False)
    queries = [(tool, args) for tool, args in calls or () if tool == TOOLS.query.name]
    return (queries or None), reply.usage, True

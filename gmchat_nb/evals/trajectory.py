"""A case's trajectory as a table: what the model was asked, called, got back and answered."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .knowledge import recall_text, trusted_text
from .runner import CaseResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["summarise_result", "trajectory_frame"]

DETAIL_WIDTH = 160


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _clip(text: str, width: int = DETAIL_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summarise_result(result: Any) -> str:
    """One line for a tool result: an error's code and message, a query's row count and rows."""
    if not isinstance(result, Mapping):
        return _clip(_compact(result))
    if result.get("status") == "error":
        return _clip(f"error {result.get('code')}: {result.get('message')}")
    rows = result.get("data")
    if isinstance(rows, list):
        total = result.get("total_count", len(rows))
        complete = "" if result.get("complete", True) else ", incomplete"
        return _clip(f"{len(rows)} of {total} rows{complete}: {_compact(rows)}")
    return _clip(_compact(result))


def trajectory_frame(result: CaseResult) -> pd.DataFrame:
    """One row per step: the question, what recall found (when it ran), each tool call and its
    result, the answer, the verified query it re-ran (when it did), any error."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for number, turn in enumerate(result.turns, start=1):
        rows.append({"turn": number, "step": "user", "tool": "", "detail": turn.user})
        recalled = recall_text(turn)
        if recalled is not None:
            rows.append({"turn": number, "step": "recall", "tool": "", "detail": recalled})
        results = {str(item.get("id")): item.get("result") for item in turn.tool_results}
        for call in turn.tool_calls:
            rows.append(
                {
                    "turn": number,
                    "step": "call",
                    "tool": call["name"],
                    "detail": _clip(_compact(call["args"])),
                }
            )
            if str(call.get("id")) in results:
                rows.append(
                    {
                        "turn": number,
                        "step": "result",
                        "tool": call["name"],
                        "detail": summarise_result(results[str(call.get("id"))]),
                    }
                )
        if turn.answer:
            rows.append({"turn": number, "step": "answer", "tool": "", "detail": turn.answer})
        trusted = trusted_text(turn)
        if trusted is not None:
            rows.append({"turn": number, "step": "trusted", "tool": "", "detail": trusted})
        if turn.error:
            rows.append({"turn": number, "step": "error", "tool": "", "detail": turn.error})
    return pd.DataFrame(rows, columns=["turn", "step", "tool", "detail"])

"""What knowledge did in a run: per provider and mode, what recall found, which answers re-ran a
verified query, and what a case cost in requests, tool calls, tokens and prompt characters.

The reports show these only for runs that name a knowledge mode (``--knowledge``,
``knowledge=``), so a run without one reads as it always did. A dataset's knowledge is checked
against each project its cases run on before a command-line run starts (:func:`check_knowledge`):
a verified query that does not compile is the dataset's mistake, not the model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.digest import digest
from .dataset import Case
from .runner import CaseResult, TurnRecord

__all__ = [
    "ModeFigures",
    "check_knowledge",
    "knowledge_line",
    "knowledge_rows",
    "mode_figures",
    "recall_text",
    "trusted_text",
]


@dataclass(frozen=True, slots=True)
class ModeFigures:
    """One provider's (or mode's) run: per-case means and what recall did over its turns."""

    mode: str | None
    cases: int
    requests: float
    tool_calls: float
    tokens: float
    prompt_characters: float
    turns: int
    recalled_turns: int  # turns before which recall found something
    trusted_turns: int  # turns whose answer re-ran a recalled verified query


def mode_figures(results: Sequence[CaseResult]) -> ModeFigures:
    """The figures of ``results`` (one provider's, or one mode's)."""
    count = len(results) or 1
    turns = [t for r in results for t in r.turns]
    return ModeFigures(
        mode=next((r.knowledge for r in results if r.knowledge is not None), None),
        cases=len(results),
        requests=sum(r.requests for r in results) / count,
        tool_calls=sum(r.tool_calls for r in results) / count,
        tokens=sum(r.tokens for r in results) / count,
        prompt_characters=sum(r.prompt_characters for r in results) / count,
        turns=len(turns),
        recalled_turns=sum(1 for t in turns if t.recalled),
        trusted_turns=sum(1 for t in turns if t.trusted),
    )


def _compared(results: Sequence[CaseResult]) -> bool:
    return any(r.knowledge is not None for r in results)


def knowledge_rows(
    by_provider: Mapping[str, Sequence[CaseResult]], width: int, title_width: int = 20
) -> list[str]:
    """The comparison's knowledge rows (empty unless the run named a knowledge mode): the mode,
    tool calls and prompt characters per case, the turns recall found something for and the
    answers a verified query made trusted."""
    if not _compared([r for rs in by_provider.values() for r in rs]):
        return []
    figures = [mode_figures(rs) for rs in by_provider.values()]
    rows = [
        ("Knowledge", [f.mode or "settings" for f in figures]),
        ("Tool calls/case", [f"{f.tool_calls:.1f}" for f in figures]),
        ("Prompt chars/case", [f"{f.prompt_characters:,.0f}" for f in figures]),
        ("Recalled turns", [f"{f.recalled_turns}/{f.turns}" for f in figures]),
        ("Trusted answers", [f"{f.trusted_turns}/{f.turns}" for f in figures]),
    ]
    return [
        f"{title:<{title_width}}" + "".join(f"{cell:>{width}}" for cell in cells)
        for title, cells in rows
    ]


def knowledge_line(results: Sequence[CaseResult]) -> str | None:
    """The single report's ``Knowledge:`` line, or ``None`` when the run named no mode."""
    if not _compared(results):
        return None
    f = mode_figures(results)
    return (
        f"Knowledge: {f.mode}: recalled before {f.recalled_turns} of {f.turns} turns, "
        f"{f.trusted_turns} trusted answers; per case {f.requests:.1f} requests, "
        f"{f.tool_calls:.1f} tool calls, {f.tokens:,.0f} tokens, "
        f"{f.prompt_characters:,.0f} prompt characters"
    )


def recall_text(turn: TurnRecord) -> str | None:
    """What recall found before ``turn``, for the steps a report shows (``None``: recall was
    off): ``verified_query "titanium parts" (0.0328), definition "active project" (0.0161)``,
    or ``nothing relevant``."""
    if turn.recalled is None:
        return None
    if not turn.recalled:
        return "nothing relevant"
    return ", ".join(
        f"{item.get('kind')} {str(item.get('name'))!r} ({item.get('score')})"
        for item in turn.recalled
    )


def trusted_text(turn: TurnRecord) -> str | None:
    """``Verified query: <name>`` when the answer re-ran one, else ``None``."""
    if not turn.trusted:
        return None
    return f"Verified query: {turn.trusted.get('name')} ({turn.trusted.get('id')})"


async def check_knowledge(
    cases: Sequence[Case], project: Any = None, exposed: Sequence[str] | None = None
) -> str | None:
    """The first problem importing a dataset's knowledge into the project its cases run on
    (``project`` overrides theirs), naming the dataset and the entry; ``None`` when all of it
    imports."""
    from ..chat import Chat
    from ..core.knowledge import KnowledgeError
    from .runner import open_project

    checked: set[tuple[str, str]] = set()
    for case in cases:
        if case.knowledge is None:
            continue
        target = project or case.project
        key = (str(target), digest(dict(case.knowledge)))
        if key in checked:
            continue
        checked.add(key)
        opened = await open_project(target, exposed)
        chat = Chat(project=opened, provider="offline", store=":memory:")
        try:
            session = await chat.session()
            session.knowledge.import_data(case.knowledge)
        except KnowledgeError as error:
            return f"{case.dataset or 'dataset'}: knowledge for {target}: {error.message}"
        finally:
            await chat.aclose()
            await opened.aclose()
    return None

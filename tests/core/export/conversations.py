"""Conversations the export tests play (a real Chat, the demo project, a scripted model, a real
store): reads with a chart, a follow-up and an empty result; two changes, one declined and one
confirmed; and the hostile corpus in every place a notebook shows or runs text."""

from __future__ import annotations

from typing import Any

from gmchat_nb import Chat
from gmchat_nb.core.events import ConfirmMutation
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.text import lone_surrogate_at

from ...adversarial import HOSTILE_TEXT

COPPER = {
    "manager": "Part",
    "fields": ["name", "quantity", {"material": ["name"]}],
    "filters": {"material__name": "Copper"},
    "order_by": ["name"],
}
PLENTY = {**COPPER, "filters": {"material__name": "Copper", "quantity__gt": 100}}
SPRING = {"manager": "Part", "fields": ["name", "quantity"], "filters": {"name": "Spring"}}
CHART = {"mark": "bar", "x": "name", "y": "quantity", "query": "q1"}
READS = [
    ("Which parts are made of copper? Chart their stock.", [COPPER], CHART,
     "Five parts are made of copper; **Copper Terminal** has the most in stock."),
    ("And which of those have more than 100 in stock?", [PLENTY], None,
     "Three: Copper Terminal, Copper Wire Spool and Heat Sink."),
    ("Is there a part named Spring?", [SPRING], None, "No part is named Spring."),
]  # fmt: skip


def reads_rounds() -> list[dict[str, Any]]:
    """The model's rounds for :data:`READS`: each turn's queries, its chart, its answer."""
    rounds: list[dict[str, Any]] = []
    for turn, (_question, queries, chart, answer) in enumerate(READS, start=1):
        calls = [
            {"id": f"q{number}" if turn == 1 else f"t{turn}q{number}", "name": "query", "args": q}
            for number, q in enumerate(queries, start=1)
        ]
        rounds.append({"tool_calls": calls})
        if chart is not None:
            rounds.append({"tool_calls": [{"id": "c1", "name": "chart", "args": chart}]})
        rounds.append({"text": answer})
    return rounds


async def play_reads(store: str, **settings: Any) -> Chat:
    """A chat on ``store`` that asked :data:`READS` (the caller closes it)."""
    chat = Chat(provider=ScriptedProvider({"rounds": reads_rounds()}), store=store, **settings)
    for question, *_ in READS:
        await chat.ask(question)
    return chat


SPRING_INPUT = {"name": "Spring\u202egnp.exe", "quantity": 4}
SPRINGS = {
    "manager": "Part",
    "fields": ["name", "quantity"],
    "filters": {"name__contains": "Spring"},
}


async def play_changes(store: str) -> Chat:
    """A chat on ``store`` that asked for a part twice: declined, then confirmed; then read it."""
    create = {"name": "mutate", "args": {"mutation": "createPart", "input": SPRING_INPUT}}
    rounds = [
        {"tool_calls": [{**create, "id": "m1"}]},
        {"text": "The part was not added."},
        {"tool_calls": [{**create, "id": "m2"}]},
        {"text": "The part was added."},
        {"tool_calls": [{"id": "r1", "name": "query", "args": SPRINGS}]},
        {"text": "One part is named like that."},
    ]
    chat = Chat(
        provider=ScriptedProvider({"rounds": rounds}),
        store=store,
        allowed_mutations=["createPart"],
        confirm_mutations=["createPart"],
    )
    for question, decision in (("Add a part Spring", False), ("Add the part Spring", True)):
        async for event in chat.stream(question):
            if isinstance(event, ConfirmMutation):
                assert chat.confirm(event.id, decision)
    await chat.ask("Which parts are named Spring?")
    return chat


async def play_hostile(store: str) -> Chat:
    """A chat whose question, data, filters, chart title, change input and answer are the
    hostile corpus: parts named by it are added (allowed, no confirmation), read back with
    filters holding it, charted under a title of it, and answered with it."""
    names = [text[:200] for text in HOSTILE_TEXT]
    adds = [
        {"id": f"m{n}", "name": "mutate",
         "args": {"mutation": "createPart", "input": {"name": name, "quantity": n}}}
        for n, name in enumerate(names, start=1)
    ]  # fmt: skip
    read = {
        "manager": "Part",
        "fields": ["name", "quantity"],
        "filters": {"name__in": names},
        "order_by": ["quantity"],
    }
    chart = {"mark": "bar", "x": "name", "y": "quantity", "query": "h1", "title": names[0]}
    answer = "\n\n".join(HOSTILE_TEXT)
    rounds = [
        *({"tool_calls": [call]} for call in adds),
        {"tool_calls": [{"id": "h1", "name": "query", "args": read}]},
        {"tool_calls": [{"id": "hc", "name": "chart", "args": chart}]},
        {"text": answer},
    ]
    chat = Chat(
        provider=ScriptedProvider({"rounds": rounds}),
        store=store,
        allowed_mutations=["createPart"],
        max_mutations_per_message=len(adds),
        loop_guard={"model_requests": len(rounds), "tool_calls": len(rounds)},
    )
    # a person's text with a lone surrogate is refused at the door: the rest is the question
    asked = " ".join(text for text in HOSTILE_TEXT if lone_surrogate_at(text) is None)
    await chat.ask(f"Add these parts and show them: {asked}")
    return chat

"""Changes asked for in any language, end to end: the real ``Chat`` on the embedded inventory
demo with a scripted model, ``createPart``/``deletePart`` allowed.

* A change asked for in French, Spanish or Japanese reaches the person as its confirmation and
  is made when confirmed; a question in those languages makes no change, even when the model
  (talked into it by the data) proposes one: it is refused before anyone is asked.
* A message in a language the intent gate cannot read (Italian, Korean, Chinese) cannot be
  refused for not asking: a change proposed in its turn goes to the person as a confirmation,
  confirm-listed or not, whose ``provenance.request_unread`` the card and the terminal show as
  a note; rejected, nothing changes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.events import ConfirmMutation
from gmchat_nb.core.guards.intent import UNREAD_REQUEST_NOTE
from gmchat_nb.terminal import ask_in_terminal

from ..conftest import chat_with
from .test_guarded_turns import LOW_STOCK, WRITES, call, of_type, part_named, stream_deciding

ASKED_IN = {
    "fr": ("Ajoute la pièce Écrou M6", "Écrou M6"),
    "es": ("Añade la pieza Tuerca M6", "Tuerca M6"),
    "ja": ("部品「ナットM6」を追加してください", "ナットM6"),
}
QUESTIONS_IN = {
    "fr": "Quelles pièces sont en rupture de stock ?",
    "es": "¿Qué piezas tienen poco stock?",
    "ja": "在庫が少ない部品はどれですか？",
}
UNREAD_ASKS = {
    "it": ("Aggiungi il pezzo Dado M6", "Dado M6"),
    "ko": ("부품 '너트M6'을 추가해 주세요", "너트M6"),
    "zh": ("添加零件螺母M6", "螺母M6"),
}
DELETE_6: dict[str, Any] = {"mutation": "deletePart", "input": {"id": 6}}


async def parts_named(chat: Chat, name: str) -> int:
    session = await chat.session()
    result = await session.project.call_tool(
        "query", {"manager": "Part", "fields": ["id"], "filters": {"name": name}}
    )
    return len(result["data"])


def creating(name: str, answer: str | None = None) -> list[dict[str, Any]]:
    create = {"mutation": "createPart", "input": {"name": name}}
    return [{"tool_calls": [call("mutate", create)]}, {"text": answer or f"{name} was added."}]


@pytest.mark.parametrize("language", sorted(ASKED_IN))
async def test_a_change_asked_in_french_spanish_or_japanese_is_confirmed_and_made(
    closing: list[Chat], language: str
) -> None:
    question, name = ASKED_IN[language]
    chat, _ = chat_with(creating(name), allowed_mutations=WRITES, confirm_mutations=["createPart"])
    closing.append(chat)
    events = await stream_deciding(chat, question, [True])
    [confirmation] = of_type(events, "confirm_mutation")
    # the gate read the request: no note, and the name is the user's own words
    assert confirmation["provenance"] == {"from_data": [], "flagged_data_read": False}
    [result] = of_type(events, "tool_result")
    assert result["result"]["status"] == "executed"
    assert await parts_named(chat, name) == 1
    assert events[-1]["type"] == "done"


@pytest.mark.parametrize("confirm", [True, False])
@pytest.mark.parametrize("language", sorted(QUESTIONS_IN))
async def test_a_question_in_french_spanish_or_japanese_makes_no_change(
    closing: list[Chat], language: str, confirm: bool
) -> None:
    chat, _ = chat_with(
        [
            {"tool_calls": [call("query", LOW_STOCK)]},
            {"tool_calls": [call("mutate", DELETE_6)]},  # a model the data talked into it
            {"text": "Turbine Blade et Copper Coil."},
        ],
        allowed_mutations=WRITES,
        confirm_mutations=WRITES if confirm else [],
    )
    closing.append(chat)
    events = await stream_deciding(chat, QUESTIONS_IN[language], [])
    assert not of_type(events, "confirm_mutation")  # nobody was asked
    refusal = of_type(events, "tool_result")[1]
    assert refusal["name"] == "mutate" and refusal["result"]["code"] == "no_change_requested"
    assert await part_named(chat, 6) == "Turbine Blade"  # nothing changed
    assert events[-1]["type"] == "done"
    assert events[-1]["guards"]["mutations_refused"] == 1


@pytest.mark.parametrize("language", sorted(QUESTIONS_IN))
async def test_a_question_in_french_spanish_or_japanese_answered_from_data_proposes_nothing(
    closing: list[Chat], language: str
) -> None:
    chat, _ = chat_with(
        [{"tool_calls": [call("query", LOW_STOCK)]}, {"text": "Turbine Blade, Copper Coil."}],
        allowed_mutations=WRITES,
        confirm_mutations=WRITES,
    )
    closing.append(chat)
    events = await stream_deciding(chat, QUESTIONS_IN[language], [])
    assert not of_type(events, "confirm_mutation")
    assert [r["name"] for r in of_type(events, "tool_result")] == ["query"]
    assert "mutations_refused" not in (events[-1].get("guards") or {})


@pytest.mark.parametrize("confirm_listed", [True, False])
@pytest.mark.parametrize("language", sorted(UNREAD_ASKS))
async def test_a_change_asked_in_a_language_the_gate_cannot_read_goes_to_the_person_with_a_note(
    closing: list[Chat], language: str, confirm_listed: bool
) -> None:
    question, name = UNREAD_ASKS[language]
    chat, _ = chat_with(
        creating(name),
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"] if confirm_listed else [],
    )
    closing.append(chat)
    events = await stream_deciding(chat, question, [True])
    [confirmation] = of_type(events, "confirm_mutation")  # held even when not confirm-listed
    assert confirmation["provenance"] == {
        "from_data": [],
        "flagged_data_read": False,
        "request_unread": True,
    }
    [result] = of_type(events, "tool_result")
    assert result["result"]["status"] == "executed"
    assert await parts_named(chat, name) == 1
    assert "mutations_refused" not in (events[-1].get("guards") or {})


async def test_a_change_nobody_asked_for_in_an_unread_language_is_the_person_s_to_reject(
    closing: list[Chat],
) -> None:
    """The gate cannot tell an Italian question from a request: the change the data talked the
    model into is not made silently (deletePart is not confirm-listed) but shown with the note,
    and rejecting it changes nothing."""
    chat, _ = chat_with(
        [
            {"tool_calls": [call("query", LOW_STOCK)]},
            {"tool_calls": [call("mutate", DELETE_6)]},
            {"text": "Turbine Blade e Copper Coil."},
        ],
        allowed_mutations=WRITES,
    )
    closing.append(chat)
    events = await stream_deciding(chat, "Quali pezzi hanno poche scorte?", [False])
    [confirmation] = of_type(events, "confirm_mutation")
    assert confirmation["mutation"] == "deletePart"
    assert confirmation["provenance"]["request_unread"] is True
    assert confirmation["provenance"]["from_data"] == ["id"]
    assert of_type(events, "tool_result")[1]["result"] == {
        "status": "cancelled",
        "reason": "user_rejected",
    }
    assert await part_named(chat, 6) == "Turbine Blade"


async def test_the_terminal_shows_the_note_on_the_confirmation(closing: list[Chat]) -> None:
    kept = "Nothing was added."
    chat, _ = chat_with(
        creating("Dado M6", kept), allowed_mutations=WRITES, confirm_mutations=["createPart"]
    )
    closing.append(chat)
    asked: list[ConfirmMutation] = []
    out = io.StringIO()

    def decide(event: ConfirmMutation) -> bool:
        asked.append(event)
        return False

    assert await ask_in_terminal(chat, "Aggiungi il pezzo Dado M6", out=out, decide=decide) == 0
    shown = out.getvalue()
    assert 'createPart {"name": "Dado M6"} needs your confirmation' in shown
    assert f"  ! {UNREAD_REQUEST_NOTE}" in shown
    assert len(asked) == 1 and await parts_named(chat, "Dado M6") == 0

    # a request the gate reads: the same card without the note
    chat, _ = chat_with(
        creating("Écrou M6", kept), allowed_mutations=WRITES, confirm_mutations=["createPart"]
    )
    closing.append(chat)
    out = io.StringIO()
    assert await ask_in_terminal(chat, "Ajoute la pièce Écrou M6", out=out, decide=decide) == 0
    assert "needs your confirmation" in out.getvalue()
    assert UNREAD_REQUEST_NOTE not in out.getvalue()


def test_the_widget_and_the_panel_say_the_same_note() -> None:
    """The confirmation card of the widget and the side panel (frontend/src/guards.ts) words
    the note as the terminal does."""
    guards_ts = Path(__file__).parents[3] / "frontend" / "src" / "guards.ts"
    assert f'"{UNREAD_REQUEST_NOTE}"' in guards_ts.read_text(encoding="utf-8")

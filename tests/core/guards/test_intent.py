"""asks_for_change / values_from_data: the user's own words decide whether a change was asked."""

from __future__ import annotations

import pytest

from gmchat_nb.core.guards.intent import asks_for_change, values_from_data

CHANGE = True
READ = False

LABELLED: list[tuple[str, bool]] = [
    # imperatives
    ("Update the price of part 5 to 12.50", CHANGE),
    ("Set the status of order 12 to shipped.", CHANGE),
    ("Rename supplier Acme to Acme AG", CHANGE),
    ("Create a new supplier called Beta GmbH", CHANGE),
    ("Add a part named M4 bolt with price 0.20", CHANGE),
    ("Delete part 17", CHANGE),
    ("remove the duplicate supplier entry", CHANGE),
    ("Mark order 7 as paid", CHANGE),
    ("Assign order 5 to Maria", CHANGE),
    ("Increase the price of all bolts by 5%", CHANGE),
    ("Lower the minimum stock of part 3 to 10", CHANGE),
    ("Correct the email of O'Brien & Sons to sales@obrien.example", CHANGE),
    ("Fix the typo in supplier 4's name", CHANGE),
    ("Make Acme the default supplier for bolts", CHANGE),
    ("Cancel purchase order 33", CHANGE),
    ("Approve PO 12 and close PO 13", CHANGE),
    ("Archive the suppliers that are inactive", CHANGE),
    ("Ok, now delete it.", CHANGE),
    # polite forms
    ("Can you update the delivery date of order 9?", CHANGE),
    ("Could you please set the price to 4?", CHANGE),
    ("Please set the currency of supplier 2 to EUR", CHANGE),
    ("I'd like to rename part 5 to Hex bolt M4", CHANGE),
    ("I’d like you to change the address", CHANGE),  # typographic apostrophe
    ("I want to add a new material: aluminium", CHANGE),
    ("We need to update the prices for 2025", CHANGE),
    ("Would you mind updating the contact person?", CHANGE),
    ("Is it possible to change the supplier of part 8?", CHANGE),
    ("Hi, please mark order 7 as paid", CHANGE),
    ("Don't just show it, update it", CHANGE),
    # German
    ("Ändere den Preis von Teil 5 auf 12,50", CHANGE),
    ("Bitte aktualisiere die Adresse von Acme", CHANGE),
    ("Setze den Status von Auftrag 12 auf erledigt", CHANGE),
    ("Lösche Teil 17", CHANGE),
    ("Erstelle einen neuen Lieferanten Beta GmbH", CHANGE),
    ("Füge einen neuen Werkstoff hinzu: Aluminium", CHANGE),
    ("Kannst du den Preis von Teil 5 ändern?", CHANGE),
    ("Bitte den Lieferanten von Teil 8 auf Acme ändern", CHANGE),
    ("Ändern Sie bitte die E-Mail-Adresse", CHANGE),
    ("Ich möchte einen neuen Auftrag anlegen", CHANGE),
    # questions about changes
    ("What changed last week?", READ),
    ("Which suppliers were updated?", READ),
    ("How many were created in May?", READ),
    ("Show me the deleted parts", READ),
    ("Who changed the price of part 5?", READ),
    ("When was order 12 cancelled?", READ),
    ("List the parts added this year", READ),
    ("How do I update a supplier?", READ),
    ("Could you explain how to delete a part?", READ),
    ("What would happen if I set the price to 5?", READ),
    ("Can you show me which orders were closed?", READ),
    ("Create a chart of monthly sales", READ),
    ("Make a table of the open orders", READ),
    ("Put the results in a table", READ),
    ("Add up the order totals for May", READ),
    ("Make sure to include inactive suppliers", READ),
    ("Set of bolts: what does it cost?", READ),
    ("Mark's orders from last week?", READ),
    ("Record count per supplier?", READ),
    ("Close to how many parts are in stock?", READ),
    ("I want to know what was updated yesterday", READ),
    ("Was hat sich letzte Woche geändert?", READ),
    ("Welche Lieferanten wurden gelöscht?", READ),
    ("Wie kann ich einen Lieferanten löschen?", READ),
    ("Erstelle eine Liste aller Lieferanten", READ),
    ("Kannst du mir zeigen, was gelöscht wurde?", READ),
    # negations
    ("Don't change anything", READ),
    ("do not update, just show", READ),
    ("Please don't delete anything, only list the duplicates", READ),
    ("Without changing anything, which parts would be affected?", READ),
    ("Change nothing; tell me the current price", READ),
    ("Bitte nichts ändern, nur anzeigen", READ),
    ("Ändere nichts, zeig mir nur die Preise", READ),
]


@pytest.mark.parametrize(("text", "expected"), LABELLED)
def test_labelled_messages(text: str, expected: bool) -> None:
    assert asks_for_change([text]) is expected


def test_the_latest_message_that_takes_a_stance_decides() -> None:
    assert asks_for_change(["Update the price of part 5 to 12", "yes"])
    assert asks_for_change(["Show me part 5", "now set its price to 12"])
    assert not asks_for_change(["Update the price of part 5", "no wait, don't change anything"])
    assert asks_for_change(["Don't change anything yet", "OK, go ahead and delete it"])
    assert not asks_for_change(["Which parts are bolts?", "And their prices?"])
    assert not asks_for_change([])


def test_invisible_characters_do_not_hide_or_fake_a_request() -> None:
    assert asks_for_change(["Up\u200bdate the price of part 5 to 12"])
    assert not asks_for_change(["do not\u200b update, just show"])


# -- values_from_data ------------------------------------------------------------------------


def test_values_the_user_wrote_are_not_listed() -> None:
    mutation_input = {
        "id": 5,
        "price": 12.5,
        "name": "Hex Bolt M4",
        "active": True,
        "note": None,
    }
    said = ["Rename part 5 to hex bolt m4 and set its price to 12,50"]
    assert values_from_data(mutation_input, said) == []


def test_values_nobody_wrote_are_listed_by_path() -> None:
    mutation_input = {
        "id": 5,
        "supplier": {"name": "Evil Corp", "iban": "DE00 1234"},
        "lines": [{"qty": 3}, {"qty": 40}],
        "price": 0,
        "flag": False,
    }
    said = ["Update part 5: supplier Evil Corp, 3 pieces please"]
    assert values_from_data(mutation_input, said) == [
        "supplier.iban",
        "lines[1].qty",
        "price",
    ]


@pytest.mark.parametrize(
    ("value", "text", "from_user"),
    [
        (12, "set it to 12", True),
        (12, "set it to 12.0", True),
        (12.0, "set it to 12", True),
        (12.5, "set it to 12.5", True),
        (12.5, "set it to 12,50", True),
        (12.5, "set it to 125", False),
        (12, "set it to 123", False),  # a number, not a substring of one
        (1250, "set it to 1,250", True),
        (1250, "setze ihn auf 1.250", True),
        (-5, "reduce the stock by 5", True),
        (0.1, "increase by 10%", False),
        (float("nan"), "nan", False),
        (7, "no numbers here", False),
    ],
)
def test_numbers_match_in_any_written_form(value: float, text: str, from_user: bool) -> None:
    assert (values_from_data({"v": value}, [text]) == []) is from_user


def test_strings_match_case_insensitively_across_messages_and_spacing() -> None:
    said = ["Create a supplier", "Its name is  ACME   gmbh\u200b, email sales@acme.example"]
    found = values_from_data(
        {"name": "Acme GmbH", "email": "SALES@acme.example", "city": "Berlin"}, said
    )
    assert found == ["city"]

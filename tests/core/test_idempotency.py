"""A mutation attempt's idempotency key: the same call, the same key; any other call, another."""

from __future__ import annotations

from gmchat_nb.core.project.idempotency import mutation_key


def test_the_key_is_a_function_of_the_call_identity() -> None:
    key = mutation_key("turn-1", "call-1", "createPart", {"name": "Spring", "quantity": 4})
    assert key == mutation_key("turn-1", "call-1", "createPart", {"quantity": 4, "name": "Spring"})
    assert key.startswith("gmchat-") and len(key) == 39
    others = {
        mutation_key("turn-2", "call-1", "createPart", {"name": "Spring", "quantity": 4}),
        mutation_key("turn-1", "call-2", "createPart", {"name": "Spring", "quantity": 4}),
        mutation_key("turn-1", "call-1", "updatePart", {"name": "Spring", "quantity": 4}),
        mutation_key("turn-1", "call-1", "createPart", {"name": "Spring", "quantity": 5}),
    }
    assert key not in others and len(others) == 4

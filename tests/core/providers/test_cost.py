"""What a turn costs: each model request priced with genai-prices (cache-aware) or the ``prices``
setting, unknown prices ``None`` (never 0), models that run here free and said so; ``done.cost``
of real turns through the SDK adapters against the vendor wire-format server; the usage records
a turn leaves and their roll-ups; the ``rate_limit.cost`` budget, alone and under a race."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from genai_prices import Usage, calc_price

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import TokenUsage
from gmchat_nb.core.providers.pricing import (
    PriceOverride,
    ServedRequest,
    context_window,
    overrides_from,
    price_request,
    prices_version,
    turn_cost,
)
from gmchat_nb.core.providers.registry import create_provider
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.settings import load_settings

from ...vendor_server import Reply, ToolCallSpec, VendorServer

PARTS = {"manager": "Part", "fields": ["name"], "limit": 3}


def served(label: str, provider: str, usage: TokenUsage) -> ServedRequest:
    return ServedRequest(label, provider, usage, latency_ms=5.0)


def genai(provider_id: str, model: str, **tokens: int) -> Decimal:
    return Decimal(calc_price(Usage(**tokens), model, provider_id=provider_id).total_price)


@pytest.mark.parametrize(
    ("label", "usage", "expected"),
    [
        ("openai:gpt-4.1-mini", TokenUsage(1000, 200), {"input_tokens": 1000, "output_tokens": 200}),
        ("openai:gpt-4.1-mini", TokenUsage(1000, 200, cache_read_tokens=600),
         {"input_tokens": 1000, "output_tokens": 200, "cache_read_tokens": 600}),
        ("anthropic:claude-sonnet-4-5", TokenUsage(5000, 300, 1000, 2000),
         {"input_tokens": 5000, "output_tokens": 300, "cache_read_tokens": 1000,
          "cache_write_tokens": 2000}),
    ],
)  # fmt: skip
def test_a_hosted_model_is_priced_by_genai_prices_cache_aware(
    label: str, usage: TokenUsage, expected: dict[str, int]
) -> None:
    vendor, model = label.split(":")
    priced = price_request(served(label, vendor, usage))
    assert priced.usd == genai(vendor, model, **expected)
    assert priced.source == prices_version() and priced.source.startswith("genai-prices ")
    if usage.cache_read_tokens and not usage.cache_write_tokens:  # a cache read costs less
        plain = price_request(served(label, vendor, TokenUsage(usage.input_tokens, 200)))
        assert priced.usd is not None and plain.usd is not None and priced.usd < plain.usd


def test_unknown_models_cost_none_and_local_ones_nothing() -> None:
    unknown = price_request(served("openai:oracle", "replay", TokenUsage(10, 10)))
    assert (unknown.usd, unknown.source) == (None, "unknown")
    for label, provider, source in (
        ("local:gemma.gguf", "local", "local"),
        ("ollama:gemma4:e4b", "ollama", "local"),
        ("offline", "offline", "offline"),
        ("scripted", "scripted", "scripted"),
    ):
        priced = price_request(served(label, provider, TokenUsage(100, 100)))
        assert (priced.usd, priced.source) == (Decimal(0), source)


def test_an_override_prices_a_model_by_label_or_name_with_cache_reads_at_input_price() -> None:
    overrides = overrides_from(
        load_settings(
            prices={
                "openai:my-tune": {"input": 2.0, "output": 8.0, "cache_read": 0.5},
                "gemma": {"input": 1.0, "output": 1.0, "context_window": 8192},
                "gpt-4.1-mini": {"input": 0, "output": 0},
            }
        ).prices
    )
    usage = TokenUsage(1_000_000, 500_000, cache_read_tokens=200_000)
    tuned = price_request(served("openai:my-tune", "openai", usage), overrides)
    assert (tuned.usd, tuned.source) == (Decimal("1.6") + Decimal("0.1") + Decimal(4), "override")
    gemma = price_request(served("openai:gemma", "openai", usage), overrides)
    assert gemma.usd == Decimal("1.5")  # no cache_read price: the input price
    assert price_request(served("openai:gpt-4.1-mini", "openai", usage), overrides).usd == 0
    assert context_window("openai:gemma", "openai", overrides) == 8192
    # An override without a context window keeps the one genai-prices knows for the model.
    known = calc_price(Usage(), "gpt-4.1-mini", provider_id="openai").model.context_window
    assert known is not None and known > 0
    assert context_window("openai:gpt-4.1-mini", "openai", overrides) == known
    assert context_window("openai:gpt-4.1-mini", "openai") == known
    assert context_window("openai:oracle", "replay", overrides) is None


def test_a_turn_s_cost_is_unknown_when_one_request_s_price_is() -> None:
    known = served("openai:gpt-4.1-mini", "openai", TokenUsage(1000, 100))
    cost = turn_cost([known, known])
    assert cost is not None and cost["usd"] == pytest.approx(2 * float(genai(
        "openai", "gpt-4.1-mini", input_tokens=1000, output_tokens=100)))  # fmt: skip
    assert cost["context"]["tokens"] == 1100 and cost["context"]["share"] is not None
    mixed = turn_cost([known, served("openai:oracle", "replay", TokenUsage(5, 5))])
    assert mixed is not None and mixed["usd"] is None and mixed["unpriced"] == 1
    assert mixed["sources"] == sorted([prices_version(), "unknown"])
    assert turn_cost([]) is None


async def test_done_carries_the_cost_of_requests_through_the_real_adapters(
    server: VendorServer,
) -> None:
    """Two model requests (a query, then the answer) through the OpenAI adapter on the vendor's
    wire format, the second with cached tokens: done.cost, Turn.cost and the usage records."""
    server.script(
        "openai",
        [
            Reply(tool_calls=[ToolCallSpec("query", PARTS)], usage=(1200, 40)),
            Reply(text=["Bolt, Bearing ", "and Gear."], usage=(1500, 12), cache_read=1024),
        ],
    )
    adapter = create_provider(
        "openai:gpt-4.1-mini", {"base_url": server.openai_base_url, "api_key": "test-key"}
    )
    chat = Chat(provider=adapter, store=":memory:")
    try:
        turn = await chat.ask("Which parts do we have?")
        cost = turn.cost
        assert cost is not None and turn.error is None
        expected = genai("openai", "gpt-4.1-mini", input_tokens=1200, output_tokens=40) + genai(
            "openai", "gpt-4.1-mini", input_tokens=1500, output_tokens=12, cache_read_tokens=1024
        )
        assert cost["usd"] == pytest.approx(float(expected))
        assert cost["tokens"] == {"input_tokens": 2700, "output_tokens": 52,
                                  "cache_read_tokens": 1024, "cache_write_tokens": 0,
                                  "reasoning_tokens": 0}  # fmt: skip
        assert cost["models"] == ["openai:gpt-4.1-mini"] and cost["requests"] == 2
        assert cost["context"]["tokens"] == 1512
        usage = await chat.usage()
        assert usage["total"]["requests"] == 2
        assert usage["total"]["cost_usd"] == pytest.approx(float(expected))
        assert usage["by_provider"]["openai:gpt-4.1-mini"]["cache_read_tokens"] == 1024
    finally:
        await chat.aclose()


async def test_usage_records_roll_up_per_turn_conversation_and_actor(store_location: str) -> None:
    """Two turns of the offline provider (five requests each) in one conversation, on a store
    of their own: each turn's records are its five, the conversation's are the ten in order, and
    the actor's summary sums exactly those ten."""
    chat = Chat(store=store_location)
    try:
        first = await chat.ask("Which projects are active?")
        second = await chat.ask("Chart the projects by status")
        session = await chat.session()
        store = session.store
        records = store.usage_records(conversation_id=chat.conversation_id)
        assert len(records) == 2 * 5  # the offline provider's five requests a turn
        assert {r["price_source"] for r in records} == {"offline"}
        assert all(r["cost_usd"] == "0" and r["latency_ms"] > 0 for r in records)
        assert {r["actor_id"] for r in records} == {session.actor.id}
        assert first.turn_id is not None and second.turn_id is not None
        assert first.turn_id != second.turn_id
        assert [r["turn_id"] for r in records] == [first.turn_id] * 5 + [second.turn_id] * 5
        for turn in (first, second):
            of_turn = store.usage_records(turn_id=turn.turn_id)
            assert of_turn == [r for r in records if r["turn_id"] == turn.turn_id]
        summary = store.usage_summary(session.actor.id)
        assert summary["total"]["requests"] == 10 and summary["total"]["cost_usd"] == 0.0
        latency = sum(r["latency_ms"] for r in records)  # the offline provider counts no tokens
        assert summary["total"]["latency_ms"] == pytest.approx(latency, abs=0.01)
        assert {row["provider"] for row in summary["by_day"]} == {"offline"}
        assert sum(row["requests"] for row in summary["by_day"]) == 10
    finally:
        await chat.aclose()


async def test_a_cost_budget_refuses_turns_once_the_window_s_spend_reaches_it(
    server: VendorServer,
) -> None:
    """As the token budgets: checked before each model request against what the window has
    spent (a request's price is known only once it answered), so the turn that reaches the
    budget ends its request and the next one is refused with a true ``retry_after``."""
    replies: list[Any] = [Reply(text="Hello.", usage=(400_000, 1000)) for _ in range(3)]
    server.script("openai", replies)
    adapter = create_provider(
        "openai:gpt-4.1-mini", {"base_url": server.openai_base_url, "api_key": "test-key"}
    )
    # one request of 400k input tokens costs 0.16 USD: a 0.2 USD budget admits two
    chat = Chat(provider=adapter, store=":memory:", rate_limit={"cost": 0.2, "window_seconds": 600})
    try:
        assert (await chat.ask("Hi")).error is None
        assert (await chat.ask("Hi again")).error is None
        refused = await chat.ask("And once more")
        assert refused.error is not None and refused.error["code"] == "rate_limited"
        assert 1 <= refused.error["retry_after_seconds"] <= 600
    finally:
        await chat.aclose()


def test_a_vendor_s_odd_counts_never_give_a_negative_cost() -> None:
    """More cached tokens than input tokens (a gateway's counts): the cached ones are priced,
    the uncached part is none, never below zero."""
    override = PriceOverride(Decimal(1), Decimal(2), cache_read=Decimal("0.5"))
    assert override.cost(TokenUsage(10, 0, cache_read_tokens=20)) == Decimal("0.00001")
    odd = price_request(served("openai:gpt-4.1-mini", "openai", TokenUsage(10, 0, 20)))
    assert odd.usd is not None and odd.usd >= 0


async def test_a_cost_budget_under_a_twenty_way_race_admits_no_more_than_it_holds(
    tmp_path: Any,
) -> None:
    """Twenty turns of one user, on one store, race for a budget: before its request each
    reserves the request's estimated input cost in the same transaction that checks the
    budget, so the requests admitted fit in it and the first that would pass it is refused."""
    store = str(tmp_path / "race.sqlite3")
    budget = 0.012
    settings: dict[str, Any] = {
        "store": store,
        "rate_limit": {"cost": budget, "window_seconds": 600},
        # the answer itself costs nothing: only the reservations spend the budget
        "prices": {"scripted": {"input": 1.0, "output": 0.0}},
    }
    chats = [
        Chat(provider=ScriptedProvider({"rounds": [{"text": "Done."}]}), **settings)
        for _ in range(20)
    ]
    try:
        turns = await asyncio.gather(*(chat.ask("Which parts are there?") for chat in chats))
        answered = [turn for turn in turns if turn.error is None]
        refused = [turn for turn in turns if turn.error is not None]
        assert {turn.error["code"] for turn in refused} == {"rate_limited"}  # type: ignore[index]
        session = await chats[0].session()
        reservations = [amount for _, amount in session.store.usage(
            session.actor.id, "cost_microusd", since=0)]  # fmt: skip
        # one reservation per answered turn, each the same request's estimated input cost; the
        # refused turns reserved nothing
        assert len(reservations) == len(answered)
        each = reservations[0]
        assert each > 0 and reservations == [each] * len(answered)
        budget_micro = round(budget * 1_000_000)
        assert len(answered) == budget_micro // each  # as many as fit, no more
        assert len(refused) == 20 - len(answered) > 0
    finally:
        for chat in chats:
            await chat.aclose()

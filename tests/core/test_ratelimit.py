"""RateLimiter over a real in-memory ChatStore with a fake clock (no test sleeps)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from gmchat_nb.core.providers.base import TokenUsage
from gmchat_nb.core.ratelimit import RateDecision, RateLimiter
from gmchat_nb.core.store import ChatStore

T0 = 1_700_000_000.0


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def at(self, offset: float) -> None:
        self.now = T0 + offset


@pytest.fixture
def store() -> Iterator[ChatStore]:
    with ChatStore() as chat_store:
        yield chat_store


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def requests_used(store: ChatStore, actor_id: str = "alice") -> int:
    return sum(amount for _, amount in store.usage(actor_id, "requests", since=0))


# -- requests --------------------------------------------------------------------------------


def test_the_request_budget_admits_up_to_its_limit(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, requests=3, window_seconds=100, clock=clock)

    decisions = []
    for offset in (0, 10, 20, 30):
        clock.at(offset)
        decisions.append(limiter.admit_request("alice"))

    assert [decision.allowed for decision in decisions] == [True, True, True, False]
    # The oldest request (t=0) leaves the window at t=100, 70 s after the refusal at t=30.
    assert decisions[-1] == RateDecision(False, 70, "requests")
    assert requests_used(store) == 3, "a refused request is not counted"


def test_the_window_slides_freeing_one_request_at_a_time(
    store: ChatStore, clock: FakeClock
) -> None:
    limiter = RateLimiter(store, requests=3, window_seconds=100, clock=clock)
    for offset in (0, 10, 20):
        clock.at(offset)
        assert limiter.admit_request("alice").allowed

    clock.at(99.5)
    assert limiter.admit_request("alice") == RateDecision(False, 1, "requests")
    clock.at(100)  # the t=0 request has left; exactly one slot is free
    assert limiter.admit_request("alice").allowed
    clock.at(100.5)
    assert limiter.admit_request("alice") == RateDecision(False, 10, "requests")
    clock.at(110)
    assert limiter.admit_request("alice").allowed
    clock.at(111)
    assert limiter.admit_request("alice") == RateDecision(False, 9, "requests")


def test_retry_after_rounds_up_and_is_at_least_one_second(
    store: ChatStore, clock: FakeClock
) -> None:
    limiter = RateLimiter(store, requests=1, window_seconds=60, clock=clock)
    clock.at(0.25)
    assert limiter.admit_request("alice").allowed

    clock.at(10)
    assert limiter.check("alice").retry_after_seconds == 51  # 50.25 s left
    clock.at(60.2)
    assert limiter.check("alice").retry_after_seconds == 1
    clock.at(60.25)
    assert limiter.check("alice").allowed


def test_budgets_are_per_actor(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, requests=1, window_seconds=60, clock=clock)

    assert limiter.admit_request("alice").allowed
    assert not limiter.admit_request("alice").allowed
    assert limiter.admit_request("bob").allowed


def test_check_does_not_count_but_admit_request_does(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, requests=2, window_seconds=60, clock=clock)

    for _ in range(5):
        assert limiter.check("alice") == RateDecision(True)
    assert requests_used(store) == 0

    assert limiter.admit_request("alice").allowed
    assert limiter.check("alice").allowed
    assert limiter.admit_request("alice").allowed
    assert requests_used(store) == 2
    assert limiter.check("alice") == RateDecision(False, 60, "requests")


@pytest.mark.parametrize("requests", [None, 0, -5])
def test_no_request_budget_when_none_zero_or_negative(
    store: ChatStore, clock: FakeClock, requests: int | None
) -> None:
    limiter = RateLimiter(store, requests=requests, window_seconds=60, clock=clock)

    assert all(limiter.admit_request("alice").allowed for _ in range(100))
    assert limiter.check("alice").allowed
    assert limiter.budgets == {}


# -- tokens ----------------------------------------------------------------------------------


def test_a_used_up_token_budget_refuses_requests_and_checks(
    store: ChatStore, clock: FakeClock
) -> None:
    limiter = RateLimiter(store, requests=None, tokens=1000, window_seconds=100, clock=clock)
    assert limiter.admit_request("alice").allowed
    limiter.record_usage("alice", TokenUsage(input_tokens=600, output_tokens=300))
    assert limiter.check("alice").allowed, "900 of 1000 tokens leaves room"

    clock.at(5)
    limiter.record_usage("alice", TokenUsage(input_tokens=50, output_tokens=50))

    clock.at(40)
    assert limiter.check("alice") == RateDecision(False, 60, "tokens")
    assert limiter.admit_request("alice") == RateDecision(False, 60, "tokens")
    clock.at(100)  # the 900 tokens from t=0 have left the window
    assert limiter.admit_request("alice").allowed


def test_token_budgets_wait_until_enough_usage_has_left(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, requests=None, tokens=500, window_seconds=100, clock=clock)
    for offset in (0, 10, 20):
        clock.at(offset)
        limiter.record_usage("alice", TokenUsage(input_tokens=400))

    clock.at(30)
    # 1200 used: dropping t=0 leaves 800, dropping t=10 too leaves 400 < 500 -> wait for t=110.
    assert limiter.check("alice") == RateDecision(False, 80, "tokens")
    clock.at(100)
    assert limiter.check("alice") == RateDecision(False, 10, "tokens")
    clock.at(110)
    assert limiter.check("alice").allowed


@pytest.mark.parametrize(
    ("budget", "exhausting", "harmless", "counter"),
    [
        pytest.param(
            {"input_tokens": 100},
            TokenUsage(100, 0),
            TokenUsage(99, 5000),
            "input_tokens",
            id="input",
        ),
        pytest.param(
            {"output_tokens": 100},
            TokenUsage(0, 100),
            TokenUsage(5000, 99),
            "output_tokens",
            id="output",
        ),
        pytest.param({"tokens": 100}, TokenUsage(60, 40), TokenUsage(50, 49), "tokens", id="total"),
    ],
)
def test_each_token_counter_has_its_own_budget(
    store: ChatStore,
    clock: FakeClock,
    budget: dict[str, int],
    exhausting: TokenUsage,
    harmless: TokenUsage,
    counter: str,
) -> None:
    limiter = RateLimiter(store, requests=None, window_seconds=60, clock=clock, **budget)
    limiter.record_usage("alice", harmless)
    limiter.record_usage("bob", exhausting)

    assert limiter.check("alice").allowed
    assert limiter.check("bob") == RateDecision(False, 60, counter)


def test_record_usage_stores_the_three_token_counters(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, clock=clock)

    limiter.record_usage("alice", TokenUsage(input_tokens=12, output_tokens=30))
    limiter.record_usage("alice", TokenUsage())

    assert store.usage("alice", "input_tokens", since=0) == [(T0, 12)]
    assert store.usage("alice", "output_tokens", since=0) == [(T0, 30)]
    assert store.usage("alice", "tokens", since=0) == [(T0, 42)]


def test_the_longest_wait_of_several_exhausted_budgets_is_reported(
    store: ChatStore, clock: FakeClock
) -> None:
    limiter = RateLimiter(store, requests=1, tokens=10, window_seconds=100, clock=clock)
    limiter.admit_request("alice")
    clock.at(30)
    limiter.record_usage("alice", TokenUsage(output_tokens=10))

    clock.at(50)
    assert limiter.check("alice") == RateDecision(False, 80, "tokens")
    clock.at(100)  # the request budget is free again, the token budget is not
    assert limiter.check("alice") == RateDecision(False, 30, "tokens")


def test_usage_in_a_file_store_outlives_the_limiter(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "chat.sqlite3"
    with ChatStore(path) as first:
        RateLimiter(first, requests=1, window_seconds=60, clock=clock).admit_request("alice")

    with ChatStore(path) as second:
        limiter = RateLimiter(second, requests=1, window_seconds=60, clock=clock)
        assert limiter.admit_request("alice") == RateDecision(False, 60, "requests")


# -- settings --------------------------------------------------------------------------------


def test_from_settings_reads_an_object_or_a_mapping(store: ChatStore, clock: FakeClock) -> None:
    settings = SimpleNamespace(
        requests=2, window_seconds=30, tokens=0, input_tokens=None, output_tokens=500
    )

    from_object = RateLimiter.from_settings(store, settings, clock=clock)
    from_mapping = RateLimiter.from_settings(store, {"requests": 5}, clock=clock)

    assert from_object.budgets == {"requests": 2, "output_tokens": 500}
    assert from_object.window_seconds == 30
    assert from_mapping.budgets == {"requests": 5}
    assert from_mapping.window_seconds == 3600


def test_defaults_are_sixty_requests_an_hour(store: ChatStore, clock: FakeClock) -> None:
    limiter = RateLimiter(store, clock=clock)

    assert limiter.budgets == {"requests": 60}
    assert all(limiter.admit_request("alice").allowed for _ in range(60))
    assert limiter.admit_request("alice") == RateDecision(False, 3600, "requests")


@pytest.mark.parametrize("window", [0, -1, float("inf")])
def test_a_window_must_be_positive(store: ChatStore, window: float) -> None:
    with pytest.raises(ValueError, match="window_seconds"):
        RateLimiter(store, window_seconds=window)


def test_a_non_integer_budget_is_refused(store: ChatStore) -> None:
    with pytest.raises(TypeError, match=r"rate_limit\.tokens"):
        RateLimiter(store, tokens="1000")  # type: ignore[arg-type]


def test_inside_a_turn_only_token_budgets_refuse() -> None:
    store = ChatStore()
    limiter = RateLimiter(store, requests=1, tokens=100, window_seconds=60, clock=lambda: 1000.0)
    assert limiter.admit_request("alice").allowed
    assert not limiter.check("alice").allowed  # a new request would be over budget...
    assert limiter.check_tokens("alice").allowed  # ...but the admitted one may go on
    limiter.record_usage("alice", TokenUsage(80, 30))
    assert limiter.check_tokens("alice") == RateDecision(False, 60, "tokens")

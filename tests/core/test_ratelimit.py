"""RateLimiter over a real ChatStore with a fake clock (no test sleeps); the tests taking
``store`` or ``store_location`` run on SQLite and on PostgreSQL."""

from __future__ import annotations

import math
import multiprocessing
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
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
def store(store_location: str) -> Iterator[ChatStore]:
    with ChatStore(store_location) as chat_store:
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


def test_usage_in_a_store_outlives_the_limiter(store_location: str, clock: FakeClock) -> None:
    path = store_location
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


# -- cost per check --------------------------------------------------------------------------


@contextmanager
def sqlite_steps(store: ChatStore) -> Iterator[list[int]]:
    """Counts the SQLite virtual-machine steps run on the store's connection: a measure of the
    rows a statement visits that, unlike time, does not depend on the machine."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0  # go on

    connection = store._backend._connection  # type: ignore[attr-defined]  # SQLite's
    connection.set_progress_handler(step, 1)
    try:
        yield steps
    finally:
        connection.set_progress_handler(None, 1)


def steady_cycle_steps(in_window: int) -> int:
    """SQLite steps of three turns' limiter cycles (admit, check tokens, record usage) with
    ``in_window`` turns in the window and as many already out of it."""
    clock = FakeClock()
    spacing = 100 / in_window
    with ChatStore() as store:
        limiter = RateLimiter(store, requests=10**9, tokens=10**12, window_seconds=100, clock=clock)

        def cycle(number: int) -> None:
            clock.at(number * spacing)
            assert limiter.admit_request("alice").allowed
            assert limiter.check_tokens("alice").allowed
            limiter.record_usage("alice", TokenUsage(input_tokens=10, output_tokens=5))

        history = 2 * in_window
        for number in range(history):
            cycle(number)
        with sqlite_steps(store) as steps:
            for number in range(history, history + 3):
                cycle(number)
        return steps[0]


def test_a_check_reads_no_more_rows_after_a_long_history() -> None:
    # Each cycle, one row of each counter leaves the window whatever the history: the work must
    # be the same with 20 turns in the window as with 2,000 (it read every row before).
    short, long = steady_cycle_steps(20), steady_cycle_steps(2000)

    assert long <= short * 1.1, (short, long)


def refusal_steps(limit: int) -> int:
    """SQLite steps of one refused request with a full request budget of ``limit``."""
    clock = FakeClock()
    with ChatStore() as store:
        limiter = RateLimiter(store, requests=limit, window_seconds=limit * 2, clock=clock)
        for number in range(limit):
            clock.at(number)
            assert limiter.admit_request("alice").allowed
        clock.at(limit)
        with sqlite_steps(store) as steps:
            assert limiter.admit_request("alice") == RateDecision(False, limit, "requests")
        return steps[0]


def test_a_refusal_reads_only_the_oldest_rows_it_needs() -> None:
    # One request over: leaving the oldest row is enough, so only that row is read.
    small, large = refusal_steps(10), refusal_steps(2000)

    assert large <= small * 1.1, (small, large)


# -- the exact sliding window ----------------------------------------------------------------


class ReferenceLimiter:
    """The exact sliding window over a plain list of rows: what RateLimiter promises."""

    def __init__(self, rows: list[tuple[str, str, float, int]], window: float) -> None:
        self.rows = rows  # (actor, counter, at, amount), shared by limiters on one store
        self.window = window

    def decide(self, actor: str, now: float, budgets: dict[str, int]) -> RateDecision:
        worst = RateDecision(True)
        for counter, limit in budgets.items():
            wait = self.wait(actor, counter, limit, now)
            if wait is not None and wait > (worst.retry_after_seconds or 0):
                worst = RateDecision(False, wait, counter)
        return worst

    def wait(self, actor: str, counter: str, limit: int, now: float) -> int | None:
        # Stable sort: rows at the same time leave in the order they were recorded.
        rows = sorted(
            (
                (at, amount)
                for row_actor, row_counter, at, amount in self.rows
                if (row_actor, row_counter) == (actor, counter) and at > now - self.window
            ),
            key=lambda row: row[0],
        )
        used = sum(amount for _, amount in rows)
        for at, amount in rows:
            if used < limit:
                break
            used -= amount
            if used < limit:
                return max(1, math.ceil(round(at + self.window - now, 6)))
        return None

    def record(self, actor: str, now: float, amounts: dict[str, int]) -> None:
        self.rows.extend((actor, counter, now, amount) for counter, amount in amounts.items())


def random_budgets(rng: random.Random) -> dict[str, int | None]:
    return {
        "requests": rng.choice([None, 1, 2, 3, 5]),
        "tokens": rng.choice([None, 30, 100]),
        "input_tokens": rng.choice([None, 20, 60]),
        "output_tokens": rng.choice([None, 15, 50]),
    }


def run_scenario(seed: int, steps: int) -> None:
    """Two limiters with different windows and budgets on one store against the reference, over
    random requests, checks, usage, clock moves (on a quarter-second grid, so usage often sits
    exactly on a window's edge; now and then backwards or past a day) and cleanups."""
    rng = random.Random(seed)
    clock = FakeClock()
    rows: list[tuple[str, str, float, int]] = []
    with ChatStore() as store:
        pairs = []
        for window in rng.sample([2.5, 7.5, 10.0, 2 * 86400.0], 2):
            budgets = random_budgets(rng)
            limiter = RateLimiter(store, window_seconds=window, clock=clock, **budgets)
            pairs.append((limiter, ReferenceLimiter(rows, window)))
        for _ in range(steps):
            limiter, reference = rng.choice(pairs)
            actor = rng.choice(["alice", "bob"])
            token_budgets = {k: v for k, v in limiter.budgets.items() if k != "requests"}
            action = rng.choices(
                ["move", "back", "day", "cleanup", "admit", "check", "tokens", "usage"],
                [6, 1, 0.3, 0.3, 4, 2, 2, 3],
            )[0]
            if action == "move":
                clock.now += rng.randint(0, 40) / 4
            elif action == "back":
                clock.now -= rng.randint(1, 48) / 4
            elif action == "day":
                clock.now += 86400 + rng.randint(0, 8) / 4
            elif action == "cleanup":
                store.cleanup(0, now=clock.now)
                rows[:] = [row for row in rows if row[2] >= clock.now - 86400]
            elif action == "admit":
                expected = reference.decide(actor, clock.now, limiter.budgets)
                assert limiter.admit_request(actor) == expected, (seed, clock.now - T0)
                if expected.allowed:
                    reference.record(actor, clock.now, {"requests": 1})
            elif action == "check":
                expected = reference.decide(actor, clock.now, limiter.budgets)
                assert limiter.check(actor) == expected, (seed, clock.now - T0)
            elif action == "tokens":
                expected = reference.decide(actor, clock.now, token_budgets)
                assert limiter.check_tokens(actor) == expected, (seed, clock.now - T0)
            else:
                usage = TokenUsage(rng.choice([0, 5, 10, 25]), rng.choice([0, 5, 10, 25]))
                limiter.record_usage(actor, usage)
                amounts = {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "tokens": usage.input_tokens + usage.output_tokens,
                }
                reference.record(actor, clock.now, {k: v for k, v in amounts.items() if v})


def test_decisions_match_the_exact_sliding_window_over_random_use() -> None:
    # Seeded, so a failure names the seed that reproduces it.
    for seed in range(150):
        run_scenario(seed, steps=120)


# -- two stores, two processes ---------------------------------------------------------------

RACE_ROUNDS = 200


def last_request_limiter(store: ChatStore) -> RateLimiter:
    return RateLimiter(store, requests=3, window_seconds=60, clock=lambda: T0)


def prepare_race(path: str, actors: list[str]) -> None:
    """Two of each actor's three requests used."""
    with ChatStore(path) as store:
        for actor in actors:
            store.record_usage(actor, "requests", 1, at=T0 - 2)
            store.record_usage(actor, "requests", 1, at=T0 - 1)


def race(path: str, barrier: threading.Barrier | Barrier, prefix: str) -> list[bool]:
    """One racer: for each round, the last request of a fresh actor, asked for at the same
    moment as the other racer asks for it. Whether each was admitted."""
    with ChatStore(path) as store:
        limiter = last_request_limiter(store)
        admitted = []
        for number in range(RACE_ROUNDS):
            barrier.wait(timeout=30)
            admitted.append(limiter.admit_request(f"{prefix}-{number}").allowed)
        return admitted


def race_in_child(path: str, barrier: Barrier, prefix: str, results: Queue[list[bool]]) -> None:
    results.put(race(path, barrier, prefix))


class PausingStore(ChatStore):
    """A store whose usage reads wait (up to a second) for the other racer's: the interleaving
    in which a limiter that reads, decides and then records admits both."""

    def __init__(self, path: str, barrier: threading.Barrier) -> None:
        super().__init__(path)
        self.barrier = barrier

    def usage(self, actor_id: str, counter: str, *, since: float) -> list[tuple[float, int]]:
        rows = super().usage(actor_id, counter, since=since)
        with suppress(threading.BrokenBarrierError):
            self.barrier.wait(timeout=1)
        return rows


def test_two_stores_on_one_store_admit_the_last_request_once_even_with_paused_reads(
    store_location: str,
) -> None:
    path = store_location
    prepare_race(path, ["alice"])
    barrier = threading.Barrier(2)
    with (
        PausingStore(path, barrier) as first,
        PausingStore(path, barrier) as second,
        ThreadPoolExecutor(2) as pool,
    ):
        limiters = [last_request_limiter(first), last_request_limiter(second)]
        decisions = list(pool.map(lambda limiter: limiter.admit_request("alice"), limiters))

    assert sorted(decision.allowed for decision in decisions) == [False, True]


def test_two_stores_on_one_store_racing_admit_the_last_request_once(store_location: str) -> None:
    path = store_location
    prepare_race(path, [f"threads-{number}" for number in range(RACE_ROUNDS)])
    barrier = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        racers = [pool.submit(race, str(path), barrier, "threads") for _ in range(2)]
        first, second = (racer.result(timeout=60) for racer in racers)

    assert [a + b for a, b in zip(first, second, strict=True)] == [1] * RACE_ROUNDS


def test_two_processes_racing_admit_the_last_request_once(store_location: str) -> None:
    path = store_location
    prepare_race(path, [f"processes-{number}" for number in range(RACE_ROUNDS)])
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results: Queue[list[bool]] = context.Queue()
    child = context.Process(target=race_in_child, args=(str(path), barrier, "processes", results))
    child.start()
    try:
        ours = race(str(path), barrier, "processes")
        theirs = results.get(timeout=60)
    finally:
        child.join(timeout=60)

    assert [a + b for a, b in zip(ours, theirs, strict=True)] == [1] * RACE_ROUNDS

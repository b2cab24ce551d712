"""io.ahead: a run read on a thread gives what it gives in order, raises where it failed,
stays within its budget, and lets go of its thread when the caller stops early."""

from __future__ import annotations

import threading

import pytest

from goldkeeper.io.ahead import ReadAhead


def test_items_come_in_order_and_all_of_them():
    with ReadAhead(iter(range(1000)), budget=10, size=lambda item: 1) as ahead:
        assert list(ahead) == list(range(1000))


def test_what_the_producer_raises_is_raised_after_the_items_before_it_and_then_it_ends():
    def items():
        yield from (1, 2, 3)
        raise ValueError("row 4: not a list")

    with ReadAhead(items(), budget=100, size=lambda item: 1) as ahead:
        assert [next(ahead), next(ahead), next(ahead)] == [1, 2, 3]
        with pytest.raises(ValueError, match="row 4"):
            next(ahead)
        with pytest.raises(StopIteration):
            next(ahead)


def test_the_producer_holds_at_most_its_budget_ahead_and_always_one_item():
    produced: list[int] = []
    fourth = threading.Event()

    def items():
        for n in range(100):
            produced.append(n)
            if n == 3:
                fourth.set()
            yield n

    with ReadAhead(items(), budget=3, size=lambda item: 1 if item < 10 else 50) as ahead:
        assert fourth.wait(timeout=60)
        for _ in range(20):  # the producer, given time, makes no fifth: three held, one waiting
            threading.Event().wait(0.01)
        assert produced == [0, 1, 2, 3]
        assert [next(ahead) for _ in range(12)] == list(range(12))
        # An item over the budget alone is still produced once nothing is held.
        assert list(ahead) == list(range(12, 100))


def test_a_caller_that_stops_early_stops_the_producer_and_its_cleanup_runs():
    closed = threading.Event()

    def items():
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            closed.set()

    before = threading.active_count()
    with ReadAhead(items(), budget=5, size=lambda item: 1) as ahead:
        assert next(ahead) == 0
    assert closed.is_set()
    assert threading.active_count() == before


def test_a_caller_that_fails_before_reading_anything_lets_go_of_the_thread():
    before = threading.active_count()
    with pytest.raises(RuntimeError), ReadAhead(iter(range(10**9)), budget=3, size=lambda item: 1):
        raise RuntimeError("the labels were refused")
    assert threading.active_count() == before

"""VirtualClock: time jumps from timer to timer; same-instant timers run in scheduling order."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.runtime.clock import VirtualClock


def test_timers_run_by_time_then_insertion_order() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []

    def note(name: str) -> Callable[[], None]:
        return lambda: seen.append((name, clock.now()))

    clock.call_at(5, note("a@5"))
    clock.call_at(1, note("b@1"))
    clock.call_at(5, note("c@5"))
    clock.call_soon(note("d@0"))
    clock.call_later(1, note("e@1"))
    clock.run()
    assert seen == [("d@0", 0), ("b@1", 1), ("e@1", 1), ("a@5", 5), ("c@5", 5)]
    assert clock.now() == 5


def test_timer_added_while_running_at_the_same_instant_runs_after_those_already_due() -> None:
    clock = VirtualClock()
    seen: list[str] = []

    def first() -> None:
        seen.append("first")
        clock.call_soon(lambda: seen.append("added by first"))

    clock.call_at(2, first)
    clock.call_at(2, lambda: seen.append("second"))
    clock.run()
    assert seen == ["first", "second", "added by first"]


def test_a_time_in_the_past_means_now() -> None:
    clock = VirtualClock()
    clock.call_at(10, lambda: None)
    clock.run()
    seen: list[float] = []
    timer = clock.call_at(3, lambda: seen.append(clock.now()))
    assert timer.when == 10
    clock.run()
    assert seen == [10]


def test_cancelled_timer_never_runs_and_does_not_keep_the_run_alive() -> None:
    clock = VirtualClock()
    seen: list[str] = []
    t1 = clock.call_at(1, lambda: seen.append("cancelled"))
    clock.call_at(2, lambda: seen.append("kept"))
    t3 = clock.call_at(50, lambda: seen.append("cancelled too"))
    t1.cancel()
    t3.cancel()
    t3.cancel()  # twice is harmless
    assert clock.next_time() == 2
    clock.run()
    assert seen == ["kept"]
    assert clock.now() == 2  # did not jump to the cancelled timer's time
    assert clock.next_time() is None


def test_cancel_from_inside_a_callback() -> None:
    clock = VirtualClock()
    seen: list[str] = []
    later = clock.call_at(5, lambda: seen.append("later"))
    clock.call_at(1, later.cancel)
    clock.run()
    assert seen == []
    assert clock.now() == 1


def test_daemon_timers_alone_do_not_keep_a_run_going() -> None:
    clock = VirtualClock()
    ticks: list[float] = []

    def housekeeping() -> None:  # a periodic daemon, rescheduling itself forever
        ticks.append(clock.now())
        clock.call_at(clock.now() + 30, housekeeping, daemon=True)

    clock.call_at(30, housekeeping, daemon=True)
    clock.call_at(100, lambda: None)
    clock.run()
    # Daemons due before the last real work still ran; the run then stopped.
    assert ticks == [30, 60, 90]
    assert clock.now() == 100


def test_only_daemons_means_nothing_happens() -> None:
    clock = VirtualClock()
    seen: list[float] = []
    clock.call_at(30, lambda: seen.append(clock.now()), daemon=True)
    clock.run()
    assert seen == []
    assert clock.now() == 0


def test_cancelling_a_daemon_does_not_disturb_the_live_count() -> None:
    clock = VirtualClock()
    seen: list[str] = []
    d = clock.call_at(1, lambda: seen.append("daemon"), daemon=True)
    clock.call_at(5, lambda: seen.append("work"))
    d.cancel()
    clock.run()
    assert seen == ["work"]


def test_until_stops_at_that_time_and_a_later_run_resumes() -> None:
    clock = VirtualClock()
    seen: list[float] = []
    for t in (10, 20, 30):
        clock.call_at(t, lambda: seen.append(clock.now()))
    clock.run(until=20)
    assert seen == [10, 20]  # a timer due exactly at `until` runs
    assert clock.now() == 20
    clock.run(until=25)
    assert seen == [10, 20]
    assert clock.now() == 25
    clock.run()
    assert seen == [10, 20, 30]


def test_until_runs_daemons_and_advances_time_even_with_nothing_due() -> None:
    clock = VirtualClock()
    ticks: list[float] = []

    def housekeeping() -> None:
        ticks.append(clock.now())
        clock.call_at(clock.now() + 30, housekeeping, daemon=True)

    clock.call_at(30, housekeeping, daemon=True)
    clock.run(until=100)
    assert ticks == [30, 60, 90]  # with an explicit stop time, housekeeping keeps running
    assert clock.now() == 100

    empty = VirtualClock()
    empty.run(until=42)
    assert empty.now() == 42

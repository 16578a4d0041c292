"""The time manager spends the clock where the search needs it and never runs out."""

from __future__ import annotations

import pytest

from engine_server.search.timeman import ABSOLUTE, FISCHER, Clock, TimeManager


def _play_out(kind: str, main: float, inc: float, first_empties: int, free_from: int):
    """Our moves of one game, each taking its whole budget, except at ``free_from`` empties or
    fewer, where they take nothing (as a solved endgame does).  Returns (spent, clock left)."""
    tm = TimeManager()
    clock = Clock(kind=kind, main=main, period=inc)
    left = main
    spent = 0.0
    for empties in range(first_empties, 0, -2):
        clock.set_left(left, 0)
        t = tm.budget(clock, empties, None)
        used = 0.0 if empties <= free_from else t
        spent += used
        left = left - used + (inc if kind == FISCHER else 0.0)
        assert left > 0, f"flag fell at {empties} empties"
    return spent, left


@pytest.mark.parametrize("main", [5.0, 15.0, 60.0, 300.0])
def test_absolute_clock_is_mostly_spent_before_a_solved_endgame(main):
    spent, left = _play_out(ABSOLUTE, main, 0.0, 54, free_from=12)
    assert spent > 0.75 * main, (spent, left)


@pytest.mark.parametrize("main", [5.0, 15.0, 60.0])
def test_clock_never_runs_out_when_every_move_uses_its_budget(main):
    _, left = _play_out(ABSOLUTE, main, 0.0, 60, free_from=0)
    assert left > 0.01 * main  # a reserve stays for the last moves


def test_fischer_increment_is_spent_move_by_move():
    spent, left = _play_out(FISCHER, 10.0, 1.0, 54, free_from=12)
    assert spent > 0.75 * (10.0 + 21 * 1.0) and left > 0


def _plan(main: float, first_empties: int = 54) -> dict[int, float]:
    """Each of our moves' budget when every move uses it all until the free endgame."""
    tm = TimeManager()
    clock = Clock(kind=ABSOLUTE, main=main)
    left = main
    out = {}
    for empties in range(first_empties, 12, -2):
        clock.set_left(left, 0)
        out[empties] = tm.budget(clock, empties, None)
        left -= out[empties]
    return out


@pytest.mark.parametrize("main", [15.0, 60.0, 300.0])
def test_the_late_midgame_gets_more_time_than_the_opening(main):
    plan = _plan(main)
    opening = plan[54] + plan[52] + plan[50]
    late_midgame = plan[32] + plan[30] + plan[28]
    assert late_midgame > 1.5 * opening, plan
    # and less again once the solver proves the end quickly
    assert plan[18] < plan[30], plan


def test_a_forced_move_under_a_clock_keeps_the_time_for_real_choices():
    tm = TimeManager()
    clock = Clock(kind=ABSOLUTE, main=60.0)
    clock.set_left(30.0, 0)
    assert tm.budget(clock, 36, None, forced=True) <= tm.forced_move_time
    assert tm.budget(clock, 36, None) > 1.0
    # a fixed time per move cannot be saved: a forced move still gets it all
    assert tm.budget(None, 36, 2.0, forced=True) == 2.0

"""perft and random-playout benchmarks of the rules core, each against the C reference."""

from __future__ import annotations

import re
from typing import Any

from engine_server.game.bitboard import START_BLACK, START_WHITE
from engine_server.game.perft import perft_bik, perft_edax
from engine_server.game.playout import c_reference_rng, random_games_from_start

from .common import build_c_reference, median, run_c, timed


def bench_perft(depth: int, convention: str = "bik", repeat: int = 5,
                with_c: bool = True) -> dict[str, Any]:
    fn = perft_bik if convention == "bik" else perft_edax
    fn(START_BLACK, START_WHITE, min(depth, 3))  # load/compile outside the timing
    times, count = [], 0
    for _ in range(repeat):
        dt, count = timed(lambda: fn(START_BLACK, START_WHITE, depth))
        times.append(dt)
    out: dict[str, Any] = {
        "bench": "perft", "convention": convention, "depth": depth, "count": int(count),
        "leaves_per_s": count / median(times), "best_leaves_per_s": count / min(times),
        "seconds_median": median(times), "runs": repeat,
    }
    if with_c and convention == "bik":
        binary, note = build_c_reference()
        if binary is None:
            out["c_note"] = note
        else:
            rates = []
            for _ in range(repeat):
                stdout, _ = run_c(binary, "perft", str(depth))
                m = re.search(r"perft (\d+) (\d+) leaves_per_s ([\d.e+]+)", stdout)
                if not m or int(m.group(2)) != count:
                    raise RuntimeError(f"C reference disagrees: {stdout!r}")
                rates.append(float(m.group(3)))
            out["c_leaves_per_s"] = median(rates)
            out["ratio_to_c"] = out["leaves_per_s"] / out["c_leaves_per_s"]
    return out


def bench_playouts(games: int, repeat: int = 5, with_c: bool = True) -> dict[str, Any]:
    random_games_from_start(10, c_reference_rng())  # load/compile outside the timing
    binary, note = build_c_reference() if with_c else (None, "C reference not requested")
    rates, c_rates = [], []
    result = None
    c_black_wins = None
    plies = 0
    # Alternate numba and C runs so that machine noise hits both alike.
    for _ in range(repeat):
        dt, result = timed(lambda: random_games_from_start(games, c_reference_rng()))
        plies = result[3]
        rates.append(games / dt)
        if binary is not None:
            stdout, stderr = run_c(binary, "playouts", str(games))
            c_rates.append(float(stdout.split()[1]))
            m = re.search(r"black won (\d+)", stderr)
            c_black_wins = int(m.group(1)) if m else None
    assert result is not None
    out: dict[str, Any] = {
        "bench": "playouts", "games": games, "runs": repeat,
        "playouts_per_s": median(rates), "best_playouts_per_s": max(rates),
        "plies_per_game": plies / games,
        "black_wins": int(result[0]), "white_wins": int(result[1]), "draws": int(result[2]),
    }
    if binary is None:
        out["c_note"] = note
    else:
        out["c_playouts_per_s"] = median(c_rates)
        out["ratio_to_c"] = out["playouts_per_s"] / out["c_playouts_per_s"]
        # Same RNG, same algorithm: the C program must have played the very same games.
        out["same_games_as_c"] = c_black_wins == int(result[0])
    return out

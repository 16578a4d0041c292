"""The results of a match from its game records: per-player and per-pairing tables, Elo, the
score matrix, colour statistics and the SPRT state (``results.json``, the printed table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import elo as E
from .config import MatchConfig
from .record import COLORS, POINTS, GameRecord
from .schedule import labels, pairings

_OUTCOME_INDEX = {"win": 0, "draw": 1, "loss": 2}


def tally(records: list[GameRecord], label: str) -> tuple[int, int, int]:
    """(wins, draws, losses) of the player ``label``."""
    counts = [0, 0, 0]
    for r in records:
        outcome = r.outcome_for(label)
        if outcome is not None:
            counts[_OUTCOME_INDEX[outcome]] += 1
    return counts[0], counts[1], counts[2]


def _player_view(rec: GameRecord, label: str) -> tuple[str, int | None]:
    """('win'|'draw'|'loss', disc margin from this player's side or None)."""
    color = "black" if rec.black == label else "white"
    margin = rec.black_score
    if margin is not None and color == "white":
        margin = -margin
    if rec.winner is None:
        return "draw", margin
    return ("win" if rec.winner == color else "loss"), margin


def summarize(config: MatchConfig, records: list[GameRecord], scheduled: int,
              stopped: str | None = None) -> dict[str, Any]:
    specs = config.specs()
    names = labels(specs)
    per: dict[str, dict[str, Any]] = {
        n: {"name": n, "spec": s.text, "games": 0, "wins": 0, "draws": 0, "losses": 0,
            "margin_sum": 0.0, "margin_games": 0, "time_losses": 0, "slow_moves": None,
            "forfeits": {},
            "wins_by_forfeit": 0, "as_black": [0, 0, 0], "as_white": [0, 0, 0],
            "move_time": 0.0, "moves": 0, "playouts": 0, "searched": 0}
        for n, s in zip(names, specs)}
    pair_res: dict[tuple[str, str], list[int]] = {}
    for i, j in pairings(len(names), config.format):
        pair_res[(names[i], names[j])] = [0, 0, 0]
    colors = {"black": 0, "white": 0, "draw": 0}
    reasons: dict[str, int] = {}
    # per pairing, the first player's points in each game of an opening's pair, by colour swap
    halves: dict[tuple[str, str], dict[tuple[int, int], dict[int, float]]] = {}
    for rec in records:
        colors[rec.winner or "draw"] += 1
        reasons[rec.reason] = reasons.get(rec.reason, 0) + 1
        for color in COLORS:
            label = rec.label_of(color)
            if label not in per:
                continue
            p = per[label]
            outcome, margin = _player_view(rec, label)
            p["games"] += 1
            idx = _OUTCOME_INDEX[outcome]
            p[{"win": "wins", "draw": "draws", "loss": "losses"}[outcome]] += 1
            p["as_" + color][idx] += 1
            if margin is not None:
                p["margin_sum"] += margin
                p["margin_games"] += 1
            if rec.loser == color:
                p["forfeits"][rec.reason] = p["forfeits"].get(rec.reason, 0) + 1
                if rec.reason == "timeout":
                    p["time_losses"] += 1
            elif rec.loser is not None:
                p["wins_by_forfeit"] += 1
            st = rec.stats[color]
            if st.slow_moves is not None:
                p["slow_moves"] = (p["slow_moves"] or 0) + st.slow_moves
            p["move_time"] += st.time
            p["moves"] += st.moves
            p["playouts"] += st.playouts
            p["searched"] += st.searched
        a, _, b = rec.pairing.partition(" vs ")
        if (a, b) in pair_res:
            outcome, _ = _player_view(rec, a)
            pair_res[(a, b)][_OUTCOME_INDEX[outcome]] += 1
            halves.setdefault((a, b), {}).setdefault((rec.opening_index, rec.round), {})[
                rec.swap] = POINTS[outcome]
    anchor = names[0] if config.format == "gauntlet" else None
    ratings = {r.name: r for r in E.bradley_terry(
        names, {k: (v[0], v[1], v[2]) for k, v in pair_res.items()}, anchor=anchor)}
    players: list[dict[str, Any]] = []
    for name in names:
        p = per[name]
        g = p["games"]
        iv = ratings[name].interval
        players.append({
            "name": name, "spec": p["spec"], "games": g, "wins": p["wins"], "draws": p["draws"],
            "losses": p["losses"],
            "score": round((p["wins"] + 0.5 * p["draws"]) / g, 4) if g else None,
            # + 0.0 turns a rounded -0.0 into 0.0 for the table
            "elo": round(iv.elo, 1) + 0.0 if g else None,
            "elo_low": round(iv.low, 1) + 0.0 if g else None,
            "elo_high": round(iv.high, 1) + 0.0 if g else None,
            "margin": round(p["margin_sum"] / p["margin_games"], 2) if p["margin_games"] else None,
            "time_losses": p["time_losses"], "slow_moves": p["slow_moves"],
            "forfeits": p["forfeits"],
            "wins_by_forfeit": p["wins_by_forfeit"],
            "as_black": dict(zip(("wins", "draws", "losses"), p["as_black"])),
            "as_white": dict(zip(("wins", "draws", "losses"), p["as_white"])),
            "mean_move_time": round(p["move_time"] / p["moves"], 4) if p["moves"] else None,
            "mean_playouts": round(p["playouts"] / p["searched"], 1) if p["searched"] else None,
        })
    pairs: list[dict[str, Any]] = []
    for (a, b), (w, d, l) in pair_res.items():
        total = w + d + l
        iv = E.elo_interval(w, d, l)
        _, lo, hi = E.score_interval(w, d, l)
        entry: dict[str, Any] = {
            "a": a, "b": b, "games": total, "wins": w, "draws": d, "losses": l,
            "score": round((w + 0.5 * d) / total, 4) if total else None,
            "score_interval": [round(lo, 4), round(hi, 4)] if total else None,
            "elo": iv.as_dict(), "los": round(E.likelihood_of_superiority(w, l), 4)}
        # complete pairs only: an opening played with both colours
        done = [sum(h.values()) for h in halves.get((a, b), {}).values() if len(h) == 2]
        if config.swap and done:
            counts = E.pentanomial(done)
            ps, plo, phi = E.pair_score_interval(counts)
            entry["game_pairs"] = {
                "pairs": len(done), "pentanomial": counts, "score": round(ps, 4),
                "score_interval": [round(plo, 4), round(phi, 4)],
                "elo": E.pair_elo_interval(counts).as_dict()}
        pairs.append(entry)
    matrix: list[list[float | None]] = [[None] * len(names) for _ in names]
    for pr in pairs:
        if pr["games"]:
            i, j = names.index(pr["a"]), names.index(pr["b"])
            matrix[i][j] = pr["score"]
            matrix[j][i] = round(1.0 - pr["score"], 4)
    sprt = None
    if config.sprt is not None:
        w, d, l = tally(records, names[0])
        s = config.sprt
        sprt = {"elo0": s.elo0, "elo1": s.elo1, "alpha": s.alpha, "beta": s.beta,
                "llr": round(s.llr(w, d, l), 4), "lower": round(s.lower, 4),
                "upper": round(s.upper, 4), "status": s.status(w, d, l)}
    starts = [r.started for r in records]
    ends = [r.started + r.duration for r in records]
    return {
        "match": config.identity(), "format": config.format, "games_played": len(records),
        # wall time from the first game's start to the last one's end (resumed runs included)
        "wall_seconds": round(max(ends) - min(starts), 1) if records else 0.0,
        "first_start": min(starts) if records else None,
        "last_end": max(ends) if records else None,
        "game_seconds": round(sum(r.duration for r in records), 1),
        "games_scheduled": scheduled, "complete": len(records) >= scheduled or bool(stopped),
        "stopped": stopped, "players": players, "pairings": pairs,
        "matrix": {"names": names, "score": matrix}, "colors": colors, "reasons": reasons,
        "rating_anchor": anchor or "mean", "sprt": sprt,
    }


def format_table(results: dict[str, Any]) -> str:
    players = sorted(results["players"], key=lambda p: -(p["elo"] if p["elo"] is not None
                                                        else -1e9))
    width = max(8, max(len(p["name"]) for p in players))
    lines = [f"{results['games_played']}/{results['games_scheduled']} games, "
             f"{results['format']}, {results['match']['rules']} rules; Elo relative to "
             f"{results['rating_anchor']} (95% interval)"]
    head = (f"{'player':<{width}}  games     W     D     L  score%      Elo     95% interval"
            f"   margin  time-losses  slow-moves  other forfeits")
    lines += [head, "-" * len(head)]
    for p in players:
        if not p["games"]:
            lines.append(f"{p['name']:<{width}}  {0:>5}")
            continue
        other = {k: v for k, v in p["forfeits"].items() if k != "timeout"}
        other_text = ", ".join(f"{k} {v}" for k, v in sorted(other.items())) or "-"
        margin = f"{p['margin']:+7.2f}" if p["margin"] is not None else "      -"
        # "-": journals written before slow moves were counted
        slow = p.get("slow_moves")
        lines.append(
            f"{p['name']:<{width}}  {p['games']:>5} {p['wins']:>5} {p['draws']:>5} "
            f"{p['losses']:>5}  {100 * p['score']:6.1f}  {p['elo']:+7.1f}  "
            f"[{p['elo_low']:+7.1f}, {p['elo_high']:+7.1f}]  {margin}  {p['time_losses']:>11}"
            f"  {'-' if slow is None else slow:>10}  {other_text}")
    lines.append("")
    lines.append("pairings (first player's view):")
    for pr in results["pairings"]:
        if not pr["games"]:
            continue
        e = pr["elo"]
        elo_text = (f"{e['elo']:+.1f} [{_num(e['low'], '-inf')}, {_num(e['high'], '+inf')}]"
                    if e["elo"] is not None else "unbounded (one side scored every point)")
        score_text = f"{100 * pr['score']:.1f}%"
        if pr.get("score_interval"):  # results written before it was reported lack it
            lo, hi = pr["score_interval"]
            score_text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
        lines.append(f"  {pr['a']} vs {pr['b']}: +{pr['wins']} ={pr['draws']} -{pr['losses']}"
                     f"  score {score_text}  Elo {elo_text}  LOS {pr['los']:.3f}")
        gp = pr.get("game_pairs")
        if gp:
            e = gp["elo"]
            plo, phi = gp["score_interval"]
            elo_text = (f"{e['elo']:+.1f} [{_num(e['low'], '-inf')}, {_num(e['high'], '+inf')}]"
                        if e["elo"] is not None else "unbounded")
            lines.append(f"    by game pairs (each opening with both colours): {gp['pairs']} pairs"
                         f" scoring 0/0.5/1/1.5/2: {'/'.join(map(str, gp['pentanomial']))}"
                         f"  score {100 * gp['score']:.1f}% [{100 * plo:.1f}, {100 * phi:.1f}]"
                         f"  Elo {elo_text}")
    c = results["colors"]
    lines.append(f"colours: black won {c['black']}, white won {c['white']}, draws {c['draw']}")
    if results.get("sprt"):
        s = results["sprt"]
        lines.append(f"SPRT elo0={s['elo0']:g} elo1={s['elo1']:g}: LLR {s['llr']:+.3f} in "
                     f"[{s['lower']:+.3f}, {s['upper']:+.3f}] -> {s['status']}")
    if results.get("stopped"):
        lines.append(f"stopped early: {results['stopped']}")
    return "\n".join(lines)


def _num(x: float | None, unbounded: str) -> str:
    return unbounded if x is None else f"{x:+.1f}"


def write_results(config: MatchConfig, results: dict[str, Any], plots: bool = True) -> list[Path]:
    path = config.out / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(path)
    written = [path]
    if plots:
        from .plots import write_match_plots

        written += write_match_plots(results, config.out)
    return written

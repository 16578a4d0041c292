"""Self-play and gate games with the engine's PUCT agent over an ONNX network.

Self-play (AlphaGo Zero): every move is a search of ``iterations`` network evaluations from the
current position with Dirichlet noise at the root; the policy target is the root's visit
distribution, the move is drawn in proportion to the visits (temperature 1) for the first
``temp_moves`` moves and is the most visited one after that; each position's value target is
the game's result for its side to move.  Positions with one legal move (or a forced pass) are
kept with that move as the target, unsearched.

Gate games: the candidate against the best network, both without noise and at temperature 0,
from balanced 6-ply openings (clients/match/openings.txt), each opening played with both
colours, so two deterministic players still play different games.

Games run in worker processes (``multiprocessing`` spawn, so numba and ONNX Runtime start clean
in each), or with ``cluster`` on the workers of a Dask scheduler (one task per game, through
clients/match/cluster.py; the networks are read there by absolute path, so the work directory
must be on a file system the workers share); a game's outcome depends only on its seed, so the
games a killed run had finished are kept and the rest are played again identically.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, cast

import numpy as np

from engine_server.eval import planes
from engine_server.game import Position

from . import data

MAX_WORKERS = 2


@dataclass(frozen=True)
class SelfPlayConfig:
    iterations: int = 100
    temp_moves: int = 15
    noise: float = 0.25
    noise_alpha: float = 0.5
    rules: str = "standard"
    memory_mib: int = 64


def agent_spec(net: str | Path, seed: int, noise: float = 0.25, noise_alpha: float = 0.5,
               memory_mib: int = 64) -> str:
    return (f"puct:net={net},noise={noise},noise_alpha={noise_alpha},seed={seed},"
            f"root_solve=0,memory={memory_mib}")


def _visits(result: Any) -> np.ndarray:
    pi = np.zeros(planes.N_MOVES, np.float64)
    for st in result.moves:
        pi[int(st.move)] += float(st.visits)
    if pi.sum() <= 0:
        # a root the leaf solver proved at once: the proven move is the whole target
        pi[int(result.best_move)] = 1.0
    return pi


def play_selfplay_game(net: str | Path, cfg: SelfPlayConfig, seed: int) -> dict[str, Any]:
    """One self-play game; returns its positions, targets and result (arrays in a dict)."""
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    agent = make_agent(agent_spec(net, seed, cfg.noise, cfg.noise_alpha, cfg.memory_mib))
    rng = np.random.default_rng([seed, 17])
    pos = Position.start(cfg.rules)
    Ps, Os, blacks, pis, moves = [], [], [], [], []
    ply = 0
    while not pos.is_game_over():
        P, O = pos.bitboards()
        legal = pos.legal_moves()
        pi = np.zeros(planes.N_MOVES, np.float64)
        if len(legal) == 1:
            mv = int(legal[0])
            pi[mv] = 1.0
        else:
            res = agent.search(pos, Limits(iterations=cfg.iterations))
            pi = _visits(res)
            if ply < cfg.temp_moves:
                mv = int(rng.choice(planes.N_MOVES, p=pi / pi.sum()))
            else:
                mv = int(np.argmax(pi))
        Ps.append(int(P))
        Os.append(int(O))
        blacks.append(pos.side == 0)
        pis.append(pi / pi.sum())
        moves.append(mv)
        agent.advance([mv])
        pos = pos.play(mv)
        if mv != planes.PASS_INDEX:
            ply += 1
    black_score = pos.black_score()
    z_black = float(np.sign(black_score))
    black = np.array(blacks, np.bool_)
    return {"P": np.array(Ps, np.uint64), "O": np.array(Os, np.uint64), "black": black,
            "pi": np.array(pis, np.float32), "move": np.array(moves, np.int8),
            "value": np.where(black, z_black, -z_black).astype(np.float32),
            "black_score": black_score, "seed": seed}


def game_samples(games: list[dict[str, Any]], game_ids: Iterable[int]) -> data.Samples:
    parts = []
    for g, gid in zip(games, game_ids):
        n = len(g["P"])
        P = g["P"].astype(np.uint64)
        O = g["O"].astype(np.uint64)
        empt = (64 - np.array([bin(int(a) | int(b)).count("1") for a, b in zip(P, O)]))
        parts.append(data.Samples(P, O, g["black"].astype(np.bool_),
                                  np.full(n, -1, np.int8), g["value"].astype(np.float32),
                                  np.full(n, gid, np.int64), empt.astype(np.int8),
                                  g["pi"].astype(np.float32)))
    if not parts:
        return data.empty()
    return data.Samples(*(np.concatenate([getattr(p, k) for p in parts]) for k in
                          ("P", "O", "black", "move", "value", "game", "empties", "pi")))


def play_gate_game(cand: str | Path, best: str | Path, opening: tuple[int, ...],
                   cand_black: bool, iterations: int, rules: str, seed: int,
                   memory_mib: int = 64) -> dict[str, Any]:
    """One gate game; ``score`` is the candidate's: 1 win, 0.5 draw, 0 loss."""
    from engine_server.agents import make_agent
    from engine_server.search.limits import Limits

    a_c = make_agent(agent_spec(cand, seed, 0.0, 0.5, memory_mib))
    a_b = make_agent(agent_spec(best, seed, 0.0, 0.5, memory_mib))
    pos = Position.start(rules)
    for mv in opening:
        pos = pos.play(int(mv))
    moves: list[int] = []
    while not pos.is_game_over():
        black_to_move = pos.side == 0
        agent = a_c if black_to_move == cand_black else a_b
        if pos.must_pass():
            mv = planes.PASS_INDEX
        else:
            best_move = agent.search(pos, Limits(iterations=iterations)).best_move
            assert best_move is not None  # the game is not over
            mv = int(best_move)
        moves.append(mv)
        pos = pos.play(mv)
    bs = pos.black_score()
    cs = bs if cand_black else -bs
    return {"opening": list(opening), "cand_black": cand_black, "moves": moves,
            "black_score": bs, "score": 1.0 if cs > 0 else 0.5 if cs == 0 else 0.0}


def match(a: str | Path, b: str | Path, games: int, iterations: int, rules: str = "standard",
          workers: int = 2, seed: int = 1, log_path: Path | None = None, label: str = "match",
          memory_mib: int = 64, cluster: str | None = None) -> dict[str, Any]:
    """``a`` against ``b``: game ``i`` starts from balanced opening ``i // 2`` with ``a`` Black
    when ``i`` is even.  Results are appended to ``log_path`` as they come, and the games it
    already holds are not played again.  Returns a's wins, draws, losses, score and Elo."""
    import sys
    import time

    from clients.match.elo import elo_interval
    from clients.match.openings import load as load_openings

    rows = {r["index"]: r for r in read_jsonl(log_path)} if log_path is not None else {}
    openings = load_openings()
    tasks = []
    for i in range(games):
        if i in rows:
            continue
        op = openings[(i // 2) % len(openings)]
        tasks.append(("gate", {"index": i, "args": {
            "cand": str(a), "best": str(b), "opening": tuple(op.moves), "cand_black": i % 2 == 0,
            "iterations": iterations, "rules": rules, "seed": seed + i,
            "memory_mib": memory_mib}}))
    t0 = time.monotonic()

    def finished(r: dict[str, Any]) -> None:
        if log_path is not None:
            append_jsonl(log_path, r)
        rows[r["index"]] = r
        sys.stderr.write(f"\r{label}: {len(rows)}/{games} games, {time.monotonic() - t0:.0f} s ")
        sys.stderr.flush()

    run_tasks(tasks, workers, finished, cluster)
    sys.stderr.write("\n")
    scores = [rows[i]["score"] for i in range(games)]
    w = sum(1 for x in scores if x == 1.0)
    d = sum(1 for x in scores if x == 0.5)
    lo = sum(1 for x in scores if x == 0.0)
    n = max(1, games)
    return {"games": games, "wins": w, "draws": d, "losses": lo,
            "score": round((w + 0.5 * d) / n, 4), "elo": elo_interval(w, d, lo).as_dict(),
            "iterations": iterations}


def gate_decision(wins: float, draws: float, losses: float,
                  threshold: float = 0.55) -> tuple[float, bool]:
    """The candidate's score (draws count half) and whether it replaces the best (score >=
    threshold; the seed's 55%).  No games: not accepted."""
    n = wins + draws + losses
    if n <= 0:
        return 0.0, False
    score = (wins + 0.5 * draws) / n
    # a float sum such as 11/20 must not fall just below 0.55
    return score, score >= threshold - 1e-12


def _run_task(task: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    kind, kw = task
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if kind == "selfplay":
        out = play_selfplay_game(kw["net"], SelfPlayConfig(**kw["cfg"]), kw["seed"])
    else:
        out = play_gate_game(**kw["args"])
    out["index"] = kw["index"]
    return out


def run_tasks(tasks: list[tuple[str, dict[str, Any]]], workers: int,
              on_done: Callable[[dict[str, Any]], None], cluster: str | None = None) -> None:
    """Run games in up to ``MAX_WORKERS`` spawned processes, or on every worker of the Dask
    scheduler at ``cluster``; ``on_done`` sees each result as it arrives (in the parent, so it
    may write files)."""
    workers = max(1, min(workers, MAX_WORKERS, len(tasks)))
    if not tasks:
        return
    if cluster is not None:
        from clients.match.cluster import run_cluster

        run_cluster([(None, _absolute(t)) for t in tasks], cluster,
                    lambda _, out: on_done(out), lambda _: False, work=_run_task)
        return
    if workers == 1:
        for t in tasks:
            on_done(_run_task(t))
        return
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init_worker) as pool:
        for res in pool.imap_unordered(_run_task, tasks):
            on_done(res)


def _absolute(task: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The task with its network paths absolute: a worker's directory is not ours."""
    kind, kw = task
    if kind == "selfplay":
        return kind, {**kw, "net": str(Path(kw["net"]).resolve())}
    args = {**kw["args"], "cand": str(Path(kw["args"]["cand"]).resolve()),
            "best": str(Path(kw["args"]["best"]).resolve())}
    return kind, {**kw, "args": args}


def _init_worker() -> None:
    # one thread per worker process: two workers fill the two cores
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is not needed to play
        pass


def save_game(path: Path, game: dict[str, Any]) -> None:
    """One finished game, atomically (a resumed run trusts every file it finds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    arrays = {k: np.asarray(v) for k, v in game.items()}
    cast(Any, np.savez)(tmp, **arrays)
    tmp.replace(path)


def load_game(path: Path) -> dict[str, Any]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill: that game is played again
            continue
    return rows


__all__ = ["MAX_WORKERS", "SelfPlayConfig", "agent_spec", "append_jsonl", "game_samples",
           "gate_decision", "load_game", "match", "play_gate_game", "play_selfplay_game",
           "read_jsonl", "run_tasks", "save_game"]

"""Tournaments: the schedule, parallel games, the journal (resume), results and plots.

Files in the output directory:

* ``match.json``   what defines the match (players, rules, time control, openings, seed); a
  second run with the same definition resumes, a different one is refused;
* ``journal.jsonl`` one line per finished game (the dict :func:`referee.play_game` returns),
  appended and fsynced as each game ends: the only source of truth when resuming;
* ``games.ggf``    every game as a GGF record, one per line, rebuilt from the journal;
* ``results.json`` the results table (machine-readable), ``score_matrix.png`` and ``elo.png``.

A game is identified by (pairing, opening index, colour swap, round); resuming plays exactly the
scheduled games the journal does not hold, so no finished game is lost or played twice.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import multiprocessing
import multiprocessing.util
import os
import random
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from engine_server.log import get_logger

from . import elo as E
from . import openings as O
from .players import PlayerSpec, TimeControl
from .referee import GameTask, close_process_players, derive_seed, play_game

log = get_logger("match.tournament")

FORMATS = ("round-robin", "gauntlet")


class MatchError(RuntimeError):
    """A match that cannot run as asked (bad players, a directory holding another match)."""


@dataclass
class MatchConfig:
    players: list[str]
    out: Path
    games: int = 2                      # per pairing, both colours together
    format: str = "round-robin"
    rules: str = "standard"
    tc: TimeControl = field(default_factory=TimeControl)
    openings: str = "builtin"           # "builtin", "start" or a file
    seed: int = 1
    swap: bool = True                   # each opening twice, colours swapped
    sprt: E.Sprt | None = None
    event: str = "othello-match"

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.format not in FORMATS:
            raise MatchError(f"unknown format {self.format!r}; accepted: {', '.join(FORMATS)}")
        if len(self.players) < 2:
            raise MatchError("a match needs at least two players")
        if self.games < 1:
            raise MatchError("--games must be at least 1")
        if self.sprt is not None and len(self.players) != 2:
            raise MatchError("--sprt is for two-player matches")

    def specs(self) -> list[PlayerSpec]:
        try:
            return [PlayerSpec.parse(p) for p in self.players]
        except ValueError as e:
            raise MatchError(str(e)) from None

    def identity(self) -> dict:
        """Everything that decides which games exist and how they are played."""
        return {"players": list(self.players), "format": self.format, "rules": self.rules,
                "tc": self.tc.as_dict(), "openings": self.openings, "seed": self.seed,
                "swap": self.swap, "event": self.event}


def labels(specs: list[PlayerSpec]) -> list[str]:
    out: list[str] = []
    for s in specs:
        name, k = s.name, 2
        while name in out:
            name = f"{s.name}#{k}"
            k += 1
        out.append(name)
    return out


def pairings(n: int, fmt: str) -> list[tuple[int, int]]:
    if fmt == "gauntlet":
        return [(0, j) for j in range(1, n)]
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def schedule(config: MatchConfig) -> list[GameTask]:
    """All games of the match, interleaved over pairings so that partial results stay balanced.

    Game ``g`` of a pairing (a, b) plays opening ``order[g // 2]`` (``order[g]`` without colour
    swap) with a black when ``g`` is even; openings are taken in a seeded order and repeat in
    further rounds when there are fewer openings than game pairs.
    """
    specs = config.specs()
    names = labels(specs)
    book = O.load(config.openings)
    order = list(range(len(book)))
    random.Random(derive_seed("openings", config.seed)).shuffle(order)
    per_pair = 2 if config.swap else 1
    tasks: list[GameTask] = []
    pairs = pairings(len(specs), config.format)
    for g in range(config.games):
        slot, swap = divmod(g, per_pair)
        opening = book[order[slot % len(book)]]
        rnd = slot // len(book)
        for a, b in pairs:
            black, white = (a, b) if swap == 0 else (b, a)
            pairing = f"{names[a]} vs {names[b]}"
            key = f"{pairing}|o{opening.index}|s{swap}|r{rnd}"
            tasks.append(GameTask(
                key=key, pairing=pairing, opening_index=opening.index, opening=opening.moves,
                swap=swap, round=rnd, black=specs[black].text, white=specs[white].text,
                black_label=names[black], white_label=names[white], rules=config.rules,
                tc=config.tc, seed=derive_seed(config.seed, key), event=config.event))
    return tasks


# --- journal ---------------------------------------------------------------------------------------

class Journal:
    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.path = self.dir / "journal.jsonl"
        self.ggf_path = self.dir / "games.ggf"

    def load(self) -> list[dict]:
        """Finished games in journal order.  A line cut short by a kill is dropped (and cut from
        the file, so the next append starts on a fresh line); a key seen twice counts once."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records, seen = [], set()
        good_end = 0
        pos = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            line = data[pos:nl]
            pos = nl + 1
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("journal_bad_line", path=str(self.path), offset=pos)
                continue
            good_end = pos
            if rec.get("key") in seen:
                continue
            seen.add(rec.get("key"))
            records.append(rec)
        if good_end < len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
        return records

    def append(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        with open(self.ggf_path, "a", encoding="utf-8") as f:
            f.write(record["ggf"] + "\n")

    def rebuild_ggf(self, records: list[dict]) -> None:
        tmp = self.ggf_path.with_suffix(".ggf.tmp")
        tmp.write_text("".join(r["ggf"] + "\n" for r in records), encoding="utf-8")
        tmp.replace(self.ggf_path)


def prepare_dir(config: MatchConfig) -> Journal:
    config.out.mkdir(parents=True, exist_ok=True)
    ident = config.identity()
    meta = config.out / "match.json"
    if meta.exists():
        old = json.loads(meta.read_text())
        if old.get("identity") != ident:
            raise MatchError(f"{config.out} holds a different match ({meta}); give another --out "
                             "or the same arguments as before")
    else:
        meta.write_text(json.dumps({"identity": ident}, indent=2) + "\n")
    return Journal(config.out)


# --- progress ----------------------------------------------------------------------------------------

class Progress:
    """A one-line bar on stderr (redrawn on a terminal, a line every few seconds otherwise)."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.tally = [0, 0, 0]
        self.tallied = False

    def update(self, record: dict | None, first_label: str | None = None) -> None:
        self.done += 1
        if record is not None and first_label in (record["black"], record["white"]):
            self.tallied = True
            if record["winner"] is None:
                self.tally[1] += 1
            elif record[record["winner"]] == first_label:
                self.tally[0] += 1
            else:
                self.tally[2] += 1
        now = time.monotonic()
        if not self.enabled or (not self.tty and now - self.last < 5.0 and
                                self.done < self.total):
            return
        self.last = now
        width = 30
        filled = int(width * self.done / self.total)
        rate = self.done / max(now - self.t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else math.inf
        w, d, l = self.tally
        tally = f"  first player +{w} ={d} -{l}" if self.tallied else ""
        text = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} games"
                f"{tally}  {rate * 60:.1f}/min  eta {_fmt_secs(eta)}")
        self.stream.write(("\r" + text) if self.tty else (text + "\n"))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _fmt_secs(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


# --- running -----------------------------------------------------------------------------------------

def _worker_init() -> None:
    # Ctrl-C reaches the whole process group; only the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_term(signum, frame):
        close_process_players(kill=True)
        os._exit(1)

    signal.signal(signal.SIGTERM, on_term)
    multiprocessing.util.Finalize(None, close_process_players, exitpriority=100)


def _run_task(task: GameTask) -> dict:
    try:
        return play_game(task)
    except Exception as e:
        return {"key": task.key, "internal_error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()}


@dataclass
class _Match:
    config: MatchConfig
    journal: Journal
    records: list[dict]
    pending: list[GameTask]
    first_label: str
    stopped: str | None = None  # why no more games are started (SPRT)

    def sprt_status(self) -> str | None:
        if self.config.sprt is None:
            return None
        w, d, l = _tally(self.records, self.first_label)
        return self.config.sprt.status(w, d, l)


def _tally(records: list[dict], label: str) -> tuple[int, int, int]:
    w = d = l = 0
    for r in records:
        if label not in (r["black"], r["white"]):
            continue
        if r["winner"] is None:
            d += 1
        elif r[r["winner"]] == label:
            w += 1
        else:
            l += 1
    return w, d, l


def run_matches(configs: list[MatchConfig], concurrency: int | None = None,
                max_games: int | None = None, progress: bool = True,
                plots: bool = True) -> list[dict]:
    """Play every scheduled game not yet in the journals (at most ``max_games`` of them in this
    run), ``concurrency`` at a time, then write each match's results.  Returns the results."""
    matches: list[_Match] = []
    for config in configs:
        journal = prepare_dir(config)
        records = journal.load()
        journal.rebuild_ggf(records)
        done = {r["key"] for r in records}
        tasks = schedule(config)
        pending = [t for t in tasks if t.key not in done]
        first = labels(config.specs())[0]
        m = _Match(config, journal, records, pending, first)
        if m.sprt_status() in ("H0", "H1"):
            m.stopped = f"SPRT accepted {m.sprt_status()}"
            m.pending = []
        matches.append(m)
    queue: list[tuple[_Match, GameTask]] = []
    longest = max((len(m.pending) for m in matches), default=0)
    for i in range(longest):  # interleave matches so that each makes progress
        for m in matches:
            if i < len(m.pending):
                queue.append((m, m.pending[i]))
    if max_games is not None:
        queue = queue[:max_games]
    bar = Progress(len(queue), progress)

    def finish(m: _Match, rec: dict) -> None:
        if "internal_error" in rec:
            log.error("game_failed", game=rec["key"], error=rec["internal_error"],
                      traceback=rec.get("traceback", ""))
            bar.update(None)
            return
        m.journal.append(rec)
        m.records.append(rec)
        bar.update(rec, m.first_label if len(matches) == 1 else None)
        status = m.sprt_status()
        if status in ("H0", "H1") and m.stopped is None:
            m.stopped = f"SPRT accepted {status}"
            log.info("sprt_stop", match=str(m.config.out), status=status)

    workers = max(1, concurrency or os.cpu_count() or 1)
    try:
        if workers == 1 or len(queue) <= 1:
            for m, task in queue:
                if m.stopped:
                    continue
                finish(m, _run_task(task))
        else:
            _run_pool(queue, workers, finish)
    finally:
        bar.close()
        if workers == 1 or len(queue) <= 1:
            close_process_players()
    out = []
    for m in matches:
        m.journal.rebuild_ggf(m.records)
        results = summarize(m.config, m.records, len(schedule(m.config)), m.stopped)
        write_results(m.config, results, plots)
        out.append(results)
    return out


def _run_pool(queue, workers, finish) -> None:
    ctx = multiprocessing.get_context("spawn")
    todo = list(queue)
    restarts = 0
    while todo:
        pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx,
                                      initializer=_worker_init)
        inflight: dict[cf.Future, tuple] = {}
        broken: list[tuple] = []
        try:
            while (todo or inflight) and not broken:
                while todo and len(inflight) < 2 * workers:
                    m, task = todo[0]
                    if m.stopped:
                        todo.pop(0)
                        continue
                    try:
                        fut = pool.submit(_run_task, task)
                    except cf.process.BrokenProcessPool:
                        broken.append(todo.pop(0))
                        break
                    inflight[fut] = todo.pop(0)
                if not inflight:
                    break
                done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    m, task = inflight.pop(fut)
                    try:
                        rec = fut.result()
                    except cf.process.BrokenProcessPool:
                        broken.append((m, task))
                        continue
                    finish(m, rec)
        except BaseException:
            _terminate(pool)
            raise
        if broken:
            # A worker died (a native crash in an in-process agent): replay what the pool held.
            restarts += 1
            log.error("worker_died", restarts=restarts, games=[t.key for _, t in broken])
            todo = broken + list(inflight.values()) + todo
            _terminate(pool)
            if restarts > 3:
                raise MatchError("worker processes keep dying; see the log")
            continue
        pool.shutdown(wait=True)


def _terminate(pool: cf.ProcessPoolExecutor) -> None:
    """Stop at once: running games are abandoned (they are not in the journal, so a resumed run
    plays them again); the workers kill their engines on SIGTERM."""
    procs = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            p.terminate()
        except Exception:
            pass
    for p in procs:
        p.join(5)


def run_match(config: MatchConfig, concurrency: int | None = None,
              max_games: int | None = None, progress: bool = True,
              plots: bool = True) -> dict:
    return run_matches([config], concurrency, max_games, progress, plots)[0]


# --- results -----------------------------------------------------------------------------------------

def _player_view(rec: dict, label: str) -> tuple[str, int | None]:
    """('win'|'draw'|'loss', disc margin from this player's side or None)."""
    color = "black" if rec["black"] == label else "white"
    margin = rec["black_score"]
    if margin is not None and color == "white":
        margin = -margin
    if rec["winner"] is None:
        return "draw", margin
    return ("win" if rec["winner"] == color else "loss"), margin


def summarize(config: MatchConfig, records: list[dict], scheduled: int,
              stopped: str | None = None) -> dict:
    specs = config.specs()
    names = labels(specs)
    per = {n: {"name": n, "spec": s.text, "games": 0, "wins": 0, "draws": 0, "losses": 0,
               "margin_sum": 0.0, "margin_games": 0, "time_losses": 0, "forfeits": {},
               "wins_by_forfeit": 0, "as_black": [0, 0, 0], "as_white": [0, 0, 0],
               "move_time": 0.0, "moves": 0, "playouts": 0, "searched": 0}
           for n, s in zip(names, specs)}
    pair_res: dict[tuple[str, str], list[int]] = {}
    for a, b in pairings(len(names), config.format):
        pair_res[(names[a], names[b])] = [0, 0, 0]
    colors = {"black": 0, "white": 0, "draw": 0}
    reasons: dict[str, int] = {}
    for rec in records:
        colors[rec["winner"] or "draw"] += 1
        reasons[rec["reason"]] = reasons.get(rec["reason"], 0) + 1
        for color in ("black", "white"):
            label = rec[color]
            if label not in per:
                continue
            p = per[label]
            outcome, margin = _player_view(rec, label)
            p["games"] += 1
            idx = {"win": 0, "draw": 1, "loss": 2}[outcome]
            p[{"win": "wins", "draw": "draws", "loss": "losses"}[outcome]] += 1
            p["as_" + color][idx] += 1
            if margin is not None:
                p["margin_sum"] += margin
                p["margin_games"] += 1
            if rec["loser"] == color:
                p["forfeits"][rec["reason"]] = p["forfeits"].get(rec["reason"], 0) + 1
                if rec["reason"] == "timeout":
                    p["time_losses"] += 1
            elif rec["loser"] is not None:
                p["wins_by_forfeit"] += 1
            st = rec["stats"][color]
            p["move_time"] += st["time"]
            p["moves"] += st["moves"]
            p["playouts"] += st["playouts"]
            p["searched"] += st["searched"]
        a, _, b = rec["pairing"].partition(" vs ")
        if (a, b) in pair_res:
            outcome, _ = _player_view(rec, a)
            pair_res[(a, b)][{"win": 0, "draw": 1, "loss": 2}[outcome]] += 1
    anchor = names[0] if config.format == "gauntlet" else None
    ratings = {r.name: r for r in E.bradley_terry(
        names, {k: tuple(v) for k, v in pair_res.items()}, anchor=anchor)}
    players = []
    for n in names:
        p = per[n]
        g = p["games"]
        iv = ratings[n].interval
        players.append({
            "name": n, "spec": p["spec"], "games": g, "wins": p["wins"], "draws": p["draws"],
            "losses": p["losses"],
            "score": round((p["wins"] + 0.5 * p["draws"]) / g, 4) if g else None,
            # + 0.0 turns a rounded -0.0 into 0.0 for the table
            "elo": round(iv.elo, 1) + 0.0 if g else None,
            "elo_low": round(iv.low, 1) + 0.0 if g else None,
            "elo_high": round(iv.high, 1) + 0.0 if g else None,
            "margin": round(p["margin_sum"] / p["margin_games"], 2) if p["margin_games"] else None,
            "time_losses": p["time_losses"], "forfeits": p["forfeits"],
            "wins_by_forfeit": p["wins_by_forfeit"],
            "as_black": dict(zip(("wins", "draws", "losses"), p["as_black"])),
            "as_white": dict(zip(("wins", "draws", "losses"), p["as_white"])),
            "mean_move_time": round(p["move_time"] / p["moves"], 4) if p["moves"] else None,
            "mean_playouts": round(p["playouts"] / p["searched"], 1) if p["searched"] else None,
        })
    pairs = []
    for (a, b), (w, d, l) in pair_res.items():
        n = w + d + l
        iv = E.elo_interval(w, d, l)
        pairs.append({"a": a, "b": b, "games": n, "wins": w, "draws": d, "losses": l,
                      "score": round((w + 0.5 * d) / n, 4) if n else None,
                      "elo": iv.as_dict(), "los": round(E.likelihood_of_superiority(w, l), 4)})
    matrix = [[None] * len(names) for _ in names]
    for pr in pairs:
        if pr["games"]:
            i, j = names.index(pr["a"]), names.index(pr["b"])
            matrix[i][j] = pr["score"]
            matrix[j][i] = round(1.0 - pr["score"], 4)
    sprt = None
    if config.sprt is not None:
        w, d, l = _tally(records, names[0])
        s = config.sprt
        sprt = {"elo0": s.elo0, "elo1": s.elo1, "alpha": s.alpha, "beta": s.beta,
                "llr": round(s.llr(w, d, l), 4), "lower": round(s.lower, 4),
                "upper": round(s.upper, 4), "status": s.status(w, d, l)}
    starts = [r["started"] for r in records]
    ends = [r["started"] + r["duration"] for r in records]
    return {
        "match": config.identity(), "format": config.format, "games_played": len(records),
        # wall time from the first game's start to the last one's end (resumed runs included)
        "wall_seconds": round(max(ends) - min(starts), 1) if records else 0.0,
        "first_start": min(starts) if records else None,
        "last_end": max(ends) if records else None,
        "game_seconds": round(sum(r["duration"] for r in records), 1),
        "games_scheduled": scheduled, "complete": len(records) >= scheduled or bool(stopped),
        "stopped": stopped, "players": players, "pairings": pairs,
        "matrix": {"names": names, "score": matrix}, "colors": colors, "reasons": reasons,
        "rating_anchor": anchor or "mean", "sprt": sprt,
    }


def format_table(results: dict) -> str:
    players = sorted(results["players"], key=lambda p: -(p["elo"] if p["elo"] is not None
                                                        else -1e9))
    width = max(8, max(len(p["name"]) for p in players))
    lines = [f"{results['games_played']}/{results['games_scheduled']} games, "
             f"{results['format']}, {results['match']['rules']} rules; Elo relative to "
             f"{results['rating_anchor']} (95% interval)"]
    head = (f"{'player':<{width}}  games     W     D     L  score%      Elo     95% interval"
            f"   margin  time-losses  other forfeits")
    lines += [head, "-" * len(head)]
    for p in players:
        if not p["games"]:
            lines.append(f"{p['name']:<{width}}  {0:>5}")
            continue
        other = {k: v for k, v in p["forfeits"].items() if k != "timeout"}
        other_text = ", ".join(f"{k} {v}" for k, v in sorted(other.items())) or "-"
        margin = f"{p['margin']:+7.2f}" if p["margin"] is not None else "      -"
        lines.append(
            f"{p['name']:<{width}}  {p['games']:>5} {p['wins']:>5} {p['draws']:>5} "
            f"{p['losses']:>5}  {100 * p['score']:6.1f}  {p['elo']:+7.1f}  "
            f"[{p['elo_low']:+7.1f}, {p['elo_high']:+7.1f}]  {margin}  {p['time_losses']:>11}"
            f"  {other_text}")
    lines.append("")
    lines.append("pairings (first player's view):")
    for pr in results["pairings"]:
        if not pr["games"]:
            continue
        e = pr["elo"]
        elo_text = (f"{e['elo']:+.1f} [{_num(e['low'], '-inf')}, {_num(e['high'], '+inf')}]"
                    if e["elo"] is not None else "unbounded (one side scored every point)")
        lines.append(f"  {pr['a']} vs {pr['b']}: +{pr['wins']} ={pr['draws']} -{pr['losses']}"
                     f"  score {100 * pr['score']:.1f}%  Elo {elo_text}  LOS {pr['los']:.3f}")
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


def write_results(config: MatchConfig, results: dict, plots: bool = True) -> list[Path]:
    path = config.out / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(path)
    written = [path]
    if plots:
        from .plots import write_match_plots

        written += write_match_plots(results, config.out)
    return written

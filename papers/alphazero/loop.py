"""The AlphaGo Zero loop (Alphello Zero), scaled to two CPU cores.

Generation ``g`` (1, 2, ...):

1. self-play: ``games_per_gen`` games of the *best* network (PUCT with root noise);
2. training: the *trained* network (it keeps learning whether or not its last version passed
   the gate, as in AlphaGo Zero) takes ``steps`` steps on the replay buffer, the self-play of
   the last ``buffer_gens`` generations, with the seed's loss;
3. gate: the trained network (the candidate) plays ``gate_games`` games against the best from
   balanced openings, colours swapped; it becomes the best when it scores >= 55% (draws count
   half).

Everything lives in ``work``: ``nets/gen{g}.onnx``, ``selfplay/gen{g}/game{i}.npz`` (one file
per finished game), ``gates/gen{g}.jsonl`` (one line per finished gate game), the trainer's
``checkpoint.pt`` (with the replay-buffer index) and ``state.json`` (generations so far, the
best network).  A killed run started again with the same command continues where it stopped:
finished games are kept, the rest replayed with the same seeds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from clients.match.elo import elo_from_score

from . import data, export, plots, selfplay
from .model import NetConfig, set_memory_format
from .train import TrainConfig, Trainer


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def finite_elo(gate: dict[str, Any]) -> float:
    """The gate's Elo, with a clean sweep counted as half a game short of it (a point estimate
    of +-infinity would end the Elo-by-generation chain)."""
    n = gate["wins"] + gate["draws"] + gate["losses"]
    if n == 0:
        return 0.0
    score = (gate["wins"] + 0.5 * gate["draws"]) / n
    score = min(max(score, 0.5 / n), 1 - 0.5 / n)
    return float(elo_from_score(score))


class Loop:
    def __init__(self, work: Path, net_cfg: NetConfig, train_cfg: TrainConfig,
                 sp: selfplay.SelfPlayConfig, games_per_gen: int, gate_games: int,
                 gate_iterations: int, threshold: float, buffer_gens: int, workers: int,
                 steps_per_gen: int, init: Path | None = None, command: str = "",
                 wthor: Path | None = None, cluster: str | None = None) -> None:
        self.work = Path(work)
        self.cluster = cluster  # a Dask scheduler for self-play and gate games (None: local)
        self.steps_per_gen = steps_per_gen
        self.wthor = wthor
        self._wthor_rows: tuple[data.Samples, np.ndarray] | None = None
        self.net_cfg, self.train_cfg, self.sp = net_cfg, train_cfg, sp
        self.games_per_gen, self.gate_games = games_per_gen, gate_games
        self.gate_iterations, self.threshold = gate_iterations, threshold
        self.buffer_gens, self.workers = buffer_gens, workers
        self.command = command
        self.state_path = self.work / "state.json"
        self.state: dict[str, Any] = {"generations": [], "best": None, "best_gen": 0,
                                      "best_elo": 0.0}
        if self.state_path.is_file():
            self.state = json.loads(self.state_path.read_text())
        self.trainer = Trainer(net_cfg, train_cfg, self.work / "train")
        if self.trainer.load():
            _log(f"resumed the trainer at step {self.trainer.step}")
        elif init is not None:
            self.trainer.load_weights(init)
            _log(f"network initialised from {init}")

    # --- bookkeeping ---------------------------------------------------------------------
    def save_state(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1) + "\n")
        tmp.replace(self.state_path)

    def net_path(self, gen: int) -> Path:
        return self.work / "nets" / f"gen{gen}.onnx"

    def export_current(self, gen: int) -> Path:
        import torch

        path = self.net_path(gen)
        net = set_memory_format(self.trainer.net, torch.contiguous_format)
        meta = {"command": self.command, "generation": gen, "step": self.trainer.step,
                "data": "self-play (AlphaGo Zero loop)"}
        export.export(net, path, self.sp.rules, meta)
        set_memory_format(self.trainer.net, torch.channels_last)
        return path

    def wthor_figures(self, net: Path) -> dict[str, Any] | None:
        """Expert-move top-1 and result MSE of ``net`` on 20,000 held-out WTHOR positions: a
        yardstick of the loop's progress that does not depend on the gates."""
        if self.wthor is None or self.sp.rules != "standard" or not self.wthor.exists():
            return None
        from .train import evaluate, onnx_predictor

        if self._wthor_rows is None:
            cache = None if self.wthor.is_file() else Path("build/az/wthor-all.npz")
            s, _ = data.wthor_samples(self.wthor, None, cache)
            _, test = data.split(s)
            pick = np.random.default_rng([self.train_cfg.seed, 99])
            rows = np.sort(pick.choice(test, min(20000, len(test)), replace=False))
            self._wthor_rows = (s, rows)
        s, rows = self._wthor_rows
        f = evaluate(onnx_predictor(net), s, rows, self.net_cfg.legal)
        return {"top1": f["top1"], "policy_loss": f["policy_loss"], "value_mse": f["value_mse"]}

    # --- the phases ----------------------------------------------------------------------
    def selfplay(self, gen: int, best: Path) -> list[dict[str, Any]]:
        d = self.work / "selfplay" / f"gen{gen}"
        done = {int(p.stem[4:]) for p in d.glob("game*.npz")} if d.is_dir() else set()
        todo = [i for i in range(self.games_per_gen) if i not in done]
        t0 = time.monotonic()
        cfg = asdict(self.sp)
        tasks = [("selfplay", {"net": str(best), "cfg": cfg, "index": i,
                               "seed": self.train_cfg.seed * 1_000_003 + gen * 10_007 + i})
                 for i in todo]
        count = [len(done)]

        def finished(g: dict[str, Any]) -> None:
            selfplay.save_game(d / f"game{g['index']}.npz", g)
            count[0] += 1
            sys.stderr.write(f"\rgeneration {gen} self-play: {count[0]}/{self.games_per_gen} "
                             f"games, {time.monotonic() - t0:.0f} s ")
            sys.stderr.flush()

        selfplay.run_tasks(tasks, self.workers, finished, self.cluster)
        sys.stderr.write("\n")
        return [selfplay.load_game(d / f"game{i}.npz") for i in range(self.games_per_gen)]

    def buffer(self, gen: int) -> tuple[data.Samples, list[int]]:
        gens = list(range(max(1, gen - self.buffer_gens + 1), gen + 1))
        parts = []
        for g in gens:
            d = self.work / "selfplay" / f"gen{g}"
            games = [selfplay.load_game(d / f"game{i}.npz") for i in range(self.games_per_gen)]
            parts.append(selfplay.game_samples(games, [g * 100_000 + i
                                                       for i in range(len(games))]))
        s = parts[0] if len(parts) == 1 else data.Samples(*(np.concatenate(
            [getattr(p, k) for p in parts]) for k in
            ("P", "O", "black", "move", "value", "game", "empties", "pi")))
        return s, gens

    def gate(self, gen: int, cand: Path, best: Path) -> dict[str, Any]:
        res = selfplay.match(cand, best, self.gate_games, self.gate_iterations, self.sp.rules,
                             self.workers, self.train_cfg.seed,
                             self.work / "gates" / f"gen{gen}.jsonl",
                             f"generation {gen} gate", self.sp.memory_mib, self.cluster)
        score, accepted = selfplay.gate_decision(res["wins"], res["draws"], res["losses"],
                                                 self.threshold)
        return {"wins": res["wins"], "draws": res["draws"], "losses": res["losses"],
                "score": round(score, 4), "accepted": accepted, "threshold": self.threshold,
                "elo": res["elo"]}

    def run(self, generations: int) -> None:
        st = self.state
        if st["best"] is None:
            p = self.export_current(0)
            st["best"], st["best_gen"] = str(p), 0
            st["config"] = {"net": self.net_cfg.as_dict(), "train": asdict(self.train_cfg),
                            "selfplay": asdict(self.sp), "games_per_gen": self.games_per_gen,
                            "gate_games": self.gate_games,
                            "gate_iterations": self.gate_iterations,
                            "threshold": self.threshold, "buffer_gens": self.buffer_gens,
                            "steps_per_gen": self.steps_per_gen, "command": self.command,
                            "wthor_heldout_gen0": self.wthor_figures(p)}
            self.save_state()
        for gen in range(len(st["generations"]) + 1, generations + 1):
            t0 = time.monotonic()
            best = Path(st["best"])
            _log(f"generation {gen}: self-play with {best.name}")
            games = self.selfplay(gen, best)
            t_sp = time.monotonic() - t0
            s, gens = self.buffer(gen)
            train_idx, test_idx = data.split(s)
            self.trainer.extra["buffer"] = {"generations": gens, "positions": len(s)}
            target = gen * self.steps_per_gen
            t1 = time.monotonic()
            if self.trainer.step < target:
                self.trainer.fit(s, train_idx, test_idx, steps=target,
                                 what=f"generation {gen} training")
            t_tr = time.monotonic() - t1
            cand = self.export_current(gen)
            t2 = time.monotonic()
            gate = self.gate(gen, cand, best)
            t_gate = time.monotonic() - t2
            if gate["accepted"]:
                st["best"], st["best_gen"] = str(cand), gen
                st["best_elo"] = st["best_elo"] + finite_elo(gate)
            last: dict[str, Any] = next((r for r in reversed(self.trainer.history)
                                         if "test_policy_loss" in r), {})
            black = [float(np.sign(g["black_score"])) for g in games]
            row = {"generation": gen, "selfplay_games": len(games),
                   "selfplay_positions": int(sum(len(g["P"]) for g in games)),
                   "selfplay_black_score": round(float(np.mean(black)), 3),
                   "buffer": self.trainer.extra["buffer"], "step": self.trainer.step,
                   "train": {k: v for k, v in last.items() if k.startswith(("train_", "test_"))},
                   "gate": gate, "best_gen": st["best_gen"], "best_elo": round(st["best_elo"], 1),
                   "wthor_heldout": self.wthor_figures(cand),
                   "seconds": {"selfplay": round(t_sp, 1), "train": round(t_tr, 1),
                               "gate": round(t_gate, 1)}}
            st["generations"].append(row)
            self.save_state()
            _log(json.dumps(row))
        best = Path(st["best"])
        shutil.copyfile(best, self.work / "best.onnx")


def main(args: argparse.Namespace, command: str, net_cfg: NetConfig,
         train_cfg: TrainConfig) -> int:
    """The loop as ``othello-train az loop`` configured it (the command line builds the net
    and training configurations, so this module needs nothing from it)."""
    tc = train_cfg
    # a constant rate by default: the loop has no end to anneal towards
    total = args.generations * args.steps
    tc = TrainConfig(**{**asdict(tc), "steps": total,
                        "lr_end": args.lr if args.lr_end is None else args.lr_end,
                        "eval_every": min(args.eval_every, args.steps),
                        "checkpoint_every": min(args.checkpoint_every, args.steps)})
    sp = selfplay.SelfPlayConfig(iterations=args.iterations, temp_moves=args.temp_moves,
                                 noise=args.noise, noise_alpha=args.noise_alpha, rules=args.rules)
    loop = Loop(args.work, net_cfg, tc, sp, args.games_per_gen, args.gate_games,
                args.gate_iterations or args.iterations, args.gate_threshold, args.buffer_gens,
                args.workers, args.steps, args.init, command,
                None if args.no_wthor_eval else args.wthor, args.cluster)
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "command.txt").write_text(command + "\n")
    loop.run(args.generations)
    st = loop.state
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(st["best"], args.out)
        _log(f"wrote {args.out} (generation {st['best_gen']})")
    if args.plot is not None:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        args.plot.with_suffix(".json").write_text(json.dumps(
            {"command": command, "generations": st["generations"],
             "best_gen": st["best_gen"]}, indent=1) + "\n")
        title = f"AlphaGo Zero loop, {args.rules} rules, {args.blocks}x{args.filters}"
        plots.losses(loop.trainer.history, args.plot.with_name(args.plot.stem + "-loss.png"),
                     title)
        plots.elo_by_generation(st["generations"],
                                args.plot.with_name(args.plot.stem + "-elo.png"), title)
    return 0


__all__ = ["Loop", "main"]

"""Training the network: supervised on expert games, and the AlphaGo Zero loss on self-play.

Loss per position: ``value_weight * (z - v)^2 - pi . log p`` plus ``c |theta|^2`` through SGD's
weight decay (``weight_decay = 2c``), the seed's loss; a supervised target ``pi`` is the
expert's move, one-hot.

A run lives in one directory: ``checkpoint.pt`` (model, optimizer, step, RNG states, the history
and whatever the caller keeps there, e.g. the loop's replay-buffer index) is replaced atomically
every ``checkpoint_every`` steps and at the end, ``log.jsonl`` gets one JSON object per report.
The data order depends on (seed, step) only, so a run killed at any point and resumed from its
last checkpoint continues with the very batches it would have seen.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from engine_server.eval import planes

from . import data
from .model import AZNet, NetConfig, build, set_memory_format

CHECKPOINT = "checkpoint.pt"
LOG = "log.jsonl"
# plies 0-14, 15-29, 30-44, 45-60 (by empties: 60-46, 45-31, 30-16, 15-0)
PHASES = ((46, 60, "plies 0-14"), (31, 45, "plies 15-29"), (16, 30, "plies 30-44"),
          (0, 15, "plies 45-60"))


@dataclass
class TrainConfig:
    steps: int = 1000
    batch: int = 256
    lr: float = 0.05
    lr_end: float = 0.0005
    warmup: int = 200
    momentum: float = 0.9
    weight_decay: float = 1e-4         # = 2c of the seed's c |theta|^2
    value_weight: float = 1.0
    seed: int = 1
    bf16: bool = True                  # autocast: 1.7x faster on this CPU (AVX512-BF16)
    threads: int = 1
    eval_every: int = 1000
    eval_positions: int = 20000
    checkpoint_every: int = 500
    symmetries: bool = True

    def lr_at(self, step: int) -> float:
        """Linear warm-up, then cosine from ``lr`` down to ``lr_end``."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        t = min(1.0, (step - self.warmup) / max(1, self.steps - self.warmup))
        return self.lr_end + 0.5 * (self.lr - self.lr_end) * (1 + math.cos(math.pi * t))


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def atomic_save(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    torch.save(obj, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    tmp.replace(path)


class Progress:
    """One line on stderr, rewritten in place (no dependency; training/patterns.py's style)."""

    def __init__(self, total: int, what: str, start: int = 0) -> None:
        self.total, self.what, self.start = max(1, total), what, start
        self.t0 = time.monotonic()
        self.last = 0.0

    def update(self, done: int, note: str = "") -> None:
        t = time.monotonic()
        if t - self.last < 1.0 and done < self.total:
            return
        self.last = t
        rate = (done - self.start) / max(1e-9, t - self.t0)
        left = (self.total - done) / max(rate, 1e-9)
        sys.stderr.write(f"\r{self.what}: {done}/{self.total} {rate:,.1f}/s "
                         f"{left:,.0f} s left {note}  ")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


@dataclass
class Trainer:
    """A network, its optimizer and step, checkpointed in ``workdir``."""

    net_cfg: NetConfig
    cfg: TrainConfig
    workdir: Path
    net: AZNet = field(init=False)
    opt: torch.optim.Optimizer = field(init=False)
    step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    _perm: np.ndarray = field(init=False, repr=False)
    _perm_key: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        torch.set_num_threads(self.cfg.threads)
        seed_everything(self.cfg.seed)
        self.workdir = Path(self.workdir)
        self.net = build(self.net_cfg, self.cfg.seed)
        # channels-last runs the 3x3 convolutions ~7% faster on this CPU
        self.net = set_memory_format(self.net, torch.channels_last)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=self.cfg.lr,
                                   momentum=self.cfg.momentum, nesterov=True,
                                   weight_decay=self.cfg.weight_decay)

    # --- checkpoints ---------------------------------------------------------------------
    @property
    def checkpoint_path(self) -> Path:
        return self.workdir / CHECKPOINT

    def state(self) -> dict[str, Any]:
        return {"net_cfg": self.net_cfg.as_dict(), "cfg": asdict(self.cfg), "step": self.step,
                "model": self.net.state_dict(), "optimizer": self.opt.state_dict(),
                "torch_rng": torch.get_rng_state(), "numpy_rng": np.random.get_state(),
                "python_rng": random.getstate(), "history": self.history,
                "extra": self.extra}

    def save(self) -> Path:
        atomic_save(self.state(), self.checkpoint_path)
        return self.checkpoint_path

    def load(self, path: Path | None = None) -> bool:
        """Resume from the checkpoint (``path`` or the run's own); False when there is none."""
        path = path or self.checkpoint_path
        if not path.is_file():
            return False
        st = torch.load(path, map_location="cpu", weights_only=False)
        if NetConfig(**st["net_cfg"]) != self.net_cfg:
            raise ValueError(f"{path}: network {st['net_cfg']} is not {self.net_cfg.as_dict()}")
        self.net.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        self.step = int(st["step"])
        torch.set_rng_state(st["torch_rng"])
        np.random.set_state(st["numpy_rng"])
        random.setstate(st["python_rng"])
        self.history = list(st["history"])
        self.extra = dict(st["extra"])
        return True

    def load_weights(self, path: Path) -> None:
        """Only the network of another run's checkpoint (a warm start, a new optimizer)."""
        st = torch.load(path, map_location="cpu", weights_only=False)
        self.net.load_state_dict(st["model"])

    def log(self, row: dict[str, Any]) -> None:
        self.history.append(row)
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.workdir / LOG, "a") as f:
            f.write(json.dumps(row) + "\n")

    # --- steps ---------------------------------------------------------------------------
    def losses(self, b: data.Batch) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.from_numpy(b.x).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.cfg.bf16):
            logits, v = self.net(x)
        logits, v = logits.float(), v.float().squeeze(1)
        if b.pi is not None:
            p_loss = -(torch.from_numpy(b.pi) * F.log_softmax(logits, 1)).sum(1).mean()
        else:
            p_loss = F.cross_entropy(logits, torch.from_numpy(b.move))
        v_loss = F.mse_loss(v, torch.from_numpy(b.value))
        return p_loss, v_loss

    def train_step(self, b: data.Batch) -> dict[str, float]:
        self.net.train()
        for g in self.opt.param_groups:
            g["lr"] = self.cfg.lr_at(self.step)
        p_loss, v_loss = self.losses(b)
        loss = p_loss + self.cfg.value_weight * v_loss
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.step += 1
        return {"policy_loss": float(p_loss.detach()), "value_loss": float(v_loss.detach())}

    def batch_rows(self, n: int, step: int) -> np.ndarray:
        """Rows of the training set for ``step``: epoch-wise permutations keyed by the seed."""
        B = self.cfg.batch
        start = step * B
        epoch, off = divmod(start, n)
        out: list[int] = []
        while len(out) < B:
            take = self._permutation(n, epoch)[off:off + B - len(out)]
            out.extend(take.tolist())
            epoch, off = epoch + 1, 0
        return np.asarray(out, np.int64)

    def _permutation(self, n: int, epoch: int) -> np.ndarray:
        key = (n, epoch)
        if self._perm_key != key:
            self._perm = np.random.default_rng([self.cfg.seed, epoch]).permutation(n)
            self._perm_key = key
        return self._perm

    def batch(self, s: data.Samples, rows: np.ndarray, step: int) -> data.Batch:
        rng = np.random.default_rng([self.cfg.seed, step, 7]) if self.cfg.symmetries else None
        return data.make_batch(s, rows, self.net_cfg.legal, rng)

    def fit(self, s: data.Samples, train_idx: np.ndarray, test_idx: np.ndarray | None = None,
            steps: int | None = None, what: str = "train",
            on_eval: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Train up to step ``steps`` (default ``cfg.steps``) on rows ``train_idx`` of ``s``,
        evaluating on ``test_idx`` every ``eval_every`` steps; checkpoints as it goes."""
        end = self.cfg.steps if steps is None else steps
        bar = Progress(end, what, self.step)
        run_p = run_v = 0.0
        k = 0
        t0 = time.monotonic()
        eval_rows = None
        if test_idx is not None and len(test_idx):
            pick = np.random.default_rng([self.cfg.seed, 99])
            m = min(self.cfg.eval_positions, len(test_idx))
            eval_rows = np.sort(pick.choice(test_idx, m, replace=False))
        while self.step < end:
            rows = train_idx[self.batch_rows(len(train_idx), self.step)]
            out = self.train_step(self.batch(s, rows, self.step))
            run_p += out["policy_loss"]
            run_v += out["value_loss"]
            k += 1
            bar.update(self.step, f"policy {run_p / k:.3f} value {run_v / k:.3f}")
            last = self.step == end
            if self.step % self.cfg.eval_every == 0 or last:
                row: dict[str, Any] = {"what": what, "step": self.step,
                                       "lr": round(self.cfg.lr_at(self.step - 1), 6),
                                       "train_policy_loss": round(run_p / k, 4),
                                       "train_value_loss": round(run_v / k, 4),
                                       "seconds": round(time.monotonic() - t0, 1),
                                       "positions_seen": self.step * self.cfg.batch}
                if eval_rows is not None:
                    row.update({f"test_{k2}": v for k2, v in
                                evaluate(self.net, s, eval_rows, self.net_cfg.legal).items()
                                if k2 != "phases"})
                self.log(row)
                bar.close()
                sys.stderr.write(json.dumps(row) + "\n")
                if on_eval is not None:
                    on_eval(row)
                run_p = run_v = 0.0
                k = 0
            if self.step % self.cfg.checkpoint_every == 0 or last:
                self.save()
        bar.close()


def predict(net: AZNet | Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
            x: np.ndarray, batch: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Logits and values, float32, by batches: a torch network or an ONNX ``(x) -> (p, v)``."""
    ps, vs = [], []
    for i in range(0, len(x), batch):
        xb = x[i:i + batch]
        if isinstance(net, torch.nn.Module):
            net.eval()
            with torch.no_grad():
                p, v = net(torch.from_numpy(xb))
            ps.append(p.numpy())
            vs.append(v.numpy()[:, 0])
        else:
            p, v = net(xb)
            ps.append(p)
            vs.append(v[:, 0])
    return np.concatenate(ps), np.concatenate(vs)


def onnx_predictor(path: Path, threads: int = 1
                   ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    from .export import session

    sess = session(path, threads)
    return lambda x: tuple(sess.run([planes.POLICY_NAME, planes.VALUE_NAME],
                                    {planes.INPUT_NAME: x}))


def evaluate(net: AZNet | Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
             s: data.Samples, rows: np.ndarray, legal_plane: bool,
             chunk: int = 8192) -> dict[str, Any]:
    """Held-out figures (no symmetry, float32): policy cross-entropy, top-1 accuracy of the
    target move (argmax over the legal moves, as the engine reads the policy, and over all 65),
    value MSE against the result, the same per game phase, and a constant-predictor baseline
    for the value (the training mean is ~0, so MSE of 0 ~ the targets' second moment)."""
    n = len(rows)
    ce = np.zeros(n)
    hit = np.zeros(n, bool)
    hit_raw = np.zeros(n, bool)
    v_err = np.zeros(n)
    hard = np.zeros(n, bool)
    for i in range(0, n, chunk):
        r = rows[i:i + chunk]
        b = data.make_batch(s, r, legal_plane, None)
        logits, v = predict(net, b.x)
        lp = torch.log_softmax(torch.from_numpy(logits), 1).numpy()
        tgt = b.pi if b.pi is not None else data.one_hot(b.move)
        ce[i:i + len(r)] = -(tgt * lp).sum(1)
        best = tgt.argmax(1)
        masked = np.where(b.legal, logits, -np.inf)
        hit[i:i + len(r)] = masked.argmax(1) == best
        hit_raw[i:i + len(r)] = logits.argmax(1) == best
        v_err[i:i + len(r)] = (v - b.value) ** 2
        # positions with one legal move (or a forced pass) say nothing about the policy
        hard[i:i + len(r)] = b.legal.sum(1) > 1
    emp = s.empties[rows]
    out: dict[str, Any] = {
        "positions": int(n), "policy_loss": round(float(ce.mean()), 4),
        "top1": round(float(hit[hard].mean()), 4) if hard.any() else None,
        "top1_all": round(float(hit.mean()), 4), "top1_raw": round(float(hit_raw.mean()), 4),
        "value_mse": round(float(v_err.mean()), 4),
        "value_mse_const0": round(float(np.mean(s.value[rows].astype(np.float64) ** 2)), 4)}
    phases = []
    for lo, hi, name in PHASES:
        m = (emp >= lo) & (emp <= hi)
        mh = m & hard
        if m.any():
            phases.append({"phase": name, "positions": int(m.sum()),
                           "top1": round(float(hit[mh].mean()), 4) if mh.any() else None,
                           "value_mse": round(float(v_err[m].mean()), 4),
                           "value_mse_const0": round(float(np.mean(
                               s.value[rows][m].astype(np.float64) ** 2)), 4)})
    out["phases"] = phases
    return out


__all__ = ["PHASES", "Progress", "TrainConfig", "Trainer", "atomic_save", "evaluate",
           "onnx_predictor", "predict", "seed_everything"]

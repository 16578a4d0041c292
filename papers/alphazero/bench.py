"""How fast candidate network sizes run on this CPU: ONNX Runtime inference (one thread, batch
1/8/32, what PUCT pays per leaf) and PyTorch training (one thread, what a training budget buys).
``othello-train az bench``; docs/net.md has the figures behind the default size."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from . import export
from .model import NetConfig, build, n_params, set_memory_format


def _median_time(fn: Any, reps: int, rounds: int = 5) -> float:
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        ts.append((time.perf_counter() - t0) / reps)
    return sorted(ts)[rounds // 2]


def inference(cfg: NetConfig, batches: tuple[int, ...] = (1, 8, 32)) -> dict[str, Any]:
    net = build(cfg, 0)
    with tempfile.TemporaryDirectory() as d:
        path = export.export(net, Path(d) / "n.onnx")
        size = os.path.getsize(path)
        sess = export.session(path, threads=1)
        row: dict[str, Any] = {"net": f"{cfg.blocks}x{cfg.filters}", "params": n_params(net),
                               "onnx_mib": round(size / 2**20, 2)}
        for b in batches:
            x = export.sample_planes(b, cfg.legal)
            for _ in range(10):
                sess.run(None, {"planes": x})
            t = _median_time(lambda x=x: sess.run(None, {"planes": x}), max(10, 200 // b))
            row[f"batch{b}_ms"] = round(t * 1e3, 3)
            row[f"batch{b}_pos_per_s"] = round(b / t)
    return row


def training(cfg: NetConfig, batch: int = 256, bf16: bool = True) -> float:
    """Training samples per second, one thread, channels-last, bf16 autocast when asked."""
    net = set_memory_format(build(cfg, 0), torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(batch, cfg.in_planes, 8, 8).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 65, (batch,))
    z = torch.rand(batch) * 2 - 1

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            p, v = net(x)
        loss = torch.nn.functional.cross_entropy(p.float(), y) \
            + ((v.float().squeeze(1) - z) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    return batch / _median_time(step, 5, 3)


def run(sizes: list[tuple[int, int]], legal: bool = True) -> list[dict[str, Any]]:
    torch.set_num_threads(1)
    rows = []
    for b, f in sizes:
        cfg = NetConfig(blocks=b, filters=f, legal=legal)
        row = inference(cfg)
        row["train_samples_per_s_bf16"] = round(training(cfg, bf16=True))
        row["train_samples_per_s_fp32"] = round(training(cfg, bf16=False))
        rows.append(row)
    return rows


__all__ = ["inference", "run", "training"]

"""ONNX export of an :class:`~papers.alphazero.model.AZNet` in the engine's format.

The graph takes ``planes`` ``[N, C, 8, 8]`` (dynamic N) and returns ``policy`` ``[N, 65]`` and
``value`` ``[N, 1]`` (engine_server/eval/planes.py).  Metadata tells the engine how to feed it:
``othello.format`` (the layout version), ``othello.planes`` (C), ``othello.legal`` ("1" when
plane 3 holds the legal moves), ``othello.rules``, ``othello.blocks``, ``othello.filters``, and
``othello.meta``: JSON with the command, data and figures of the run that made it.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine_server.eval import planes

from .model import AZNet

OPSET = 17


def metadata(net: AZNet, rules: str, meta: dict[str, Any]) -> dict[str, str]:
    cfg = net.cfg
    return {"othello.format": planes.FORMAT_VERSION, "othello.planes": str(cfg.in_planes),
            "othello.legal": "1" if cfg.legal else "0", "othello.rules": rules,
            "othello.blocks": str(cfg.blocks), "othello.filters": str(cfg.filters),
            "othello.meta": json.dumps(meta, sort_keys=True)}


def to_onnx_bytes(net: AZNet, rules: str = "standard",
                  meta: dict[str, Any] | None = None) -> bytes:
    import onnx

    was_training = net.training
    net = net.eval()
    dummy = torch.zeros(2, net.cfg.in_planes, 8, 8)
    dyn = {planes.INPUT_NAME: {0: "batch"}, planes.POLICY_NAME: {0: "batch"},
           planes.VALUE_NAME: {0: "batch"}}
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        # the TorchScript exporter (dynamo=False) is deprecated; the dynamo one needs
        # onnxscript, which the project does not install
        warnings.simplefilter("ignore")
        tmp = Path(d) / "net.onnx"
        torch.onnx.export(net, (dummy,), str(tmp), dynamo=False, opset_version=OPSET,
                          input_names=[planes.INPUT_NAME],
                          output_names=[planes.POLICY_NAME, planes.VALUE_NAME],
                          dynamic_axes=dyn, do_constant_folding=True)
        model = onnx.load(str(tmp))
    net.train(was_training)
    for k, v in metadata(net, rules, meta or {}).items():
        p = model.metadata_props.add()
        p.key, p.value = k, v
    model.producer_name = "othello-train az"
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def export(net: AZNet, path: str | Path, rules: str = "standard",
           meta: dict[str, Any] | None = None, check: bool = True) -> Path:
    """Write the ONNX file atomically (a reader never sees half a file) and, with ``check``,
    verify that onnxruntime agrees with PyTorch to 1e-4 on random legal-looking inputs."""
    path = Path(path)
    data = to_onnx_bytes(net, rules, meta)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    if check:
        try:
            err = max_difference(net, tmp)
        except Exception:
            tmp.unlink(missing_ok=True)
            raise
        if err > 1e-4:
            tmp.unlink(missing_ok=True)
            raise RuntimeError(f"onnxruntime differs from PyTorch by {err:.2e} (> 1e-4)")
    tmp.replace(path)
    return path


def session(path: str | Path, threads: int = 1) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def read_metadata(path: str | Path) -> dict[str, str]:
    return dict(session(path).get_modelmeta().custom_metadata_map)


def sample_planes(n: int, legal: bool, seed: int = 0) -> np.ndarray:
    """Planes of real positions (random games), so the check covers realistic inputs."""
    from engine_server.game.bitboard import START_BLACK, START_WHITE

    from .data import random_positions

    P, O, black = random_positions(n, seed, START_BLACK, START_WHITE)
    return planes.encode(P, O, black, legal)


def max_difference(net: AZNet, path: str | Path, n: int = 64) -> float:
    x = sample_planes(n, net.cfg.legal)
    was_training = net.training
    net.eval()
    with torch.no_grad():
        p_t, v_t = net(torch.from_numpy(x))
    net.train(was_training)
    p_o, v_o = session(path).run([planes.POLICY_NAME, planes.VALUE_NAME],
                                 {planes.INPUT_NAME: x})
    return float(max(np.abs(p_o - p_t.numpy()).max(), np.abs(v_o - v_t.numpy()).max()))


__all__ = ["OPSET", "export", "max_difference", "metadata", "read_metadata", "session",
           "to_onnx_bytes"]

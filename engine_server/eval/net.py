"""Policy/value networks in ONNX files, run on the CPU by ONNX Runtime.

A network file follows ``planes.py``'s contract: one input ``planes`` float32 [N, C, 8, 8], the
outputs ``policy`` [N, 65] (logits) and ``value`` [N, 1], and ``othello.*`` metadata naming the
layout (``format``, ``planes``, ``legal``, ``rules``; ``blocks`` and ``filters`` are shown, not
checked).  :func:`load_net` refuses anything else with a :class:`NetError` naming the file, so
a wrong file fails when the agent is built, not as garbage moves.

Sessions are shared per process: one per (file, threads, file version), because a session holds
the weights and a thread pool, and every session of the engine may ask for the same file.
ONNX Runtime's ``run`` is safe to call from several threads at once.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine_server.game.bitboard import REVERSED, STANDARD

from . import planes

DATA_DIR = Path(__file__).parent / "data"
FILES = {STANDARD: "net-standard.onnx", REVERSED: "net-reversed.onnx"}
RULES_NAMES = {"standard": STANDARD, "reversed": REVERSED}
REQUIRED_KEYS = ("othello.format", "othello.planes", "othello.legal", "othello.rules")


class NetError(RuntimeError):
    """A network file that cannot be used: missing, unreadable, or of another layout."""


@dataclass(frozen=True)
class NetModel:
    """A loaded network: :meth:`run` maps planes to (logits, values)."""

    path: Path
    session: Any          # onnxruntime.InferenceSession
    n_planes: int
    legal: bool           # the input has the legal-move plane
    rules: int            # STANDARD or REVERSED: the rules it was trained for
    blocks: int | None
    filters: int | None
    threads: int

    def run(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(logits float32 [N, 65], values float32 [N])`` for planes ``x`` [N, C, 8, 8]."""
        if x.ndim != 4 or x.shape[1:] != (self.n_planes, 8, 8):
            raise NetError(f"network {self.path} takes planes [N, {self.n_planes}, 8, 8], "
                           f"got {list(x.shape)}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        logits, values = self.session.run([planes.POLICY_NAME, planes.VALUE_NAME],
                                          {planes.INPUT_NAME: x})
        n = x.shape[0]
        return (np.ascontiguousarray(logits, dtype=np.float32).reshape(n, planes.N_MOVES),
                np.ascontiguousarray(values, dtype=np.float32).reshape(n))


def default_net_path(rules: int | str) -> Path:
    """The shipped network for ``rules`` (it may not exist yet)."""
    r = RULES_NAMES[rules] if isinstance(rules, str) else int(rules)
    return DATA_DIR / FILES[r]


_cache: dict[tuple[str, int, int, int], NetModel] = {}
_lock = threading.Lock()


def load_net(path: str | Path, threads: int = 1) -> NetModel:
    """The network in ``path`` with ``threads`` intra-op threads, loaded once per process (a
    file rewritten in place, as training does, is loaded again)."""
    p = Path(path)
    if threads < 1:
        raise ValueError(f"network threads must be >= 1, got {threads}")
    try:
        st = p.stat()
    except OSError:
        raise NetError(f"network {p} not found") from None
    if not p.is_file():
        raise NetError(f"network {p} is not a file")
    key = (str(p.resolve()), int(threads), st.st_mtime_ns, st.st_size)
    with _lock:
        model = _cache.get(key)
        if model is None:
            # older versions of the same file stay referenced by the searches using them
            for k in [k for k in _cache if k[:2] == key[:2]]:
                del _cache[k]
            model = _load(p, threads)
            _cache[key] = model
        return model


def _load(p: Path, threads: int) -> NetModel:
    try:
        import onnxruntime as ort
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise NetError(f"network {p}: onnxruntime is not installed ({e})") from None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3  # errors only: a warning per load would flood the engine's log
    try:
        session = ort.InferenceSession(os.fspath(p), opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own unexported exception types
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise NetError(f"network {p} is not a readable ONNX model: {first}") from None
    meta = dict(session.get_modelmeta().custom_metadata_map)
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    if missing:
        raise NetError(f"network {p} lacks the metadata {', '.join(missing)} (not an Othello "
                       f"network exported for this engine)")
    if meta["othello.format"] != planes.FORMAT_VERSION:
        raise NetError(f"network {p} has othello.format {meta['othello.format']!r}; this "
                       f"engine reads format {planes.FORMAT_VERSION!r}")
    legal_text = meta["othello.legal"]
    if legal_text not in ("0", "1"):
        raise NetError(f"network {p}: othello.legal must be '0' or '1', got {legal_text!r}")
    legal = legal_text == "1"
    want = planes.n_planes(legal)
    if meta["othello.planes"] != str(want):
        raise NetError(f"network {p}: othello.planes {meta['othello.planes']!r} does not fit "
                       f"othello.legal {legal_text!r} ({want} planes)")
    rules = RULES_NAMES.get(meta["othello.rules"])
    if rules is None:
        raise NetError(f"network {p}: othello.rules must be standard or reversed, got "
                       f"{meta['othello.rules']!r}")
    inputs = session.get_inputs()
    if [i.name for i in inputs] != [planes.INPUT_NAME]:
        raise NetError(f"network {p} has inputs {[i.name for i in inputs]}, expected "
                       f"[{planes.INPUT_NAME!r}]")
    shape = list(inputs[0].shape)
    if len(shape) != 4 or shape[1:] != [want, 8, 8]:
        raise NetError(f"network {p}: input {planes.INPUT_NAME!r} has shape {shape}, expected "
                       f"[N, {want}, 8, 8]")
    outputs = {o.name: o for o in session.get_outputs()}
    for name, width in ((planes.POLICY_NAME, planes.N_MOVES), (planes.VALUE_NAME, 1)):
        o = outputs.get(name)
        if o is None:
            raise NetError(f"network {p} has outputs {sorted(outputs)}, expected "
                           f"{planes.POLICY_NAME!r} and {planes.VALUE_NAME!r}")
        oshape = list(o.shape)
        if len(oshape) != 2 or oshape[1] != width:
            raise NetError(f"network {p}: output {name!r} has shape {oshape}, expected "
                           f"[N, {width}]")
    return NetModel(p, session, want, legal, rules, _int_or_none(meta.get("othello.blocks")),
                    _int_or_none(meta.get("othello.filters")), threads)


SESSION_MIB = 8.0       # ONNX Runtime's own allocations for a session, measured
SESSION_PER_FILE = 3.0  # weights as loaded, their optimised copy and the activations of batch 64


def net_memory_mib(path: str | Path) -> float:
    """What a session for the network in ``path`` holds, from the file's size (0 when it is
    not there): 10.9 MiB for a 1.7 MiB 6x64 network, 32 MiB for an 11 MiB 10x128 one."""
    try:
        size = Path(path).expanduser().stat().st_size
    except OSError:
        return 0.0
    return SESSION_MIB + SESSION_PER_FILE * size / 2**20


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


__all__ = ["NetError", "NetModel", "default_net_path", "load_net", "net_memory_mib",
           "DATA_DIR"]

"""Small policy/value networks for tests and benchmarks, exported the way the engine reads them.

The layout is ``engine_server/eval/planes.py``'s contract: input ``planes`` float32 [N, C, 8, 8],
outputs ``policy`` [N, 65] logits and ``value`` [N, 1] in [-1, 1], and the ``othello.*``
metadata that :func:`engine_server.eval.net.load_net` checks.  Needs torch and onnx (the dev
extra); the engine itself needs neither.

* :class:`TinyNet`: an AlphaZero-style residual tower (``blocks`` x ``filters``), random weights
  from ``torch.manual_seed(seed)``;
* :func:`export_onnx`: any such module to an ONNX file with the metadata (``torch.onnx.export``
  with ``dynamo=False``: the TorchScript exporter needs no onnxscript and gives a dynamic batch);
* :func:`random_net`: both at once, returning the module so a test can compare outputs;
* :func:`biased_net`: a network whose policy prefers given squares and whose value is a constant,
  for tests that need to know what the search should do.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from engine_server.eval import planes

try:  # the dev extra; callers that only need paths or metadata work without it
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - the dev extra installs torch
    torch = None  # type: ignore[assignment]
    nn = None  # type: ignore[assignment]


def _require_torch() -> None:
    if torch is None:
        raise RuntimeError("tests/netutil.py needs torch (pip install -e .[dev])")


if torch is not None:
    class _Block(nn.Module):
        def __init__(self, f: int):
            super().__init__()
            self.c1 = nn.Conv2d(f, f, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(f)
            self.c2 = nn.Conv2d(f, f, 3, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(f)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(x + self.b2(self.c2(y)))

    class TinyNet(nn.Module):
        """Input conv, ``blocks`` residual blocks, a policy head (65 logits) and a tanh value
        head, as in AlphaZero at a toy size."""

        def __init__(self, blocks: int = 1, filters: int = 8, legal: bool = True):
            super().__init__()
            c = planes.n_planes(legal)
            self.legal = legal
            self.blocks = blocks
            self.filters = filters
            self.stem = nn.Sequential(nn.Conv2d(c, filters, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(filters), nn.ReLU())
            self.tower = nn.Sequential(*[_Block(filters) for _ in range(blocks)])
            self.p_conv = nn.Sequential(nn.Conv2d(filters, 2, 1, bias=False),
                                        nn.BatchNorm2d(2), nn.ReLU())
            self.p_fc = nn.Linear(2 * 64, planes.N_MOVES)
            self.v_conv = nn.Sequential(nn.Conv2d(filters, 1, 1, bias=False),
                                        nn.BatchNorm2d(1), nn.ReLU())
            self.v_fc1 = nn.Linear(64, 32)
            self.v_fc2 = nn.Linear(32, 1)

        def forward(self, x):
            h = self.tower(self.stem(x))
            p = self.p_fc(self.p_conv(h).flatten(1))
            v = torch.tanh(self.v_fc2(torch.relu(self.v_fc1(self.v_conv(h).flatten(1)))))
            return p, v
else:  # pragma: no cover
    TinyNet = None  # type: ignore[assignment,misc]


def metadata(legal: bool, rules: str = "standard", blocks: int = 1, filters: int = 8,
             **extra: str) -> dict[str, str]:
    """The ``othello.*`` metadata the engine requires; ``extra`` overrides (tests of bad
    files)."""
    meta = {"othello.format": planes.FORMAT_VERSION,
            "othello.planes": str(planes.n_planes(legal)),
            "othello.legal": "1" if legal else "0",
            "othello.rules": rules,
            "othello.blocks": str(blocks),
            "othello.filters": str(filters)}
    meta.update(extra)
    return {k: v for k, v in meta.items() if v is not None}


def export_onnx(model, path: str | Path, legal: bool, rules: str = "standard",
                meta: dict[str, str] | None = None, input_name: str = planes.INPUT_NAME,
                output_names: tuple[str, str] = (planes.POLICY_NAME, planes.VALUE_NAME)) -> Path:
    """Export ``model`` (``forward(planes) -> (policy, value)``) to ``path`` with the metadata
    (``meta`` replaces it whole when given); the batch axis is dynamic."""
    _require_torch()
    import onnx

    path = Path(path)
    model = model.eval()
    x = torch.zeros(2, planes.n_planes(legal), 8, 8)
    with warnings.catch_warnings():
        # the TorchScript exporter is deprecated in favour of dynamo, which needs onnxscript
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (x,), str(path), input_names=[input_name],
                          output_names=list(output_names),
                          dynamic_axes={input_name: {0: "batch"}, output_names[0]: {0: "batch"},
                                        output_names[1]: {0: "batch"}},
                          opset_version=17, dynamo=False)
    proto = onnx.load(str(path))
    if meta is None:
        meta = metadata(legal, rules, getattr(model, "blocks", 0), getattr(model, "filters", 0))
    del proto.metadata_props[:]
    for k, v in meta.items():
        entry = proto.metadata_props.add()
        entry.key = k
        entry.value = v
    onnx.save(proto, str(path))
    return path


def random_net(path: str | Path, blocks: int = 1, filters: int = 8, legal: bool = True,
               rules: str = "standard", seed: int = 0):
    """A :class:`TinyNet` with random weights (BatchNorm statistics randomised too, so the
    exported graph is not an identity there), exported to ``path``; returns the module."""
    _require_torch()
    torch.manual_seed(seed)
    net = TinyNet(blocks, filters, legal)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    export_onnx(net, path, legal, rules)
    return net.eval()


if torch is not None:
    class _Biased(nn.Module):
        def __init__(self, logits: np.ndarray, value: float, legal: bool):
            super().__init__()
            self.legal = legal
            self.blocks = 0
            self.filters = 0
            self.register_buffer("logits", torch.tensor(logits, dtype=torch.float32))
            self.value = float(value)

        def forward(self, x):
            n = x.shape[0]
            # depends on x so that the batch axis stays dynamic in the exported graph
            zero = x.sum(dim=(1, 2, 3), keepdim=False).unsqueeze(1) * 0.0
            p = zero + self.logits.unsqueeze(0)
            v = zero + torch.full((1, 1), self.value)
            return p.reshape(n, planes.N_MOVES), v.reshape(n, 1)


def biased_net(path: str | Path, prefer: dict[int, float], value: float = 0.0,
               legal: bool = False, rules: str = "standard") -> Path:
    """A network that ignores the position: logit ``prefer[sq]`` for the listed squares, 0 for
    the others, and the constant ``value``."""
    _require_torch()
    logits = np.zeros(planes.N_MOVES, np.float32)
    for sq, v in prefer.items():
        logits[sq] = v
    return export_onnx(_Biased(logits, value, legal), path, legal, rules)


__all__ = ["TinyNet", "biased_net", "export_onnx", "metadata", "random_net"]

"""Alphello Zero's network: a residual tower over the board planes with a policy and a value head.

Input and outputs follow :mod:`engine_server.eval.planes` exactly (``[N, C, 8, 8]`` planes in,
65 policy logits and a tanh value out).  The seed used 40 blocks of 256 filters on a GPU; the
default here (6 x 64) is sized for two CPU cores (docs/net.md has the timings behind it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from engine_server.eval import planes


@dataclass(frozen=True)
class NetConfig:
    blocks: int = 6
    filters: int = 64
    legal: bool = True          # the optional legal-move input plane
    head_channels: int = 2      # 1x1 convolution before each head's fully connected layer
    value_hidden: int = 64

    @property
    def in_planes(self) -> int:
        return planes.n_planes(self.legal)

    def as_dict(self) -> dict:
        return asdict(self)


class _Block(nn.Module):
    def __init__(self, f: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(f, f, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(f)
        self.c2 = nn.Conv2d(f, f, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(f)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(x + y)


class AZNet(nn.Module):
    """AlphaGo Zero's layout (Silver et al. 2017, Methods), scaled: stem, residual tower, a
    policy head of 65 logits and a value head squashed by tanh."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        f, h = cfg.filters, cfg.head_channels
        self.stem = nn.Sequential(nn.Conv2d(cfg.in_planes, f, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(f), nn.ReLU())
        self.tower = nn.Sequential(*[_Block(f) for _ in range(cfg.blocks)])
        self.p_conv = nn.Sequential(nn.Conv2d(f, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU())
        self.p_fc = nn.Linear(h * 64, planes.N_MOVES)
        self.v_conv = nn.Sequential(nn.Conv2d(f, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU())
        self.v_fc = nn.Sequential(nn.Linear(64, cfg.value_hidden), nn.ReLU(),
                                  nn.Linear(cfg.value_hidden, 1), nn.Tanh())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.tower(self.stem(x))
        p = self.p_fc(self.p_conv(t).flatten(1))
        v = self.v_fc(self.v_conv(t).flatten(1))
        return p, v


def build(cfg: NetConfig, seed: int | None = None) -> AZNet:
    if seed is not None:
        torch.manual_seed(seed)
    return AZNet(cfg)


def set_memory_format(net: AZNet, fmt: torch.memory_format) -> AZNet:
    """``net.to(memory_format=fmt)`` (in place), which torch's type stubs do not declare."""
    return net.to(memory_format=fmt)  # type: ignore[call-overload]


def n_params(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


__all__ = ["AZNet", "NetConfig", "build", "n_params", "set_memory_format"]

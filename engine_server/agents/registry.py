"""Agents by name, built from spec strings ``name[:key=value,...]``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine_server.presets import DEFAULT_AGENT

from .ab import AB, BEST
from .base import Agent, AgentInfo, AgentSpecError
from .book_agent import BookAgent, book_params
from .mcts import MCTS
from .papers import DK, MINMAX, OCBA, PSEUDO_RANDOM, PUCT, RANDOM, SHALLOW, UCB1, UCT

# Agents that open from the book unless told book=off: the default agent, under standard rules
# (book=auto: the reversed book lost its match, docs/book.md).  The papers' agents keep their
# papers' behaviour.
BOOK_AUTO = ("best",)

AGENTS: dict[str, AgentInfo] = {
    a.name: replace(a, params=a.params + book_params("auto" if a.name in BOOK_AUTO else "off"))
    for a in (RANDOM, PSEUDO_RANDOM, SHALLOW, MINMAX, UCB1, UCT, OCBA, DK, PUCT, MCTS, AB,
              BEST)}


def parse_spec(spec: str) -> tuple[AgentInfo, dict[str, Any]]:
    """``'uct:c=1.414,rollout=valuemap'`` -> (info, full parameter dict with defaults)."""
    text = spec.strip()
    name, _, rest = text.partition(":")
    name = name.strip().lower()
    info = AGENTS.get(name)
    if info is None:
        raise AgentSpecError(f"unknown agent {name!r}; known agents: {', '.join(AGENTS)}")
    params = {p.name: p.default for p in info.params}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq:
                raise AgentSpecError(f"{name}: expected key=value, got {item.strip()!r}")
            p = info.param(key)
            if p is None:
                raise AgentSpecError(
                    f"{name}: unknown parameter {key!r}; accepted: "
                    + ", ".join(f"{q.name} ({q.describe()})" for q in info.params))
            params[key] = p.parse(value.strip(), name)
    return info, params


def make_agent(spec: str, **overrides: Any) -> Agent:
    """Build an agent; keyword overrides (e.g. ``seed=3``) win over the spec's values."""
    info, params = parse_spec(spec)
    for k, v in overrides.items():
        p = info.param(k)
        if p is None:
            raise AgentSpecError(f"{info.name}: unknown parameter {k!r}")
        p.check(v, info.name)
        params[k] = v
    agent = info.factory(spec, params)
    agent.name = info.name
    if params["book"] != "off":
        agent = BookAgent(agent, spec, params)
        agent.name = info.name
    return agent


def describe_agents() -> str:
    """Human-readable list: names, source seed, parameters with defaults."""
    lines = []
    for a in AGENTS.values():
        default = "  (default)" if a.name == DEFAULT_AGENT else ""
        lines.append(f"{a.name}{default}  [{a.source}]")
        lines.append(f"    {a.summary}")
        for p in a.params:
            lines.append(f"    {p.name:<12} {p.describe()}: {p.help}")
    return "\n".join(lines)

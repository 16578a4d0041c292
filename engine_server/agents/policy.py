"""Named presets, what an agent costs, and the limits a session's agent must stay within.

A preset is a name for a spec (``beginner = "dk:nSims=5,max_iter=40"``).  An ``AgentPolicy``
is what the operator allows a kind of session (ZeroMQ clients, the web page, or stdin): which
agent families, whether raw specs or only presets, and at most how many search threads and
how much memory.  ``admit`` turns a requested name or spec into the spec the session will run:
parameters the client left at their defaults are lowered to fit (``best`` becomes
``best:threads=1`` under a one-thread limit), and a parameter the client set beyond a limit is
refused with an ``AgentSpecError`` naming it, so the session keeps its previous agent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from engine_server.eval.net import default_net_path, net_memory_mib
from engine_server.presets import BUILTIN_PRESETS

from .base import AgentInfo, AgentSpecError
from .registry import AGENTS, parse_spec

ROOT_SOLVER_MIB = 32.0   # RootSolver's default table: 2**20 entries of 32 bytes
LEAF_SOLVER_MIB = 8.0    # a tree's leaf-solver table (2**18 entries of 32 bytes), when it solves
AB_ENTRY_BYTES = 24      # alpha-beta table entry (keys + data)
# A search thread may be accompanied by sleeping helpers (alpha-beta's clock, the stop relays
# of root parallelism and of the root solver beside the tree), measured at most 2 per thread
# plus one; the session adds its controller and the move-time watchdog.
# Parameters that set threads an agent keeps busy.
THREAD_PARAMS = ("threads", "net_threads")
# Values of forbidden parameters that name no file on the server, so stay allowed.
SAFE_VALUES: dict[str, tuple[str, ...]] = {"net": ("none", "default"), "weights": ("",),
                                           "book_file": ("",)}
OS_THREADS_PER_THREAD = 3
OS_THREADS_PER_SESSION = 3


@dataclass(frozen=True)
class AgentCost:
    threads: int        # search threads at once (the cores it can keep busy)
    memory_mib: float   # the most its tables and trees can hold at once

    @property
    def os_threads(self) -> int:
        """Every thread a session with this agent can hold, sleeping helpers included."""
        return OS_THREADS_PER_THREAD * self.threads + OS_THREADS_PER_SESSION


def _spec_keys(spec: str) -> set[str]:
    """The parameters a spec sets explicitly (the rest are defaults)."""
    _, _, rest = spec.partition(":")
    return {item.partition("=")[0].strip() for item in rest.split(",") if item.strip()}


def _auto_threads(name: str, params: Mapping[str, Any]) -> int:
    cores = os.cpu_count() or 1
    t = int(params.get("threads", 1))
    if t:
        return t
    if name == "mcts":
        return max(1, min(4, cores))
    return max(1, cores)  # best: one search thread per core (ab.py)


def _net_mib(net: str) -> float:
    """The network session of a ``net`` parameter (the larger shipped one for ``default``;
    0 when no file is there, as the agent then plays without one)."""
    if net == "default":
        return max(net_memory_mib(default_net_path(r)) for r in ("standard", "reversed"))
    return net_memory_mib(net)


def cost_of(name: str, params: Mapping[str, Any]) -> AgentCost:
    """Threads and memory of an agent built with ``params`` (a full parameter dict)."""
    threads = _auto_threads(name, params) if "threads" in params else 1
    # Reusing a tree copies the kept subtree into a new tree before the old one is freed
    # (driver.TreeSearch._reroot), so a tree's peak is twice its cap.
    memory = 2.0 * float(params.get("memory", 0))
    net = str(params.get("net", "none"))
    net_mib = _net_mib(net) if net != "none" else 0.0
    # puct solves leaves only with a network
    if int(params.get("solve_empties", 0)) > 0 and (name != "puct" or net_mib > 0):
        memory += LEAF_SOLVER_MIB * threads
    if "table" in params:  # alpha-beta keeps one table, for the rules of its last search
        memory += (1 << int(params["table"])) * AB_ENTRY_BYTES / 2**20
    if net_mib > 0:
        # the network's intra-op threads keep as many cores busy as search threads would
        threads = max(threads, int(params.get("net_threads", 1)))
        memory += net_mib
    # uct builds the root solver only with solver=true; mcts, ab and best always do; puct
    # runs it by the time (-1) only with a network
    root_solver = name != "uct" or bool(params.get("solver"))
    if name == "puct" and net_mib == 0 and int(params.get("root_solve", 0)) < 0:
        root_solver = False
    if int(params.get("root_solve", 0)) != 0 and root_solver:
        memory += ROOT_SOLVER_MIB
    return AgentCost(threads, memory)


def spec_cost(spec: str) -> AgentCost:
    info, params = parse_spec(spec)
    return cost_of(info.name, params)


def find_preset(name: str, presets: Mapping[str, str]) -> str | None:
    """The preset ``name`` means, letter case aside (``Medium`` is ``medium``), or None."""
    text = name.strip()
    if text in presets:
        return text
    folded = text.casefold()
    for preset in presets:
        if preset.casefold() == folded:
            return preset
    return None


def resolve(name_or_spec: str, presets: Mapping[str, str]) -> str:
    """The spec a preset name stands for (letter case aside), or the text itself when it is
    not a preset."""
    text = name_or_spec.strip()
    preset = find_preset(text, presets)
    return presets[preset] if preset is not None else text


def unknown_agent(text: str, presets: Mapping[str, str]) -> AgentSpecError:
    """The error for a name that is neither a preset nor an agent family: it lists both."""
    text = text.strip()
    name, colon, _ = text.partition(":")
    name = name.strip()
    listing = (f"presets: {', '.join(presets) or '(none)'}; agent families: "
               f"{', '.join(AGENTS)} (othello-engine --list-agents describes them)")
    preset = find_preset(name, presets)
    if colon and preset is not None:
        return AgentSpecError(f"{name!r} is a preset and takes no parameters: write the spec "
                              f"it stands for ({presets[preset]}) with yours instead")
    what = "agent family" if colon else "agent"
    return AgentSpecError(f"unknown {what} {name!r}: neither a preset nor an agent family; "
                          + listing)


def parse_named(name_or_spec: str, presets: Mapping[str, str]
                ) -> tuple[str, AgentInfo, dict[str, Any]]:
    """The spec of a preset name or spec, with what ``parse_spec`` makes of it; an unknown
    name is an ``AgentSpecError`` that lists the presets and the agent families."""
    spec = resolve(name_or_spec, presets)
    if spec.partition(":")[0].strip().lower() not in AGENTS:
        raise unknown_agent(spec, presets)
    info, params = parse_spec(spec)
    base, colon, rest = spec.partition(":")
    if base.strip() != info.name:  # ``UCT:c=1`` runs as ``uct:c=1``
        spec = info.name + colon + rest
    return spec, info, params


def check_presets(presets: Mapping[str, str]) -> None:
    """Every preset names a valid spec and no agent family (a preset called ``uct`` would
    make ``uct`` mean two things)."""
    seen: dict[str, str] = {}
    for name, spec in presets.items():
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise AgentSpecError(f"presets {other!r} and {name!r} differ only in letter case "
                                 "(names are matched without case)")
        if name.lower() in AGENTS:
            raise AgentSpecError(f"preset {name!r} has the name of an agent family")
        if not name or any(c in name for c in ":,= "):
            raise AgentSpecError(f"preset name {name!r} must be one word without : , =")
        try:
            parse_spec(spec)
        except AgentSpecError as e:
            raise AgentSpecError(f"preset {name!r}: {e}") from None


@dataclass(frozen=True)
class AgentPolicy:
    """What a kind of session may choose.  ``None`` limits mean no limit."""

    max_threads: int | None = None
    max_memory_mib: float | None = None
    max_move_time: float | None = None
    agents: tuple[str, ...] = ()          # allowed families (empty: all)
    presets_only: bool = False            # refuse raw specs, accept preset names only
    forbidden_params: tuple[str, ...] = ()

    def admit(self, name_or_spec: str, presets: Mapping[str, str]) -> str:
        """The spec to run for a requested preset name or spec, fitted to the limits; an
        ``AgentSpecError`` names what is not allowed."""
        text = name_or_spec.strip()
        preset = find_preset(text, presets)
        is_preset = preset is not None
        if self.presets_only and not is_preset:
            raise AgentSpecError(
                f"only presets may be chosen here: {', '.join(sorted(presets)) or '(none)'}")
        spec, info, params = parse_named(text, presets)
        allowed = {a.casefold() for a in self.agents}
        if allowed and info.name not in allowed and (preset or text).casefold() not in allowed:
            raise AgentSpecError(f"agent {info.name!r} is not allowed here; allowed: "
                                 f"{', '.join(self.agents)}")
        explicit = set() if is_preset else _spec_keys(spec)
        for key in sorted(explicit & set(self.forbidden_params)):
            if str(params[key]) not in SAFE_VALUES.get(key, ()):
                raise AgentSpecError(f"{info.name}: parameter {key!r} may not be set here"
                                     + (f" (except to {' or '.join(SAFE_VALUES[key])})"
                                        if key in SAFE_VALUES else ""))
        fitted = dict(params)
        changed: list[str] = []
        self._fit_threads(info.name, fitted, explicit, changed)
        self._fit_memory(info.name, fitted, explicit, changed)
        if not changed:
            return spec
        extra = ",".join(f"{k}={fitted[k]}" for k in changed)
        base, _, rest = spec.partition(":")
        kept = [item for item in rest.split(",")
                if item.strip() and item.partition("=")[0].strip() not in changed]
        return f"{base}:{','.join(kept + [extra])}" if kept else f"{base}:{extra}"

    def _fit_threads(self, name: str, params: dict[str, Any], explicit: set[str],
                     changed: list[str]) -> None:
        if self.max_threads is None:
            return
        for key in THREAD_PARAMS:
            if key not in params:
                continue
            if key in explicit and int(params[key]) > self.max_threads:
                raise AgentSpecError(f"{name}: {key}={params[key]} is above this server's "
                                     f"limit of {self.max_threads} per session")
            if cost_of(name, params).threads <= self.max_threads:
                continue
            if int(params[key]) == 0 or int(params[key]) > self.max_threads:
                params[key] = self.max_threads
                changed.append(key)

    def _fit_memory(self, name: str, params: dict[str, Any], explicit: set[str],
                    changed: list[str]) -> None:
        limit = self.max_memory_mib
        if limit is None:
            return
        need = cost_of(name, params).memory_mib
        if need <= limit:
            return
        for key in ("memory", "table"):
            if key in params and key in explicit:
                raise AgentSpecError(
                    f"{name}: {key}={params[key]} needs {need:.0f} MiB, above this server's "
                    f"limit of {limit:.0f} MiB per session")
        if "memory" in params:
            rest = need - 2.0 * float(params["memory"])
            fit = int((limit - rest) / 2.0)
            if fit < 1:
                raise AgentSpecError(f"{name} needs {rest:.0f} MiB besides its tree, above "
                                     f"this server's limit of {limit:.0f} MiB per session")
            params["memory"] = fit
            changed.append("memory")
        elif "table" in params:
            while cost_of(name, params).memory_mib > limit and params["table"] > 10:
                params["table"] -= 1
            if cost_of(name, params).memory_mib > limit:
                raise AgentSpecError(f"{name} needs at least "
                                     f"{cost_of(name, params).memory_mib:.0f} MiB, above this "
                                     f"server's limit of {limit:.0f} MiB per session")
            changed.append("table")
        else:
            raise AgentSpecError(f"{name} needs {need:.0f} MiB, above this server's limit of "
                                 f"{limit:.0f} MiB per session")


OPEN_POLICY = AgentPolicy()


@dataclass
class Catalog:
    """The presets and level table a session resolves names with."""

    presets: dict[str, str] = field(default_factory=lambda: dict(BUILTIN_PRESETS))
    levels: dict[int, str] = field(default_factory=dict)  # NBoard depth -> preset

    def level_preset(self, depth: int) -> str | None:
        """The preset of the highest level at or below ``depth`` (None: no table, or below
        its first level)."""
        found = [lv for lv in self.levels if lv <= depth]
        return self.levels[max(found)] if found else None


__all__ = ["AB_ENTRY_BYTES", "AgentCost", "AgentPolicy", "BUILTIN_PRESETS", "Catalog",
           "OPEN_POLICY", "ROOT_SOLVER_MIB", "check_presets", "cost_of", "find_preset",
           "parse_named", "resolve", "spec_cost", "unknown_agent"]

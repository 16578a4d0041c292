"""Where a judge adapter gets its moves from: a small object with
``search(position, deadline, progress) -> SearchResult`` and ``reset()``.

Not tied to one judge: the CS303 ``AI`` class (:mod:`clients.cs303.ai`) and the Botzone bot
(:mod:`clients.botzone.main`) both drive one.  :class:`InProcessBackend` runs an agent of the
registry in the calling thread (judges that import the player into their own process, and
Botzone's one-process-per-bot model); :mod:`clients.cs303.remote_backend` forwards to a running
engine over ZeroMQ with the same ``search``/``reset`` methods.

Judges hand over boards, not moves, so tree reuse starts by working out which moves lead from
the last searched position to the new one (:func:`moves_between`).
"""

from __future__ import annotations

from typing import Any, Callable

from engine_server.agents import SINGLE_THREAD_AGENT, make_agent, parse_spec
from engine_server.config import resolve_agent
from engine_server.game import PASS, Position
from engine_server.log import get_logger
from engine_server.search.limits import Limits, SearchResult

log = get_logger("judge.backend")

Progress = Callable[[SearchResult], None]

# Boards more than this many discs apart are not searched for a connecting line: judges call
# once per own move, so the real distance is one or two discs (three after our own pass).
MAX_LINK_DISCS = 6

# Progress reports are what an interrupted judge call falls back on, so they come often; each
# costs tens of microseconds against batches of ~5 ms.
PROGRESS_INTERVAL = 0.05


def moves_between(old: Position, new: Position,
                  max_discs: int = MAX_LINK_DISCS) -> list[int] | None:
    """The moves (passes explicit) that lead from ``old`` to ``new``, or None when ``new`` is not
    a descendant within ``max_discs`` placed discs.  ``[]`` means the same position.

    Every non-pass move adds exactly one disc and passes are forced, so the depth is bounded by
    the disc difference and a move is only tried on a square that is occupied in ``new``.
    """
    if old.rules != new.rules:
        return None
    old_occ = old.black | old.white
    new_occ = new.black | new.white
    if old_occ & ~new_occ:
        return None
    gap = new_occ.bit_count() - old_occ.bit_count()
    if gap > max_discs:
        return None
    return _link(old, new, new_occ, gap)


def _link(pos: Position, target: Position, target_occ: int, gap: int) -> list[int] | None:
    if gap == 0:
        if pos.black == target.black and pos.white == target.white:
            if pos.side == target.side:
                return []
            if pos.must_pass():
                return [PASS]
        return None
    moves = pos.legal_moves()
    if moves == [PASS]:
        rest = _link(pos.play(PASS), target, target_occ, gap)
        return None if rest is None else [PASS] + rest
    for m in moves:
        if target_occ >> m & 1:
            rest = _link(pos.play(m), target, target_occ, gap - 1)
            if rest is not None:
                return [m] + rest
    return None


def spec_keys(spec: str) -> set[str]:
    """The parameter names written in a spec ``name:key=value,...``."""
    rest = spec.partition(":")[2]
    return {item.partition("=")[0].strip() for item in rest.split(",") if item.strip()}


class InProcessBackend:
    """An agent of the registry searching in this thread, its tree kept between calls.

    ``iterations`` caps each search besides the deadline (quick games and tests);
    ``memory_mib`` caps the search tree where the agent has one (judges limit memory).
    ``seed`` and ``memory_mib`` are the adapter's defaults: a key written in ``spec`` wins.
    """

    def __init__(self, spec: str = SINGLE_THREAD_AGENT, seed: int | None = None,
                 memory_mib: int | None = None, iterations: int | None = None,
                 progress_interval: float = PROGRESS_INTERVAL):
        spec = resolve_agent(spec)  # a preset name, or a spec checked by the registry
        info, _ = parse_spec(spec)
        named = spec_keys(spec)
        overrides: dict[str, Any] = {}
        if seed is not None and "seed" not in named:
            overrides["seed"] = seed
        if memory_mib is not None and "memory" not in named and info.param("memory") is not None:
            overrides["memory"] = memory_mib
        if iterations is not None and iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        self.agent = make_agent(spec, **overrides)
        self.iterations = iterations
        self.progress_interval = progress_interval
        self._root: Position | None = None
        # Set while a search runs: a judge's timeout exception can leave the call unfinished,
        # and the next call then starts from a clean agent rather than a half-updated one.
        self._busy = False

    def warm_up(self) -> None:
        """Load the search kernels now (numba cache or compile), then forget the search."""
        self.agent.search(Position.start(), Limits(iterations=8))
        self.reset()

    def reset(self) -> None:
        self.agent.reset()
        self._root = None
        self._busy = False

    def search(self, position: Position, deadline: float,
               progress: Progress | None = None) -> SearchResult:
        if self._busy:
            log.info("backend_reset", reason="previous search was interrupted")
            self.reset()
        if self._root is not None:
            line = moves_between(self._root, position)
            if line:
                kept = self.agent.advance(line)
                log.debug("tree_advanced", moves=line, kept=round(kept, 4))
            # line is None: an unrelated position, which the agent detects and resets on.
        self._busy = True
        result = self.agent.search(position, Limits(deadline=deadline, iterations=self.iterations),
                                   progress, self.progress_interval)
        self._busy = False
        self._root = position
        return result

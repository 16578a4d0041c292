"""``othello-botzone``: a Botzone Reversi bot (``docs/reference/judges.md`` section 2).

Input, one turn per process by default:

* JSON, one line: ``{"requests": [...n], "responses": [...n-1], "data": ..., "time_limit": ...}``
  with requests and responses ``{"x": X, "y": Y}`` (x = column, y = row, 0-based; ``-1, -1`` as
  the first request means we are black, later it is a pass);
* simplified I/O: a line ``n``, then 2n-1 lines ``x y`` alternating request and response and
  ending with the new request (data and globaldata lines after them are not needed).

The history is replayed from the standard start (standard rules: more discs win) and the answer
is ``{"response": {"x": X, "y": Y}, "debug": ...}`` (simplified: ``x y``, then debug, data and
globaldata lines); ``-1, -1`` when we must pass, since the judge never passes for us.  Reading
and writing these, and the turn loop, are the numpy-only player's
(:mod:`clients.cs303.standalone.player`), which the packed bot runs too: this bot plays the
engine's game and search through them.

``--keep-running`` prints ``>>>BOTZONE_REQUEST_KEEP_RUNNING<<<`` after each answer and waits for
the next input, which is then only the new request (a full input is accepted too and replayed;
a bare request after the game's end starts a new game).  The search tree is kept between turns.

The budget of a move is the input's ``time_limit`` less a margin of 20% (at least 0.2 s),
counted from the process start for the first turn (Botzone bills the imports) and from the
arrival of the request afterwards.  stdout carries the protocol only; logs go to stderr.

``othello-botzone pack --agent SPEC -o bot.zip`` writes a zip that Botzone's Python runs with
numpy alone (:mod:`clients.botzone.pack`).
"""

from __future__ import annotations

import time

PROCESS_START = time.monotonic()  # taken before the heavy imports: Botzone bills them

import argparse  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any, NamedTuple  # noqa: E402

from clients.cs303.standalone.player import (  # noqa: E402
    KEEP_RUNNING,
    BotzoneInputError,
    Request,
    Turns,
    parse_input,
    serve,
    time_limit_seconds,
)
from engine_server import __version__  # noqa: E402
from engine_server.agents import SINGLE_THREAD_AGENT, AgentSpecError  # noqa: E402
from engine_server.config import resolve_agent  # noqa: E402
from engine_server.game import PASS, Color, Game, IllegalMoveError, Position, Rules  # noqa: E402
from engine_server.log import configure_logging, get_logger  # noqa: E402
from engine_server.search.limits import SearchResult  # noqa: E402
from protocol.notation import botzone_xy  # noqa: E402

DEFAULT_TIME_LIMIT = 1.0   # the Reversi page: 1 s per step
MARGIN_SHARE = 0.2
MIN_MARGIN = 0.2
DEFAULT_MEMORY_MIB = 64    # tree cap; numba and the kernels take about 145 MB besides

log = get_logger("botzone")


def move_budget(limit: float) -> float:
    return limit - max(MIN_MARGIN, MARGIN_SHARE * limit)


class BotzoneGame(Game):
    """The engine's game, played by the shared Botzone code (:class:`Turns`)."""

    def move(self, square: int, what: str) -> None:
        try:
            self.play(square)
        except IllegalMoveError as e:
            raise BotzoneInputError(f"{what} (move {len(self.moves) + 1}): {e}") from None

    def over(self) -> bool:
        return self.is_over()

    def to_move(self) -> Color:
        return self.position.side

    def copy(self) -> BotzoneGame:
        return BotzoneGame(self.start, list(self.moves))


# --- the bot -----------------------------------------------------------------------------------
class Answer(NamedTuple):
    move: int
    debug: str


@dataclass
class Bot(Turns):
    """Game state between turns (:class:`Turns`) plus a backend (``search(position,
    deadline)``)."""

    backend: Any
    move_time: float | None = None          # fixed budget per move, overriding time_limit
    time_limit: float = DEFAULT_TIME_LIMIT
    game: BotzoneGame | None = None
    me: int | None = None
    name = "othello-botzone"
    clock = time.monotonic

    def new_game(self) -> BotzoneGame:
        return BotzoneGame(Position.start(Rules.STANDARD))

    def note(self, event: str, **fields: Any) -> None:
        (log.error if event == "bad_input" else log.info)(event, **fields)

    def answer(self, started: float) -> Answer:
        """Our move for the current position, played into the game."""
        assert self.game is not None
        pos = self.game.position
        legal = pos.legal_moves()
        if not legal:
            return Answer(PASS, "game over: nothing to play")
        if legal == [PASS]:
            self.game.play(PASS)
            return Answer(PASS, "no legal move: pass")
        budget = self.move_time if self.move_time is not None else move_budget(self.time_limit)
        result = self.backend.search(pos, started + budget)
        move = result.best_move
        self.game.play(move)
        s = result.summary()
        log.info("searched", move=s["best"], **{k: v for k, v in s.items() if k != "best"})
        return Answer(move, describe(result, budget))


def _margin(discs: float) -> str:
    d = abs(discs)
    return f"{d:.0f} disc{'' if d == 1 else 's'}" if d == int(d) else f"{d:.1f} discs"


def describe(result: SearchResult, budget: float) -> str:
    """The debug text Botzone shows beside each of our moves, in words: the move (also as
    Botzone's x and y), what was searched and how long of the budget, and what the search
    expects of the game, from our side.  For example ``d3 (x=3, y=2): searched 8 plies deep
    (74% selective), 52,311 nodes in 0.41 s of 0.80 s; expects to win by 2.5 discs; agent
    best:threads=1``."""
    move = result.best_move
    if move is None:
        return "no move: the game is over"
    x, y = botzone_xy(move)
    head = f"{result.best_name} (x={x}, y={y})"
    best = result.moves[0] if result.moves and result.moves[0].move == move else None
    took = f"in {result.elapsed:.2f} s of {budget:.2f} s"
    if result.stopped_by == "book":
        games = f" ({best.book_games:,} games)" if best and best.book_games else ""
        work = f"from the opening book{games}"
    elif result.stopped_by == "random":
        work = "played at random (the agent opens its games with random moves)"
    elif result.exact or result.wld:
        what = "solved exactly" if result.exact else "solved to win, draw or loss"
        work = f"{what}, {result.nodes:,} nodes {took}"
    elif result.search_nodes > 0 and result.iterations > 0:
        sel = f" ({result.selectivity}% selective)" if result.selectivity < 100 else ""
        plies = "1 ply" if result.iterations == 1 else f"{result.iterations} plies"
        work = f"searched {plies} deep{sel}, {result.nodes:,} nodes {took}"
    elif result.playouts > 0 or result.iterations > 0:
        count = (f"{result.playouts:,} playouts" if result.playouts
                 else f"{result.iterations:,} iterations")
        solver = f" and {result.solver_nodes:,} solver nodes" if result.solver_nodes else ""
        work = f"{count}{solver} {took}"
    else:
        work = f"{result.nodes:,} nodes {took}"
    if result.reused_fraction > 0:
        kept = "of the root's moves already in the table" if result.search_nodes > 0 else \
            "of the tree kept"
        work += f", {result.reused_fraction:.0%} {kept} from the last turn"
    if result.exact:
        ev = result.lower
        outcome = ("a draw with perfect play" if ev == 0 else
                   f"{'wins' if ev > 0 else 'loses'} by {_margin(ev)} with perfect play")
    elif result.wld:
        outcome = ("a proven win" if result.lower > 0 else
                   "a proven loss" if result.upper < 0 else "a proven draw")
    elif (best is not None and best.margin is not None) or result.search_nodes > 0:
        ev = result.eval
        outcome = ("expects a draw" if round(ev, 1) == 0 else
                   f"expects to {'win' if ev > 0 else 'lose'} by {_margin(round(ev, 1))}")
    else:
        outcome = f"expects to win {0.5 * (result.root_value + 1):.0%} of games from here"
    return f"{head}: {work}; {outcome}; agent {result.agent}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="othello-botzone",
        description="Botzone Reversi bot: JSON or simplified I/O on stdin/stdout, one turn per "
                    "process or --keep-running. Standard rules. Logs go to stderr.",
        epilog="other commands:\n  othello-botzone pack -o bot.zip   write the engine-free "
               "player (numpy only) as a zip to upload\n                                    "
               "to Botzone as a Python 3 bot; othello-botzone pack --help",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--agent", default=SINGLE_THREAD_AGENT,
                   help=f"agent spec name[:key=value,...] (default {SINGLE_THREAD_AGENT})")
    p.add_argument("--keep-running", action="store_true",
                   help=f"print {KEEP_RUNNING} after each answer and wait for the next request")
    p.add_argument("--time", type=float, default=None, metavar="SECONDS",
                   help="fixed budget per move, instead of time_limit less the margin")
    p.add_argument("--iterations", type=int, default=None, metavar="N",
                   help="cap on search iterations per move (quick, reproducible games)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the agent's random stream (a seed in --agent wins)")
    p.add_argument("--memory", type=int, default=DEFAULT_MEMORY_MIB, metavar="MIB",
                   help=f"search tree cap in MiB (default {DEFAULT_MEMORY_MIB}; a memory key "
                        "in --agent wins)")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error", "critical"])
    p.add_argument("--log-file", default=None, help="append logs (JSON lines) to this file")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pack"]:
        # `othello-botzone pack ...`: build the engine-free zip instead of playing
        from clients.botzone.pack import main as pack_main

        return pack_main(argv[1:])
    args = _parser().parse_args(argv)
    configure_logging(args.log_level, args.log_file)
    for name, value in (("--time", args.time), ("--iterations", args.iterations),
                        ("--memory", args.memory)):
        if value is not None and not value > 0:
            print(f"othello-botzone: {name} must be > 0", file=sys.stderr)
            return 2
    try:
        args.agent = resolve_agent(args.agent)
    except AgentSpecError as e:
        print(f"othello-botzone: {e}", file=sys.stderr)
        return 2
    from clients.backend import InProcessBackend

    backend = InProcessBackend(args.agent, seed=args.seed, memory_mib=args.memory,
                               iterations=args.iterations)
    bot = Bot(backend, move_time=args.time)
    return serve(bot, sys.stdin, sys.stdout, args.keep_running, PROCESS_START)


__all__ = ["KEEP_RUNNING", "Bot", "BotzoneInputError", "Request", "describe", "main", "move_budget",
           "parse_input", "serve", "time_limit_seconds"]

if __name__ == "__main__":
    sys.exit(main())

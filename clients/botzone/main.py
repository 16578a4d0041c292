"""``othello-botzone``: a Botzone Reversi bot (``docs/reference/judges.md`` section 2).

Input, one turn per process by default:

* JSON, one line: ``{"requests": [...n], "responses": [...n-1], "data": ..., "time_limit": ...}``
  with requests and responses ``{"x": X, "y": Y}`` (x = column, y = row, 0-based; ``-1, -1`` as
  the first request means we are black, later it is a pass);
* simplified I/O: a line ``n``, then 2n-1 lines ``x y`` alternating request and response and
  ending with the new request (data and globaldata lines after them are not needed).

The history is replayed from the standard start (standard rules: more discs win) and the answer
is ``{"response": {"x": X, "y": Y}, "debug": ...}`` (simplified: ``x y``, then debug, data and
globaldata lines); ``-1, -1`` when we must pass, since the judge never passes for us.

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
import json  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any, Callable, TextIO  # noqa: E402

from engine_server import __version__  # noqa: E402
from engine_server.agents import SINGLE_THREAD_AGENT, AgentSpecError  # noqa: E402
from engine_server.config import resolve_agent  # noqa: E402
from engine_server.game import PASS, Color, Game, IllegalMoveError, Position, Rules  # noqa: E402
from engine_server.log import configure_logging, get_logger  # noqa: E402
from protocol.notation import NotationError, botzone_xy, square_from_botzone  # noqa: E402

KEEP_RUNNING = ">>>BOTZONE_REQUEST_KEEP_RUNNING<<<"
DEFAULT_TIME_LIMIT = 1.0   # the Reversi page: 1 s per step
MARGIN_SHARE = 0.2
MIN_MARGIN = 0.2
DEFAULT_MEMORY_MIB = 64    # tree cap; numba and the kernels take about 145 MB besides
DEBUG_LIMIT = 1000         # Botzone keeps at most 1 KB of debug text
FIRST_INPUT_WAIT = 0.05    # a first read blocking longer than this means the input came late

log = get_logger("botzone")


class BotzoneInputError(ValueError):
    """Input that is not a Botzone Reversi turn, or a history that breaks the rules."""


# --- parsing -----------------------------------------------------------------------------------
def parse_move(value: Any, what: str = "move") -> int:
    """A request or response: ``{"x": X, "y": Y}``, its JSON text, ``"x y"`` or ``[x, y]``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                return parse_move(json.loads(text), what)
            except json.JSONDecodeError as e:
                raise BotzoneInputError(f"{what}: bad JSON {text[:60]!r}: {e}") from None
        value = text.split()
    if isinstance(value, dict):
        if "x" not in value or "y" not in value:
            raise BotzoneInputError(f"{what}: expected {{\"x\": X, \"y\": Y}}, got {value!r}")
        value = [value["x"], value["y"]]
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise BotzoneInputError(f"{what}: expected x and y, got {value!r}")
    xy = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise BotzoneInputError(f"{what}: x and y must be integers, got {value!r}")
        try:
            xy.append(int(v))
        except ValueError:
            raise BotzoneInputError(f"{what}: x and y must be integers, got {value!r}") from None
    try:
        return square_from_botzone(xy[0], xy[1])
    except NotationError as e:
        raise BotzoneInputError(f"{what}: {e}") from None


def time_limit_seconds(value: Any) -> float | None:
    """The input's ``time_limit`` in seconds: a number or numeric text; values above 100 are
    taken as milliseconds.  Missing or empty gives None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise BotzoneInputError(f"time_limit must be a number, got {value!r}") from None
    if not t > 0:
        raise BotzoneInputError(f"time_limit must be > 0, got {value!r}")
    return t / 1000.0 if t > 100 else t


def move_budget(limit: float) -> float:
    return limit - max(MIN_MARGIN, MARGIN_SHARE * limit)


@dataclass
class Envelope:
    """A full turn input: the whole history of this game."""

    requests: list[int]
    responses: list[int]
    time_limit: float | None = None
    simple: bool = False


@dataclass
class Request:
    """A bare request (keep-running turns after the first)."""

    move: int
    simple: bool = False


def parse_input(line: str, readline: Callable[[], str]) -> Envelope | Request:
    """One input from its first line; a simplified envelope reads its move lines through
    ``readline``."""
    text = line.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise BotzoneInputError(f"input is not JSON ({e}): {text[:80]!r}") from None
        if not isinstance(obj, dict):
            raise BotzoneInputError(f"input must be a JSON object, got {text[:80]!r}")
        if "requests" in obj:
            return _json_envelope(obj)
        if "x" in obj and "y" in obj:
            return Request(parse_move(obj, "request"))
        raise BotzoneInputError(f"JSON input has neither 'requests' nor 'x'/'y': {text[:80]!r}")
    tokens = text.split()
    if len(tokens) == 2:
        return Request(parse_move(tokens, "request"), simple=True)
    if len(tokens) == 1:
        try:
            n = int(tokens[0])
        except ValueError:
            n = 0
        if n >= 1:
            return _simple_envelope(n, readline)
    raise BotzoneInputError(f"not a Botzone input line: {text[:80]!r} (expected JSON, a turn "
                            f"count n, or 'x y')")


def _json_envelope(obj: dict) -> Envelope:
    requests, responses = obj.get("requests"), obj.get("responses", [])
    if not isinstance(requests, list) or not requests:
        raise BotzoneInputError("'requests' must be a non-empty list")
    if not isinstance(responses, list):
        raise BotzoneInputError("'responses' must be a list")
    return Envelope([parse_move(r, f"request {i + 1}") for i, r in enumerate(requests)],
                    [parse_move(r, f"response {i + 1}") for i, r in enumerate(responses)],
                    time_limit_seconds(obj.get("time_limit")))


def _simple_envelope(n: int, readline: Callable[[], str]) -> Envelope:
    requests: list[int] = []
    responses: list[int] = []
    for k in range(2 * n - 1):
        line = readline()
        if not line:
            raise BotzoneInputError(f"simplified input ended after {k} of {2 * n - 1} move "
                                    f"lines")
        target, what = (requests, "request") if k % 2 == 0 else (responses, "response")
        target.append(parse_move(line, f"{what} {k // 2 + 1}"))
    return Envelope(requests, responses, simple=True)


def replay(requests: list[int], responses: list[int]) -> tuple[Game, Color]:
    """The game so far and our colour.  A first request ``-1, -1`` makes us black and is not a
    move; every other ``-1, -1`` is a pass, which the rules must allow."""
    if not requests:
        raise BotzoneInputError("no request: nothing to answer")
    if len(responses) != len(requests) - 1:
        raise BotzoneInputError(f"{len(requests)} requests need {len(requests) - 1} responses, "
                                f"got {len(responses)}")
    me = Color.BLACK if requests[0] == PASS else Color.WHITE
    game = Game(Position.start(Rules.STANDARD))
    for i, req in enumerate(requests):
        if not (i == 0 and me == Color.BLACK):
            _play(game, req, f"request {i + 1}")
        if i < len(responses):
            _play(game, responses[i], f"response {i + 1}")
    if not game.is_over() and game.position.side != me:
        raise BotzoneInputError(f"after the history it is {game.position.side}'s turn, but we "
                                f"play {me}")
    return game, me


def _play(game: Game, move: int, what: str) -> None:
    try:
        game.play(move)
    except IllegalMoveError as e:
        raise BotzoneInputError(f"{what} (move {len(game.moves) + 1}): {e}") from None


# --- the bot -----------------------------------------------------------------------------------
@dataclass
class Answer:
    move: int
    debug: str


@dataclass
class Bot:
    """Game state between turns plus a backend (``search(position, deadline)``)."""

    backend: Any
    move_time: float | None = None          # fixed budget per move, overriding time_limit
    time_limit: float = DEFAULT_TIME_LIMIT
    game: Game | None = None
    me: Color | None = None

    def take(self, item: Envelope | Request) -> None:
        """Bring the game up to the new request; a failure leaves the state as it was."""
        if isinstance(item, Envelope):
            game, me = replay(item.requests, item.responses)
            if item.time_limit is not None:
                self.time_limit = item.time_limit
        elif self.game is None or self.game.is_over():
            game, me = replay([item.move], [])  # the first turn of a (new) game
        else:
            game, me = Game(self.game.start, list(self.game.moves)), self.me
            if game.position.side == me:
                raise BotzoneInputError("a request arrived while it is our turn (our last "
                                        "answer was not accounted for)")
            _play(game, item.move, "request")
        self.game, self.me = game, me

    def answer(self, started: float) -> Answer:
        """Our move for the current position, played into the game."""
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
        debug = (f"{s['agent']} {s['best']} value {s['value']:+.3f} {s['iterations']} it "
                 f"{s['elapsed']:.3f}s reused {s['reused']:.2f} of {budget:.2f}s")
        log.info("searched", move=s["best"], **{k: v for k, v in s.items() if k != "best"})
        return Answer(move, debug[:DEBUG_LIMIT])


def format_answer(answer: Answer, simple: bool) -> str:
    x, y = botzone_xy(answer.move)
    if simple:
        # response, debug, data and globaldata lines; we keep no data
        return f"{x} {y}\n{answer.debug}\n\n\n"
    return json.dumps({"response": {"x": x, "y": y}, "debug": answer.debug},
                      separators=(",", ":")) + "\n"


def serve(bot: Bot, stdin: TextIO, stdout: TextIO, keep_running: bool,
          first_started: float) -> int:
    """Answer inputs from ``stdin``: one (exit 0, or 2 on bad input) or, with keep-running,
    until EOF (bad inputs are reported on stderr and skipped, the game state kept)."""
    first = True
    while True:
        asked = time.monotonic()
        line = stdin.readline()
        arrived = time.monotonic()
        # Botzone hands the first input over at the process start and bills the turn from
        # there; a first input we had to wait for (another harness) and every later turn are
        # billed from their arrival, the wait being the opponent's time.
        started = first_started if first and arrived - asked < FIRST_INPUT_WAIT else arrived
        if not line:
            if not keep_running:
                print("othello-botzone: no input", file=sys.stderr)
                return 2
            return 0
        if not line.strip():
            continue  # blank data/globaldata lines of a simplified input
        first = False
        try:
            item = parse_input(line, stdin.readline)
            bot.take(item)
        except BotzoneInputError as e:
            log.error("bad_input", error=str(e))
            print(f"othello-botzone: {e}", file=sys.stderr, flush=True)
            if not keep_running:
                return 2
            continue
        answer = bot.answer(started)
        stdout.write(format_answer(answer, item.simple))
        if keep_running:
            stdout.write(KEEP_RUNNING + "\n")
        stdout.flush()
        log.info("answered", move=botzone_xy(answer.move),
                 turn_s=round(time.monotonic() - started, 4))
        if not keep_running:
            return 0


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


if __name__ == "__main__":
    sys.exit(main())

"""The numpy-only players: the CS303 ``AI`` class of ``othello-cs303 export`` and the Botzone
bot of ``othello-botzone pack``, both written after the core (:mod:`.core`) and a settings block
the generator writes itself (``SETTINGS``, ``WEIGHTS``).  Botzone's input and output here are
also the engine's own Botzone bot's (:mod:`clients.botzone.main`), which plays the engine's game
and search through the same :class:`Turns` and :func:`serve`.

The generator copies the lines between the ``standalone`` markers; the names imported or
defined above the first marker exist only so that this module can be imported and linted inside
the package.

CS303 (``docs/reference/judges.md`` section 1): ``AI(chessboard_size, color, time_out)``;
``go(chessboard)`` leaves every legal move in ``candidate_list`` as ``(row, col)`` tuples, then
the decision, then each better decision the search finds, so the judge's timer can interrupt it
at any point; the list stays empty when the side must pass.  State is per instance (the judge
runs both players in one process), there are no threads, and nothing catches the judge's timeout
(an ``AssertionError`` raised inside ``go``).

Botzone (section 2): the first input is JSON (one line with ``requests``, ``responses`` and
``time_limit``) or simplified (a line ``n``, then 2n-1 lines ``x y``); x is the column, y the
row, ``-1 -1`` first means we are black and later a pass.  The history is replayed from the
standard start and the answer is one JSON line (simplified: ``x y`` and three more lines).  In
the long-running mode the bot then prints the keep-running line and reads each later turn as a
bare request (JSON or ``x y``); a full input is accepted at any time, and a bare request after
the end of a game starts a new one.  We answer ``-1 -1`` ourselves when we must pass: the judge
never passes for us.  The first turn is billed from the start of the process (Botzone bills the
imports), later ones from the arrival of their request.
"""

from typing import Any

from .core import Engine, board_bits, flips, legal, popcount, squares

SETTINGS: dict[str, Any] = {"rules": 1, "unit": 8, "depth": 60, "solve": -1, "table": 40000,
                            "share": 0.9, "margin": 0.3, "game_time": 170.0,
                            "time_limit": 1.0, "keep_running": True}
WEIGHTS: list[bytes] = []

# >>> standalone
import json  # noqa: E402,I001
import sys  # noqa: E402
import time  # noqa: E402

# --- CS303: class AI -----------------------------------------------------------------------------
COLOR_BLACK = -1
COLOR_WHITE = 1
COLOR_NONE = 0
MAX_CANDIDATES = 999          # the course's checker fails a list of 1000 entries


class AI(object):
    def __init__(self, chessboard_size, color, time_out):
        self.chessboard_size = chessboard_size
        self.color = color
        self.time_out = time_out
        self.candidate_list = []
        # Below the judge's timer: a share of time_out, and at least a fixed margin under it.
        self.cutoff = max(0.05, min(time_out * SETTINGS["share"], time_out - SETTINGS["margin"]))
        self.engine = Engine(WEIGHTS, SETTINGS["unit"], SETTINGS["rules"], SETTINGS["depth"],
                             SETTINGS["solve"], SETTINGS["table"])
        self.used = 0.0               # seconds spent in go this game (the judge allows 180)

    def go(self, chessboard):
        start = time.perf_counter()
        self.candidate_list.clear()
        if self.chessboard_size != 8:
            return None
        mine, theirs = board_bits(chessboard, self.color)
        moves = legal(mine, theirs)
        if not moves:
            return None
        # One C-level call: the judge's timer never sees the list half filled.
        self.candidate_list.extend([divmod(sq, 8) for sq in squares(moves)])
        # The game clock: what is left, spread over our share of the empty squares.
        empties = 64 - popcount(mine | theirs)
        if empties >= 59:
            self.used = 0.0           # a new game (our first or second move)
        left = SETTINGS["game_time"] - self.used
        budget = max(0.05, min(self.cutoff, left / max(1.0, empties / 2.0)))
        try:
            self.engine.search(mine, theirs, start + budget, self._decide)
        finally:
            # kept even when the judge's timer cuts the search short (its exception goes on)
            self.used += time.perf_counter() - start
        return self.candidate_list[-1]

    def _decide(self, sq):
        """Make ``sq`` the decision (the last element) unless it already is."""
        rc = divmod(sq, 8)
        if len(self.candidate_list) >= MAX_CANDIDATES:
            self.candidate_list[-1] = rc
        else:
            self.candidate_list.append(rc)


# --- Botzone: input and output -------------------------------------------------------------------
KEEP_RUNNING = ">>>BOTZONE_REQUEST_KEEP_RUNNING<<<"
PASS = 64                     # a pass, numbered as the engine numbers it (-1 -1 on the wire)
DEBUG_LIMIT = 1000            # Botzone keeps no more than 1 KB of debug text
FIRST_INPUT_WAIT = 0.05       # a first read blocking longer than this means the input came late
SIDES = ("black", "white")


class BotzoneInputError(ValueError):
    """Input that is not a Botzone Reversi turn, or a history that breaks the rules."""


def parse_move(value, what="move"):
    """A request or response as a square (PASS for -1, -1): ``{"x": X, "y": Y}``, its JSON
    text, ``"x y"`` or ``[x, y]``."""
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
    x, y = xy
    if x == -1 and y == -1:
        return PASS
    if not (0 <= x < 8 and 0 <= y < 8):
        raise BotzoneInputError(f"{what}: Botzone x/y out of range 0..7: ({x}, {y})")
    return x + 8 * y


def time_limit_seconds(value):
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


class Envelope(object):
    """A full turn input: the whole history of this game."""

    def __init__(self, requests, responses, time_limit=None, simple=False):
        self.requests = requests
        self.responses = responses
        self.time_limit = time_limit
        self.simple = simple


class Request(object):
    """A bare request (keep-running turns after the first)."""

    def __init__(self, move, simple=False):
        self.move = move
        self.simple = simple


def parse_input(line, readline):
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


def _json_envelope(obj):
    requests, responses = obj.get("requests"), obj.get("responses", [])
    if not isinstance(requests, list) or not requests:
        raise BotzoneInputError("'requests' must be a non-empty list")
    if not isinstance(responses, list):
        raise BotzoneInputError("'responses' must be a list")
    return Envelope([parse_move(r, f"request {i + 1}") for i, r in enumerate(requests)],
                    [parse_move(r, f"response {i + 1}") for i, r in enumerate(responses)],
                    time_limit_seconds(obj.get("time_limit")))


def _simple_envelope(n, readline):
    requests = []
    responses = []
    for k in range(2 * n - 1):
        line = readline()
        if not line:
            raise BotzoneInputError(f"simplified input ended after {k} of {2 * n - 1} move "
                                    f"lines")
        target, what = (requests, "request") if k % 2 == 0 else (responses, "response")
        target.append(parse_move(line, f"{what} {k // 2 + 1}"))
    return Envelope(requests, responses, simple=True)


def replay(requests, responses, game):
    """Play a whole history into ``game``, a new game; our side (0 black, 1 white).  A first
    request -1 -1 makes us black and is not a move; every other one is a pass, which the rules
    must allow."""
    if not requests:
        raise BotzoneInputError("no request: nothing to answer")
    if len(responses) != len(requests) - 1:
        raise BotzoneInputError(f"{len(requests)} requests need {len(requests) - 1} responses, "
                                f"got {len(responses)}")
    me = 0 if requests[0] == PASS else 1
    for i, req in enumerate(requests):
        if not (i == 0 and me == 0):
            game.move(req, f"request {i + 1}")
        if i < len(responses):
            game.move(responses[i], f"response {i + 1}")
    if not game.over() and game.to_move() != me:
        raise BotzoneInputError(f"after the history it is {SIDES[game.to_move()]}'s turn, but "
                                f"we play {SIDES[me]}")
    return me


class Turns(object):
    """What a Botzone bot keeps between turns: ``game``, our side ``me`` and ``time_limit``.

    A bot makes new games (``new_game()``) and answers (``answer(started)``: the square and a
    debug text, the square played into the game); a game has ``move(square, what)`` (raising
    :class:`BotzoneInputError`), ``over()``, ``to_move()`` and ``copy()``."""

    name = "bot"                  # what its messages on stderr start with
    clock = time.perf_counter     # the clock of ``started`` and of its deadlines

    def note(self, event, **fields):
        """An event of :func:`serve` for the bot's log (none here)."""

    def take(self, item):
        """Bring the game up to the new request; a failure leaves the state as it was."""
        if isinstance(item, Envelope):
            game = self.new_game()
            me = replay(item.requests, item.responses, game)
            if item.time_limit is not None:
                self.time_limit = item.time_limit
        elif self.game is None or self.game.over():
            game = self.new_game()
            me = replay([item.move], [], game)       # the first turn of a (new) game
        else:
            game, me = self.game.copy(), self.me
            if game.to_move() == me:
                raise BotzoneInputError("a request arrived while it is our turn (our last "
                                        "answer was not accounted for)")
            game.move(item.move, "request")
        self.game, self.me = game, me


def botzone_xy(square):
    return (-1, -1) if square == PASS else (square % 8, square // 8)


def format_answer(square, debug, simple):
    x, y = botzone_xy(square)
    debug = debug[:DEBUG_LIMIT]
    if simple:
        # response, debug, data and globaldata lines; we keep no data
        return f"{x} {y}\n{debug}\n\n\n"
    return json.dumps({"response": {"x": x, "y": y}, "debug": debug},
                      separators=(",", ":")) + "\n"


def serve(bot, stdin, stdout, keep_running, first_started):
    """Answer inputs from ``stdin``: one (exit 0, or 2 on bad input) or, with keep-running,
    until the input ends (bad inputs are reported on stderr and skipped, the game kept)."""
    first = True
    while True:
        asked = bot.clock()
        line = stdin.readline()
        arrived = bot.clock()
        # Botzone hands the first input over at the process start and bills the turn from
        # there; a first input we had to wait for (another harness) and every later turn are
        # billed from their arrival, the wait being the opponent's time.
        started = first_started if first and arrived - asked < FIRST_INPUT_WAIT else arrived
        if not line:
            if keep_running:
                return 0
            sys.stderr.write(f"{bot.name}: no input\n")
            return 2
        if not line.strip():
            continue  # blank data/globaldata lines of a simplified input
        first = False
        try:
            item = parse_input(line, stdin.readline)
            bot.take(item)
        except BotzoneInputError as e:
            bot.note("bad_input", error=str(e))
            sys.stderr.write(f"{bot.name}: {e}\n")
            sys.stderr.flush()
            if not keep_running:
                return 2
            continue
        square, debug = bot.answer(started)
        stdout.write(format_answer(square, debug, item.simple))
        if keep_running:
            stdout.write(KEEP_RUNNING + "\n")
        stdout.flush()
        bot.note("answered", move=botzone_xy(square), turn_s=round(bot.clock() - started, 4))
        if not keep_running:
            return 0


# --- Botzone: the bot on the core ----------------------------------------------------------------
START_BLACK = 0x0000000810000000      # e4, d5
START_WHITE = 0x0000001008000000      # d4, e5


class Game(object):
    """Bitboards of black and white and the side to move (0 black, 1 white)."""

    def __init__(self, bits=(START_BLACK, START_WHITE), side=0):
        self.bits = list(bits)
        self.side = side

    def copy(self):
        return Game(self.bits, self.side)

    def to_move(self):
        return self.side

    def over(self):
        b, w = self.bits
        return not legal(b, w) and not legal(w, b)

    def move(self, sq, what):
        mine, theirs = self.bits[self.side], self.bits[1 - self.side]
        moves = legal(mine, theirs)
        if sq == PASS:
            if moves:
                raise BotzoneInputError(f"{what}: a pass while {SIDES[self.side]} has a move")
        elif not moves >> sq & 1:
            raise BotzoneInputError(f"{what}: illegal move x={sq % 8} y={sq // 8}")
        else:
            f = flips(mine, theirs, sq)
            self.bits[self.side] = mine | f | 1 << sq
            self.bits[1 - self.side] = theirs ^ f
        self.side = 1 - self.side


class Bot(Turns):
    def __init__(self):
        self.engine = Engine(WEIGHTS, SETTINGS["unit"], SETTINGS["rules"], SETTINGS["depth"],
                             SETTINGS["solve"], SETTINGS["table"])
        self.game = None
        self.me = 0
        self.time_limit = SETTINGS["time_limit"]

    def new_game(self):
        return Game()

    def answer(self, started):
        game = self.game
        if game.over():
            return PASS, "game over: nothing to play"
        mine, theirs = game.bits[self.me], game.bits[1 - self.me]
        if not legal(mine, theirs):
            game.move(PASS, "our pass")
            return PASS, "no legal move: pass"
        eng = self.engine
        sq = eng.search(mine, theirs, started + SETTINGS["share"] * self.time_limit)
        game.move(sq, "our move")
        info = "depth %d%s score %+.2f nodes %d in %.3f s" % (
            eng.depth_done, " exact" if eng.exact else "", eng.score / float(eng.unit),
            eng.nodes, time.perf_counter() - started)
        return sq, info


def main(started, stdin=None, stdout=None):
    """The Botzone bot on stdin and stdout; ``started``: the process start."""
    return serve(Bot(), stdin or sys.stdin, stdout or sys.stdout, SETTINGS["keep_running"],
                 started)
# <<< standalone

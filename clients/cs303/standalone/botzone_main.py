"""The ``__main__.py`` of a Botzone package (``othello-botzone pack``), after the core.

The contract (``docs/reference/judges.md`` section 2): the first input is JSON (one line with
``requests``, ``responses`` and ``time_limit``) or simplified (a line ``n``, then 2n-1 lines
``x y``); x is the column, y the row, ``-1 -1`` first means we are black and later a pass.  The
history is replayed from the standard start and the answer is one JSON line (simplified: ``x y``
and three more lines).  In the long-running mode (on unless the settings turn it off) the bot
then prints the keep-running line and reads each later turn as a bare request (JSON or
``x y``); a full input is accepted at any time, and a bare request after the end of a game
starts a new one.  We answer ``-1 -1`` ourselves when we must pass: the judge never passes for
us.  The first turn's budget counts from the start of the process, since Botzone bills the
imports.
"""

from typing import Any

from .core import Engine, flips, legal

SETTINGS: dict[str, Any] = {"rules": 0, "unit": 8, "depth": 60, "solve": -1, "table": 40000,
                            "time_limit": 1.0, "share": 0.8, "keep_running": True}
WEIGHTS: list[bytes] = []
STARTED = 0.0

# >>> standalone
import json  # noqa: E402,I001
import sys  # noqa: E402
import time  # noqa: E402

KEEP_RUNNING = ">>>BOTZONE_REQUEST_KEEP_RUNNING<<<"
START_BLACK = 0x0000000810000000      # e4, d5
START_WHITE = 0x0000001008000000      # d4, e5


class BadInput(ValueError):
    pass


def parse_xy(value):
    """A request or response as a square, -1 for ``-1, -1``."""
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("{") else text.split()
    if isinstance(value, dict):
        value = [value.get("x"), value.get("y")]
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise BadInput("expected x and y, got %r" % (value,))
    x, y = int(value[0]), int(value[1])
    if x == -1 and y == -1:
        return -1
    if not (0 <= x < 8 and 0 <= y < 8):
        raise BadInput("square off the board: %r" % (value,))
    return y * 8 + x


class Game(object):
    """Bitboards of black and white and the side to move (0 black, 1 white)."""

    def __init__(self):
        self.bits = [START_BLACK, START_WHITE]
        self.side = 0

    def over(self):
        b, w = self.bits
        return not legal(b, w) and not legal(w, b)

    def play(self, sq):
        mine, theirs = self.bits[self.side], self.bits[1 - self.side]
        moves = legal(mine, theirs)
        if sq < 0:
            if moves:
                raise BadInput("a pass while a move exists")
        else:
            if not moves >> sq & 1:
                raise BadInput("illegal move x=%d y=%d" % (sq % 8, sq // 8))
            f = flips(mine, theirs, sq)
            self.bits[self.side] = mine | f | 1 << sq
            self.bits[1 - self.side] = theirs ^ f
        self.side = 1 - self.side


def replay(requests, responses):
    """(game, our side) from a whole history."""
    if len(responses) != len(requests) - 1:
        raise BadInput("%d requests need %d responses" % (len(requests), len(requests) - 1))
    me = 0 if requests[0] == -1 else 1
    game = Game()
    for i, req in enumerate(requests):
        if not (i == 0 and me == 0):
            game.play(req)
        if i < len(responses):
            game.play(responses[i])
    return game, me


class Bot(object):
    def __init__(self):
        self.engine = Engine(WEIGHTS, SETTINGS["unit"], SETTINGS["rules"], SETTINGS["depth"],
                             SETTINGS["solve"], SETTINGS["table"])
        self.game = None
        self.me = 0
        self.time_limit = SETTINGS["time_limit"]

    def take(self, line, readline):
        """Bring the game up to date with one input; returns whether it was simplified."""
        text = line.strip()
        if text.startswith("{"):
            obj = json.loads(text)
            if "requests" in obj:
                reqs = [parse_xy(r) for r in obj["requests"]]
                resps = [parse_xy(r) for r in obj.get("responses", [])]
                self.game, self.me = replay(reqs, resps)
                if obj.get("time_limit"):
                    t = float(obj["time_limit"])
                    self.time_limit = t / 1000.0 if t > 100 else t
                return False
            self.request(parse_xy(obj))
            return False
        tokens = text.split()
        if len(tokens) == 1:
            n = int(tokens[0])
            lines = [readline() for _ in range(2 * n - 1)]
            moves = [parse_xy(v) for v in lines]
            self.game, self.me = replay(moves[0::2], moves[1::2])
            return True
        self.request(parse_xy(tokens))
        return True

    def request(self, sq):
        if self.game is None or self.game.over():
            self.game, self.me = replay([sq], [])
        else:
            self.game.play(sq)

    def answer(self, started):
        game = self.game
        if game.side != self.me or game.over():
            return -1, "not our turn, or the game is over"
        mine, theirs = game.bits[self.me], game.bits[1 - self.me]
        if not legal(mine, theirs):
            game.play(-1)
            return -1, "no legal move: pass"
        eng = self.engine
        sq = eng.search(mine, theirs, started + SETTINGS["share"] * self.time_limit)
        game.play(sq)
        info = "depth %d%s score %+.2f nodes %d in %.3f s" % (
            eng.depth_done, " exact" if eng.exact else "", eng.score / float(eng.unit),
            eng.nodes, time.perf_counter() - started)
        return sq, info


def format_answer(sq, debug, simple):
    x, y = (-1, -1) if sq < 0 else (sq % 8, sq // 8)
    if simple:
        return "%d %d\n%s\n\n\n" % (x, y, debug)
    return json.dumps({"response": {"x": x, "y": y}, "debug": debug},
                      separators=(",", ":")) + "\n"


def main(stdin=None, stdout=None):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    bot = Bot()
    first = True
    while True:
        line = stdin.readline()
        started = STARTED if first else time.perf_counter()
        if not line:
            return 0
        if not line.strip():
            continue
        first = False
        try:
            simple = bot.take(line, stdin.readline)
        except (ValueError, KeyError, TypeError) as e:
            sys.stderr.write("bad input: %s\n" % (e,))
            sys.stderr.flush()
            if not SETTINGS["keep_running"]:
                return 2
            continue
        sq, debug = bot.answer(started)
        stdout.write(format_answer(sq, debug[:1000], simple))
        if SETTINGS["keep_running"]:
            stdout.write(KEEP_RUNNING + "\n")
        stdout.flush()
        if not SETTINGS["keep_running"]:
            return 0
# <<< standalone


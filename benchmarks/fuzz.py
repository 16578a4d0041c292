"""Protocol fuzzing: random and mutated command lines against the NBoard and GTP handlers.

``othello-bench fuzz --lines N`` drives the I/O-free handlers of one session with N lines per
protocol and checks after every line that

* the handler raised nothing (a bug there would leave a GUI or judge waiting);
* GTP: every command got exactly one well-formed response (``=``/``?`` header, a body, a blank
  line; an analysis stream is closed by the next line), and a rejected command (``?``) changed
  neither the game, the rules nor the agent;
* NBoard: every output line is one the GUI parses (``pong``, ``status``, ``search``, ...), and a
  line answered with an error ``status`` changed nothing;
* the game is consistent (its moves replayed from its start give its position);

and at the end that the engine still answers (``protocol_version`` / ``ping``).

The same generator feeds the hypothesis tests in ``tests/test_fuzz.py``.
"""

from __future__ import annotations

import argparse
import random
import re
import threading
import time
from dataclasses import dataclass, field

from protocol import gtp

from .common import emit

SQUARES = [f"{c}{r}" for c in "abcdefgh" for r in range(1, 9)]
BAD_SQUARES = ["i9", "z0", "a0", "h9", "aa1", "-1", "99", "pas", "a", "", "f5f5", "A10"]
HUGE = ["999999999999999999999", "-99999999999", "1e308", "nan", "inf", "-0", "0x10",
        "18446744073709551616", "3.5", "٣"]
CONTROL = "".join(chr(c) for c in range(32)) + "\x7f\u200b\ufeff\u2028"

GTP_COMMANDS = [
    "protocol_version", "name", "version", "known_command play", "list_commands",
    "boardsize 8", "clear_board", "komi 0", "play black {sq}", "play white {sq}",
    "play b pass", "genmove black", "genmove white", "reg_genmove b", "undo", "showboard",
    "final_score", "set_game othello", "list_games", "time_settings 10 0 0",
    "time_left black 5 0", "kgs-time_settings byoyomi 10 1 1",
    "kata-time_settings fischer 10 0.1", "kata-list_time_settings", "lz-analyze 5",
    "kata-analyze interval 5", "lz-genmove_analyze b 5", "stop", "othello-rules",
    "othello-rules reversed", "othello-rules standard", "othello-agent",
    "othello-agent uct:iterations=30", "othello-agent random",
    "othello-setboard {board} X",
]
NBOARD_COMMANDS = [
    "nboard 2", "set depth {small}", "set game {ggf}", "set contempt 0", "move {SQ}",
    "move {SQ}/1.5/0.2", "move {SQ}/{num}/{num}", "move PA", "hint {small}", "go",
    "ping {small}", "learn",
    "analyze", "clear", "{SQ}",
]
NBOARD_PREFIXES = ("===", "pong ", "status", "set myname ", "search ", "book ", "nodestats ",
                   "analysis ", "learned")
START_BO = "8 ---------------------------O*------*O--------------------------- *"


CLOCKS = ["5:00", "1:00:00", "0", "nan", "inf", "-1", "1.2:3:4:5", "x", "2.00:01:00", "1e9"]


def _ggf(rng: random.Random) -> str:
    moves = "".join(f"{'BW'[i % 2]}[{rng.choice(SQUARES).upper()}]"
                    for i in range(rng.randint(0, 4)))
    ti = f"TI[{rng.choice(CLOCKS)}]" if rng.random() < 0.5 else ""
    return f"(;GM[Othello]PC[fuzz]{ti}TY[8]BO[{START_BO}]{moves};)"


def _fill(template: str, rng: random.Random) -> str:
    board = "".join(rng.choice("XO-") for _ in range(64))
    return (template.replace("{sq}", rng.choice(SQUARES + BAD_SQUARES))
            .replace("{SQ}", rng.choice(SQUARES).upper())
            .replace("{small}", str(rng.randint(1, 4)))
            .replace("{num}", rng.choice(HUGE + ["0.5", "", "-3"]))
            .replace("{board}", board).replace("{ggf}", _ggf(rng)))


def mutate(line: str, rng: random.Random) -> str:
    """One random damage to a line: tokens dropped, doubled, swapped or replaced by bad
    squares or huge numbers, bytes replaced by control characters, GGF cut short, or the line
    blown up past any sane length."""
    tokens = line.split(" ")
    kind = rng.randrange(9)
    if kind == 0 and len(tokens) > 1:
        del tokens[rng.randrange(len(tokens))]
    elif kind == 1:
        i = rng.randrange(len(tokens))
        tokens.insert(i, tokens[i])
    elif kind == 2:
        tokens[rng.randrange(len(tokens))] = rng.choice(BAD_SQUARES + HUGE)
    elif kind == 3:
        tokens.append(rng.choice(HUGE))
    elif kind == 4 and line:
        chars = list(line)
        for _ in range(rng.randint(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice(CONTROL)
        return "".join(chars)
    elif kind == 5:
        return line[:rng.randrange(len(line) + 1)]
    elif kind == 6:
        return line + " " + "x" * rng.choice([1000, 70_000])
    elif kind == 7:
        return str(rng.randint(0, 10 ** 12)) + " " + line
    else:
        return "".join(rng.choice(CONTROL + "abc =?#[]();/-") for _ in range(rng.randint(0, 40)))
    return " ".join(tokens)


def fuzz_line(protocol: str, rng: random.Random) -> str:
    """A valid command half the time, a damaged one otherwise (never ``quit``)."""
    base = _fill(rng.choice(GTP_COMMANDS if protocol == "gtp" else NBOARD_COMMANDS), rng)
    line = base if rng.random() < 0.5 else mutate(base, rng)
    # quitting ends the session; the stdio and ZeroMQ tests check that path on their own
    return "" if re.search(r"(^|\s)quit($|\s)", line) else line


@dataclass
class FuzzStats:
    protocol: str
    lines: int = 0
    responses: int = 0
    rejected: int = 0
    moves_played: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


class FuzzTarget:
    """One session and its protocol handler, with every output line collected."""

    def __init__(self, protocol: str, agent: str = "uct:iterations=30", move_time: float = 0.05):
        from engine_server.commands.gtp import GtpHandler
        from engine_server.commands.nboard import NBoardHandler
        from engine_server.session import EngineOptions, Output, Session

        self.protocol = protocol
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.session = Session(EngineOptions(agent=agent, move_time=move_time, warmup=False),
                               Output(self._sink))
        self.handler = (GtpHandler(self.session) if protocol == "gtp"
                        else NBoardHandler(self.session, hint_interval=0.01))

    def _sink(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def state(self) -> tuple:
        s = self.session
        return (s.game.start, tuple(s.game.moves), int(s.rules), s.agent_spec)

    def close(self) -> None:
        self.session.close()


def _gtp_responses(lines: list[str]) -> tuple[int, list[str], bool]:
    """(complete responses, their header lines, a response still open) in GTP output."""
    count, heads, open_ = 0, [], False
    for line in lines:
        if not open_:
            if not gtp.is_response_head(line):
                raise AssertionError(f"GTP output outside a response: {line[:80]!r}")
            heads.append(line)
            open_ = True
        elif line == "":
            count += 1
            open_ = False
    return count, heads, open_


def check_line(t: FuzzTarget, line: str, stats: FuzzStats) -> None:
    """Feed one line and check the invariants of the module docstring."""
    from protocol.text import clean_line

    before = t.state()
    n0 = len(t.lines)
    was_open = t.protocol == "gtp" and bool(getattr(t.handler, "_analysis", None))
    try:
        alive = t.handler.handle_line(line)
    except Exception as e:  # noqa: BLE001 - a fuzz failure is any exception at all
        stats.failures.append(f"{line[:80]!r}: {type(e).__name__}: {e}")
        return
    stats.lines += 1
    if not alive:
        stats.failures.append(f"{line[:80]!r}: the handler quit")
        return
    game = t.session.game
    from engine_server.game import Game

    if Game.from_moves(game.moves, start=game.start).position != game.position:
        stats.failures.append(f"{line[:80]!r}: the game is inconsistent")
    stats.moves_played += max(0, len(game.moves) - len(before[1]))
    with t._lock:
        new = t.lines[n0:]
    if t.protocol == "gtp":
        if was_open:  # the line first closed the running analysis with its blank line
            if not new or new[0] != "":
                stats.failures.append(f"{line[:80]!r}: analysis not closed: {new[:2]}")
                return
            new = new[1:]
        command = clean_line(line, cut_comments=True)
        if not command:
            if new:
                stats.failures.append(f"{line[:80]!r}: output for an empty line: {new[:2]}")
            return
        try:
            count, heads, open_ = _gtp_responses(new)
        except AssertionError as e:
            stats.failures.append(f"{line[:80]!r}: {e}")
            return
        if count + open_ != 1:
            stats.failures.append(f"{line[:80]!r}: {count + open_} responses: {new[:3]}")
            return
        stats.responses += 1
        if "internal error" in heads[0]:
            stats.failures.append(f"{line[:80]!r}: {heads[0][:120]}")
        if not gtp.parse_response([heads[0]]).ok:
            stats.rejected += 1
            if t.state() != before:
                stats.failures.append(f"{line[:80]!r}: rejected but the state changed")
    else:
        bad = [x for x in new if x and not x.startswith(NBOARD_PREFIXES)]
        if bad:
            stats.failures.append(f"{line[:80]!r}: not an NBoard line: {bad[0][:80]!r}")
        internal = [x for x in new if x.startswith("status internal error")]
        if internal:
            stats.failures.append(f"{line[:80]!r}: {internal[0][:120]}")
        errors = [x for x in new if x.startswith(("status bad", "status illegal"))]
        if errors:
            stats.rejected += 1
            if t.state() != before:
                stats.failures.append(f"{line[:80]!r}: reported an error but changed state")
        stats.responses += bool(new)


def still_answers(t: FuzzTarget) -> bool:
    """The engine answers a cheap command after the fuzzing."""
    n0 = len(t.lines)
    if t.protocol == "gtp":
        t.handler.handle_line("")  # closes an analysis, if one runs
        n0 = len(t.lines)
        t.handler.handle_line("protocol_version")
        return t.lines[n0:] == ["= 2", ""]
    t.handler.handle_line("ping 424242")
    return "pong 424242" in t.lines[n0:]


def run_fuzz(protocol: str, n: int, seed: int = 1, agent: str = "uct:iterations=30",
             progress: bool = False) -> FuzzStats:
    rng = random.Random(seed)
    stats = FuzzStats(protocol)
    t = FuzzTarget(protocol, agent)
    t0 = time.monotonic()
    try:
        for i in range(n):
            check_line(t, fuzz_line(protocol, rng), stats)
            if progress and (i + 1) % 10_000 == 0:
                print(f"  {protocol}: {i + 1} lines, {len(stats.failures)} failures",
                      flush=True)
            if len(t.lines) > 100_000:
                with t._lock:
                    del t.lines[:-1000]
        if not still_answers(t):
            stats.failures.append("the engine no longer answers")
    finally:
        t.close()
    stats.seconds = time.monotonic() - t0
    return stats


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="random and mutated protocol lines against both handlers")
    p.add_argument("--lines", type=int, default=10_000, help="lines per protocol")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--protocol", choices=("gtp", "nboard", "both"), default="both")
    p.add_argument("--agent", default="uct:iterations=30")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from engine_server.log import configure_logging

    configure_logging("critical")  # the fuzz provokes logged errors on purpose
    failed = False
    for proto in (("gtp", "nboard") if args.protocol == "both" else (args.protocol,)):
        s = run_fuzz(proto, args.lines, args.seed, args.agent, progress=not args.json)
        failed |= bool(s.failures)
        emit({"bench": "fuzz", "protocol": proto, "lines": s.lines, "responses": s.responses,
              "rejected": s.rejected, "moves_played": s.moves_played,
              "seconds": round(s.seconds, 2), "lines_per_s": round(s.lines / s.seconds, 1),
              "failures": len(s.failures), "first_failures": s.failures[:5]}, args.json)
    return 1 if failed else 0

"""A local usability checker for CS303 player files, modelled on the course's (Lab1) test and on
the judge that runs the games (``docs/reference/judges.md`` section 1).

What it does to a file, in order:

* the source checks the platform applies before anything runs: a plain substring scan for the
  forbidden words, and (ours) whether the file parses as the platform's Python 3.7, imports only
  what the platform has, and keeps mutable state on the class, where both players of a game
  would share it;
* builds ``AI(8, 1, t)`` and ``AI(8, -1, t)`` from two fresh loads of the file, timed together;
* runs ``go(np.copy(board))`` under the judge's timer (SIGALRM, the exception an
  ``AssertionError``, as ``timeout_decorator`` does; :mod:`.judge`, which the referee's CS303
  worker uses too) on the start position, an opening
  position for white, seeded random positions of both colours (asymmetric ones preferred, so a
  row/column swap shows), forced passes and the empty board, and checks ``candidate_list``;
* optionally plays a whole game of the file against itself in this one process, as the judge
  does (``--game``), and runs the course's case files (``--cases``).

``candidate_list`` passes when: it is a list of fewer than 1000 ``(row, col)`` tuples of ints;
the set of its entries equals the set of legal moves (the course's criterion); its last element
is legal; it is empty when the side must pass; and ``go`` returned within ``time_out``.
"""

from __future__ import annotations

import ast
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine_server.game import PASS, Color, Position, Rules
from protocol import notation as nt

# The judge's emulation is shared with the referee's worker; GoOutcome and JudgeTimeout stay
# importable from here for older callers.
from .judge import GoOutcome, JudgeTimeout, judge_go, load_ai_class  # noqa: F401

# The platform's scan is a plain substring search of the uploaded file, comments included.
FORBIDDEN = ("import os", "exec")
PLATFORM_PYTHON = (3, 7)
PLATFORM_MODULES = frozenset({"numpy"})
MAX_ENTRIES = 1000
CONSTRUCT_LIMIT = 5.0      # the ancestor checker: two constructions within 5 s
GAME_TOTAL_TIME = 180.0    # per player and game
COLOR_OF = {Color.BLACK: -1, Color.WHITE: 1}


# --- candidate_list semantics ------------------------------------------------------------------
def expected_moves(position: Position) -> set[tuple[int, int]]:
    return {nt.row_col(m) for m in position.legal_moves() if m != PASS}


def candidate_problems(candidates: Any, expected: set[tuple[int, int]]) -> list[str]:
    """Everything wrong with ``candidates`` for a position whose legal set is ``expected``."""
    if not isinstance(candidates, list):
        return [f"candidate_list is a {type(candidates).__name__}, not a list"]
    problems = []
    if len(candidates) >= MAX_ENTRIES:
        problems.append(f"candidate_list has {len(candidates)} entries (the limit is "
                        f"{MAX_ENTRIES - 1})")
    bad = [e for e in candidates if not _is_move_tuple(e)]
    if bad:
        problems.append(f"entries must be (row, col) tuples of ints; got {bad[:3]!r}"
                        + (" ..." if len(bad) > 3 else ""))
        return problems
    got = {(int(r), int(c)) for r, c in candidates}
    if not expected:
        if candidates:
            problems.append(f"the side must pass, so the list must stay empty; got "
                            f"{_fmt(candidates)}")
        return problems
    if not candidates:
        problems.append(f"empty list, but there are legal moves {_fmt(sorted(expected))}")
        return problems
    missing, extra = expected - got, got - expected
    if missing:
        problems.append(f"legal moves missing: {_fmt(sorted(missing))}")
    if extra:
        problems.append(f"entries that are not legal moves: {_fmt(sorted(extra))}")
    last = (int(candidates[-1][0]), int(candidates[-1][1]))
    if last not in expected:
        problems.append(f"the decision (last element) {last} is not a legal move")
    return problems


def _is_move_tuple(e: Any) -> bool:
    return (type(e) is tuple and len(e) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in e))


def _fmt(moves) -> str:
    return "[" + ", ".join(f"({int(r)}, {int(c)})" for r, c in moves) + "]"


# --- positions ---------------------------------------------------------------------------------
@dataclass
class Case:
    label: str
    position: Position                      # side to move = the colour asked to play
    expected: set[tuple[int, int]] | None = None   # from a case file; None: the rules decide

    @property
    def legal(self) -> set[tuple[int, int]]:
        return self.expected if self.expected is not None else expected_moves(self.position)


def is_asymmetric(position: Position) -> bool:
    """True when transposing rows and columns changes the legal set: a swap would show."""
    legal = expected_moves(position)
    return legal != {(c, r) for r, c in legal}


def random_game(rng: random.Random, rules: Rules) -> list[Position]:
    """Positions of one uniformly random game, start to end."""
    pos = Position.start(rules)
    out = [pos]
    while not pos.is_game_over():
        pos = pos.play(rng.choice(pos.legal_moves()))
        out.append(pos)
    return out


def sample_cases(seed: int = 0, per_colour: int = 4, rules: Rules | str = Rules.REVERSED,
                 passes: int = 2) -> list[Case]:
    """The checker's positions: fixed ones, ``per_colour`` random positions with moves for each
    colour (asymmetric ones, from different games), and ``passes`` forced passes."""
    rules = Rules.parse(rules)
    rng = random.Random(seed)
    start = Position.start(rules)
    opening = start.play(rng.choice(start.legal_moves()))
    cases = [Case("start position, black to move", start),
             Case(f"after black's {nt.square_name(_last_move(start, opening))}, white to move",
                  opening)]
    wanted = {Color.BLACK: per_colour, Color.WHITE: per_colour}
    pass_cases: list[Case] = []
    for number in range(1, 2001):
        if not any(wanted.values()) and len(pass_cases) >= passes:
            break
        game = random_game(rng, rules)
        if len(pass_cases) < passes:
            # both colours: the hand-made pass below is white's
            pass_side = Color.BLACK if len(pass_cases) % 2 == 0 else Color.WHITE
            for pos in game:
                if pos.must_pass() and pos.side == pass_side:
                    pass_cases.append(Case(f"forced pass, {pos.side} to move, "
                                           f"{64 - pos.empties} discs (random game {number})",
                                           pos))
                    break
        side = Color.BLACK if wanted[Color.BLACK] >= wanted[Color.WHITE] else Color.WHITE
        if wanted[side] == 0 or len(game) < 8:
            continue
        ply = rng.randrange(4, len(game) - 1)
        choices = [p for p in game[ply:] if p.side == side and not p.must_pass()
                   and not p.is_game_over() and is_asymmetric(p)
                   and all(c.position != p for c in cases)]
        if choices:
            pos = choices[0]
            cases.append(Case(f"random position, {side} to move, {64 - pos.empties} discs, "
                              f"{len(expected_moves(pos))} legal", pos))
            wanted[side] -= 1
    # A hand-made pass: white's only disc sits next to black's corner and cannot flank it.
    cases.append(Case("forced pass (black a1, white b1), white to move",
                      Position(1 << 0, 1 << 1, Color.WHITE, rules)))
    cases.extend(pass_cases)
    cases.append(Case("empty board (no discs), black to move", Position(0, 0, Color.BLACK, rules)))
    return cases


def _last_move(before: Position, after: Position) -> int:
    added = (after.black | after.white) & ~(before.black | before.white)
    return added.bit_length() - 1


def parse_case_file(text: str, side: Color, rules: Rules | str = Rules.REVERSED) -> list[Case]:
    """The course's case files: blocks split by ``===============``; each block has partial
    boards split by ``---------------``, each an offset line ``row col`` and digit rows
    (``0`` empty, ``1`` white, ``2`` black); a partial board holding ``3`` marks the expected
    moves instead.  Text outside a ``###############`` pair is ignored when the pair exists."""
    rules = Rules.parse(rules)
    parts = text.split("###############")
    body = parts[1] if len(parts) >= 3 else text
    cases = []
    for number, block in enumerate(body.split("==============="), 1):
        if not block.strip():
            continue
        board = np.zeros((8, 8), dtype=np.int64)
        expected: set[tuple[int, int]] = set()
        for sub in block.split("---------------"):
            tokens = sub.split()
            if not tokens:
                continue
            try:
                r0, c0 = int(tokens[0]), int(tokens[1])
                rows = [[int(ch) for ch in line] for line in tokens[2:]]
            except (ValueError, IndexError):
                raise ValueError(f"case {number}: a partial board needs an offset line 'row col' "
                                 f"and rows of digits, got {sub.strip()[:40]!r}") from None
            for i, row in enumerate(rows):
                for j, v in enumerate(row):
                    r, c = r0 + i, c0 + j
                    if v and not (0 <= r < 8 and 0 <= c < 8):
                        raise ValueError(f"case {number}: square ({r}, {c}) is off the board")
                    if v == 3:
                        expected.add((r, c))
                    elif v in (1, 2):
                        board[r, c] = 1 if v == 1 else -1
                    elif v != 0:
                        raise ValueError(f"case {number}: digit {v} (accepted: 0 1 2 3)")
        pos = Position.from_cs303(board, side, rules)
        cases.append(Case(f"case file #{number}, {side} to move", pos, expected))
    return cases


# --- source checks -----------------------------------------------------------------------------
def scan_source(text: str) -> list[str]:
    """Forbidden substrings with their line numbers (the platform refuses the upload)."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for word in FORBIDDEN:
            if word in line:
                hits.append(f"line {n} contains {word!r}: {line.strip()[:70]}")
    return hits


def syntax_problem(text: str, version: tuple[int, int] = PLATFORM_PYTHON) -> str | None:
    try:
        ast.parse(text, feature_version=version)
    except SyntaxError as e:
        return f"does not parse as Python {version[0]}.{version[1]}: line {e.lineno}: {e.msg}"
    return None


def foreign_imports(text: str) -> list[str]:
    """Top-level modules imported that the platform lacks (it has the stdlib and numpy)."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
    stdlib = getattr(sys, "stdlib_module_names", frozenset())
    return sorted(n for n in names if n and n not in stdlib and n not in PLATFORM_MODULES
                  and n != "__future__")


def shared_class_state(cls: type) -> list[str]:
    """Class attributes holding mutable containers: one object for both players of a game."""
    found = []
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("__") and isinstance(value, (list, dict, set, bytearray,
                                                                np.ndarray)):
                found.append(f"{klass.__name__}.{name} ({type(value).__name__})")
    return found


# --- a judge-style game ------------------------------------------------------------------------
@dataclass
class GameRecord:
    moves: list[int] = field(default_factory=list)
    final: Position | None = None
    problems: list[str] = field(default_factory=list)
    loser: Color | None = None
    max_elapsed: float = 0.0
    total_time: dict = field(default_factory=lambda: {Color.BLACK: 0.0, Color.WHITE: 0.0})

    @property
    def ok(self) -> bool:
        return not self.problems


def play_judge_game(black: Any, white: Any, time_out: float,
                    rules: Rules | str = Rules.REVERSED, total_time: float = GAME_TOTAL_TIME,
                    start: Position | None = None) -> GameRecord:
    """Play the judge's loop: ``go`` under the timer, the last element played even after a
    timeout, an empty list a pass, anything else that is wrong a lost game."""
    pos = start if start is not None else Position.start(rules)
    rec = GameRecord()
    while not pos.is_game_over():
        ai = black if pos.side == Color.BLACK else white
        out = judge_go(ai, pos.to_cs303(), time_out)
        rec.max_elapsed = max(rec.max_elapsed, out.elapsed)
        rec.total_time[pos.side] += out.elapsed
        where = f"move {len(rec.moves) + 1} ({pos.side})"
        if out.error:
            rec.problems.append(f"{where}: go raised\n{out.error}")
        if out.timed_out:
            rec.problems.append(f"{where}: go ran past {time_out} s")
        problems = candidate_problems(ai.candidate_list, expected_moves(pos))
        rec.problems.extend(f"{where}: {p}" for p in problems)
        if rec.total_time[pos.side] > total_time:
            rec.problems.append(f"{where}: more than {total_time} s in total")
        if out.error or problems or rec.total_time[pos.side] > total_time:
            rec.loser = pos.side
            break
        cl = ai.candidate_list
        move = PASS if not cl else nt.square_from_row_col(int(cl[-1][0]), int(cl[-1][1]))
        rec.moves.append(move)
        pos = pos.play(move)
    rec.final = pos
    return rec


# --- the whole check ---------------------------------------------------------------------------
@dataclass
class Item:
    status: str      # "PASS", "FAIL", "WARN"
    title: str
    detail: list[str] = field(default_factory=list)


@dataclass
class Report:
    path: Path
    items: list[Item] = field(default_factory=list)

    def add(self, status: str, title: str, detail: list[str] | None = None) -> None:
        self.items.append(Item(status, title, detail or []))

    @property
    def failures(self) -> int:
        return sum(i.status == "FAIL" for i in self.items)

    @property
    def ok(self) -> bool:
        return self.failures == 0

    def header(self) -> str:
        return f"CS303 usability check of {self.path}"

    @staticmethod
    def render_item(it: Item) -> str:
        lines = [f"  [{it.status}] {it.title}"]
        for d in it.detail:
            for sub in d.rstrip().splitlines():
                lines.append(f"         {sub}")
        return "\n".join(lines)

    def summary(self) -> str:
        warns = sum(i.status == "WARN" for i in self.items)
        return (f"{'OK' if self.ok else 'FAILED'}: {len(self.items)} checks, "
                f"{self.failures} failed, {warns} warnings")

    def render(self) -> str:
        return "\n".join([self.header(), *(self.render_item(it) for it in self.items),
                          self.summary()])

    def render_quiet(self) -> str:
        """Only what did not pass (failures and warnings, with their details), then the
        verdict: one line when everything passed."""
        return "\n".join([*(self.render_item(it) for it in self.items if it.status != "PASS"),
                          self.summary()])


def run_check(path: str | Path, time_out: float = 5.0, per_colour: int = 4, seed: int = 0,
              rules: Rules | str = Rules.REVERSED, game: bool = False,
              case_files: dict[Color, str] | None = None,
              echo: Callable[[str], None] | None = None) -> Report:
    """Check a player file; ``echo`` gets each finished check as the report renders it
    (``Report.render_item``), as it goes."""
    path = Path(path)
    rules = Rules.parse(rules)
    report = Report(path)

    def add(status, title, detail=None):
        report.add(status, title, detail)
        if echo:
            echo(report.render_item(report.items[-1]))

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        add("FAIL", f"cannot read the file: {e}")
        return report
    hits = scan_source(text)
    add("FAIL" if hits else "PASS",
        "source scan for " + ", ".join(repr(w) for w in FORBIDDEN), hits)
    problem = syntax_problem(text)
    add("FAIL" if problem else "PASS",
        f"parses as Python {PLATFORM_PYTHON[0]}.{PLATFORM_PYTHON[1]}", [problem] if problem else [])
    if problem and syntax_problem(text, sys.version_info[:2]):
        return report
    foreign = foreign_imports(text)
    if foreign:
        add("WARN", "imports modules the platform does not have (it offers the standard library "
            "and numpy): " + ", ".join(foreign),
            ["fine for local play; upload a self-contained file to the platform"])

    t0 = time.monotonic()
    try:
        classes = [load_ai_class(path), load_ai_class(path)]
        players = {Color.WHITE: classes[0](8, 1, time_out),
                   Color.BLACK: classes[1](8, -1, time_out)}
    except Exception:
        add("FAIL", "load the file and build AI(8, 1, t) and AI(8, -1, t)",
            [traceback.format_exc(limit=6)])
        return report
    took = time.monotonic() - t0
    add("PASS" if took < CONSTRUCT_LIMIT else "FAIL",
        f"two loads and constructions took {took:.2f} s (limit {CONSTRUCT_LIMIT:.0f} s)")
    shared = shared_class_state(classes[0])
    if shared:
        add("WARN", "mutable class attributes, shared by both players in the judge's process",
            shared)
    fresh = [p for p in players.values() if getattr(p, "candidate_list", None) != []]
    add("FAIL" if fresh else "PASS", "the constructor sets candidate_list = []")

    cases = sample_cases(seed, per_colour, rules)
    for side, file in (case_files or {}).items():
        try:
            cases.extend(parse_case_file(Path(file).read_text(encoding="utf-8"), side, rules))
        except (OSError, ValueError) as e:
            add("FAIL", f"case file {file}: {e}")
    worst = 0.0
    for case in cases:
        ai = players[case.position.side]
        out = judge_go(ai, case.position.to_cs303(), time_out)
        worst = max(worst, out.elapsed)
        detail = []
        if out.error:
            detail.append("go raised:\n" + out.error)
        if out.timed_out or out.elapsed > time_out:
            detail.append(f"go took {out.elapsed:.3f} s, past time_out = {time_out} s (the judge "
                          f"interrupts it and plays the last element)")
        detail.extend(candidate_problems(ai.candidate_list, case.legal))
        if case.expected is not None and case.expected != expected_moves(case.position):
            add("WARN", f"{case.label}: the case file's expected moves differ from the rules'",
                [f"file {_fmt(sorted(case.expected))}, rules "
                 f"{_fmt(sorted(expected_moves(case.position)))}"])
        cl = ai.candidate_list if isinstance(ai.candidate_list, list) else []
        summary = (f"{len(cl)} entries, plays {tuple(cl[-1])}" if cl else "empty list (pass)")
        add("FAIL" if detail else "PASS", f"{case.label}: {summary}, {out.elapsed:.2f} s", detail)
    add("PASS" if worst <= time_out else "FAIL",
        f"slowest go: {worst:.3f} s of {time_out} s")

    if game:
        rec = play_judge_game(players[Color.BLACK], players[Color.WHITE], time_out, rules)
        if rec.ok:
            b, w = rec.final.discs()
            winner = rec.final.winner()
            outcome = "a draw" if winner is None else f"{winner} wins"
            add("PASS", f"self-play game in one process: {len(rec.moves)} moves, "
                f"{b}-{w}, {outcome} under {rules} rules, "
                f"slowest go {rec.max_elapsed:.2f} s",
                [" ".join(nt.square_name(m) for m in rec.moves)])
        else:
            add("FAIL", f"self-play game in one process: {rec.loser} lost by a fault",
                rec.problems)
    return report

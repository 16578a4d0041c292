"""GTP v2 with Othello conventions (docs/reference/protocols.md section 3): line in, lines out.

Responses are ``=[id] result`` / ``?[id] message`` followed by a blank line; the id is echoed only
when one was sent.  ``genmove`` waits for its search (GTP is sequential); the analysis commands
answer their header at once and stream ``info`` lines until any input line arrives.  Quarry never
sends passes: a ``play``/``genmove`` for the other colour when the side to move has no move
inserts the pass.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from engine_server.agents import AgentSpecError
from engine_server.game import (
    PASS,
    Color,
    IllegalMoveError,
    NotationError,
    Position,
    parse_move,
)
from engine_server.log import get_logger
from engine_server.search.limits import Limits, SearchResult
from engine_server.search.timeman import (
    ABSOLUTE,
    BYOYOMI,
    CANADIAN,
    FISCHER,
    NONE,
    Clock,
    TimeManager,
    clock_from_state,
    clock_state,
)
from engine_server.session import SCORE_SECONDS, SearchJob, Session
from protocol import gtp
from protocol.notation import finite_float, vertex

from .common import lcb
from .registry import Call, CommandRegistry, Reply

log = get_logger("gtp")

ANALYZE_LIMIT = 3600.0  # an analysis never runs longer than this without input

GtpCommand = Callable[["GtpHandler", Call], "str | Reply"]


class GtpError(Exception):
    """A command that fails: answered ``? message``."""


def _clock_num(text: str) -> float:
    """Seconds on a clock: finite and not negative."""
    v = finite_float(text)
    if v < 0:
        raise ValueError(f"negative time {text!r}")
    return v


def _count(text: str) -> int:
    """A stone or period count: a whole number, not negative (``5`` or ``5.0``)."""
    v = finite_float(text)
    if v < 0 or v != int(v) or v > 1_000_000:
        raise ValueError(f"bad count {text!r}")
    return int(v)


def _color(text: str) -> Color:
    t = text.strip().lower()
    if t in ("b", "black"):
        return Color.BLACK
    if t in ("w", "white"):
        return Color.WHITE
    raise GtpError(f"invalid color {text.strip()!r}: black, white, b or w")


def _name(color: Color) -> str:
    return "black" if color == Color.BLACK else "white"


def _why_illegal(pos: Position, move: int) -> str:
    """Why the side to move of ``pos`` may not play ``move``, in a GTP error's words."""
    if move == PASS:
        moves = " ".join(vertex(m) for m in pos.legal_moves())
        return f"{_name(pos.side)} cannot pass: it has a move ({moves})"
    if (pos.black | pos.white) >> move & 1:
        return f"{vertex(move)} is occupied"
    if pos.must_pass():
        return f"{_name(pos.side)} has no move and must pass"
    return f"{vertex(move)} flips nothing"


class GtpHandler:
    """GTP over a ``Session``: ``handle_line`` in, lines out through ``session.output``."""

    commands: CommandRegistry[GtpCommand] = CommandRegistry("GTP")

    def __init__(self, session: Session, timeman: TimeManager | None = None):
        self.session = session
        self.out = session.output
        self.timeman = timeman or TimeManager(lag_buffer=session.options.move_overhead)
        self.clocks = {Color.BLACK: Clock(), Color.WHITE: Clock()}
        self.inserted: set[int] = set()  # indices of passes we inserted for Quarry
        self._analysis: SearchJob | None = None

    # --- framing ----------------------------------------------------------------------------
    def handle_line(self, raw: str, received: float | None = None) -> bool:
        """Handle one input line; False means quit."""
        received = time.monotonic() if received is None else received
        if self._analysis is not None:
            # Any line ends a running analysis: stop it, close its response, then go on.
            self.session.stop()
            self._analysis = None
            self.out.write("")
        try:
            parsed = gtp.parse_command(raw)
        except gtp.GtpSyntaxError as e:
            self._respond(e.id, False, str(e))
            return True
        if parsed is None:
            return True
        cid, name, args = parsed
        command = self.commands.get(name)
        if command is None:
            self._respond(cid, False, "unknown command")
            return True
        try:
            reply = command.func(self, Call(args, cid, received))
        except (GtpError, AgentSpecError) as e:
            reply = Reply(str(e), ok=False)
        except Exception as e:  # a bug must still get an answer, or the controller waits
            log.exception("command_failed", command=name)
            reply = Reply(f"internal error: {type(e).__name__}: {e}", ok=False)
        if isinstance(reply, str):
            reply = Reply(reply)
        if not reply.streamed:
            lines = gtp.response_lines(cid, reply.ok, reply.text)
            # Stored before it is sent: a client that has the answer finds the change after a
            # restart, and one that has not gets the same answer to its resend.
            self.session.commit(lines)
            self.out.write(*lines)
        if reply.then is not None:
            reply.then()
        return not reply.quit

    def end_of_input(self, stopping: threading.Event, poll: float = 0.1) -> None:
        """No more input.  Every command but an analysis has answered by now (GTP answers in
        order, ``genmove`` included); an analysis, which runs until the next line, is ended
        and its response closed with the blank line."""
        if self._analysis is not None:
            self.session.stop()
            self._analysis = None
            self.out.write("")

    def _respond(self, cid: str, ok: bool, text: str) -> None:
        self.out.write(*gtp.response_lines(cid, ok, text))

    # --- durable state (the session store) ---------------------------------------------------
    def owes_answer(self) -> bool:
        """A response is still open: an analysis, which its next input line ends."""
        return self._analysis is not None

    def snapshot(self) -> dict[str, Any]:
        """The protocol's own state beside the session's: the clocks as last reported (the
        time left is kept as reported; what passed while no server ran is not counted) and
        the passes inserted for Quarry."""
        return {"clocks": {str(int(c)): clock_state(k) for c, k in self.clocks.items()},
                "inserted": sorted(self.inserted)}

    def restore(self, state: dict[str, Any]) -> None:
        for color, k in state.get("clocks", {}).items():
            self.clocks[Color(int(color))] = clock_from_state(k)
        self.inserted = {int(i) for i in state.get("inserted", [])}

    # --- administrative ---------------------------------------------------------------------
    @commands("protocol_version")
    def cmd_protocol_version(self, c: Call) -> str | Reply:
        return "2"

    @commands("name")
    def cmd_name(self, c: Call) -> str | Reply:
        return self.session.options.name

    @commands("version")
    def cmd_version(self, c: Call) -> str | Reply:
        return self.session.options.version

    @commands("known_command")
    def cmd_known_command(self, c: Call) -> str | Reply:
        return "true" if c.args and c.args[0] in self.commands else "false"

    @commands("list_commands")
    def cmd_list_commands(self, c: Call) -> str | Reply:
        return "\n".join(self.commands.names())

    @commands("help")
    def cmd_help(self, c: Call) -> str | Reply:
        """The commands, one a line: ``list_commands`` under the name people type by hand (GNU
        Go, Leela Zero and KataGo answer it too)."""
        return self.cmd_list_commands(c)

    @commands("quit")
    def cmd_quit(self, c: Call) -> str | Reply:
        self.session.stop()
        return Reply(quit=True)

    @commands("boardsize")
    def cmd_boardsize(self, c: Call) -> str | Reply:
        if not c.args or c.args[0] != "8":
            raise GtpError(f"unacceptable size{' ' + c.args[0] if c.args else ''}: Othello "
                           "here is 8x8 only")
        self.session.new_game()
        self.inserted.clear()
        return ""

    @commands("clear_board")
    def cmd_clear_board(self, c: Call) -> str | Reply:
        self.session.new_game()
        self.inserted.clear()
        for clock in self.clocks.values():
            clock.reset()
        return ""

    @commands("komi")
    def cmd_komi(self, c: Call) -> str | Reply:
        if c.args:
            try:
                float(c.args[0])
            except ValueError:
                raise GtpError("komi not a float") from None
        return ""

    @commands("list_games")
    def cmd_list_games(self, c: Call) -> str | Reply:
        return "Othello"

    @commands("set_game")
    def cmd_set_game(self, c: Call) -> str | Reply:
        if not c.args or c.args[0].lower() not in ("othello", "reversi"):
            raise GtpError("unsupported game")
        return ""

    @commands("othello-agent")
    def cmd_othello_agent(self, c: Call) -> str | Reply:
        if not c.args:
            return self.session.agent_spec
        self.session.set_agent(" ".join(c.args))
        return ""

    @commands("othello-rules")
    def cmd_othello_rules(self, c: Call) -> str | Reply:
        if not c.args:
            return str(self.session.rules)
        try:
            self.session.set_rules(c.args[0])
        except ValueError as e:
            raise GtpError(str(e)) from None
        return ""

    @commands("othello-setboard")
    def cmd_othello_setboard(self, c: Call) -> str | Reply:
        """``othello-setboard <64 squares X/O/-> <X|O>``: a new game from that position (judges
        that hand over boards instead of moves)."""
        if len(c.args) != 2:
            raise GtpError("syntax error: othello-setboard <64 squares> <X|O>")
        try:
            pos = Position.from_string(c.args[0], c.args[1], self.session.rules)
        except (NotationError, ValueError) as e:
            raise GtpError(f"bad board: {e}") from None
        self.session.new_game(pos)
        self.inserted.clear()
        return ""

    # --- board ------------------------------------------------------------------------------
    def _prepare_turn(self, color: Color) -> None:
        """Quarry's implicit pass: the other side is to move but has no move."""
        pos = self.session.position
        if pos.side != color and pos.must_pass():
            self.session.play(PASS)
            self.inserted.add(len(self.session.game.moves) - 1)

    @commands("play")
    def cmd_play(self, c: Call) -> str | Reply:
        if len(c.args) < 2:
            raise GtpError("syntax error: play <color> <vertex>")
        color = _color(c.args[0])
        try:
            move = parse_move(c.args[1])
        except NotationError:
            raise GtpError(f"invalid vertex {c.args[1]!r}: a1..h8 or pass") from None
        pos = self.session.position
        if move == PASS and pos.is_game_over():
            # The echo of the other engine's end-of-game pass (twogtp loops play both passes):
            # accepted, and nothing is recorded after the last disc.
            return ""
        if pos.is_game_over():
            raise GtpError("illegal move: the game is over")
        if pos.side != color and not pos.must_pass():
            raise GtpError(f"illegal move: {_name(color)} cannot move now: it is "
                           f"{_name(pos.side)}'s turn")
        before = len(self.session.game.moves)
        self._prepare_turn(color)
        try:
            self.session.play(move)
        except IllegalMoveError:
            why = _why_illegal(self.session.position, move)
            while len(self.session.game.moves) > before:  # roll back an inserted pass
                self.session.undo()
                self.inserted.discard(len(self.session.game.moves))
            raise GtpError(f"illegal move: {why}") from None
        return ""

    @commands("undo")
    def cmd_undo(self, c: Call) -> str | Reply:
        game = self.session.game
        if not game.moves:
            raise GtpError("cannot undo: no move has been played")
        self.session.undo()
        last = len(game.moves) - 1
        if last in self.inserted:
            self.session.undo()
            self.inserted.discard(last)
        return ""

    @commands("showboard")
    def cmd_showboard(self, c: Call) -> str | Reply:
        return "\n" + str(self.session.position)

    @commands("final_score")
    def cmd_final_score(self, c: Call) -> str | Reply:
        """The result of a finished game; mid-game the result with perfect play when the solver
        can tell (every endgame up to ``SCORE_EMPTIES`` that it finishes in time), else the disc
        difference as it stands (empty squares to nobody, unlike a finished game)."""
        pos = self.session.position
        seconds = min(self.session.options.move_time or SCORE_SECONDS, SCORE_SECONDS)
        margin = self.session.perfect_score(seconds)
        if margin is not None:
            score = margin if pos.side == Color.BLACK else -margin
        else:
            score = pos.disc_difference()
        if score > 0:
            return f"B+{score}"
        if score < 0:
            return f"W+{-score}"
        return "0"

    # --- GoGui's rules extension ---------------------------------------------------------------
    # GoGui plays a game other than Go when the program answers these (protocols.md 3.8): it
    # asks them after every move to draw the board and to know whose turn it is.  GoGui puts
    # row 1 at the bottom, so the board is written from row 8 down and vertices stay the same
    # text; the GUI shows the board mirrored top to bottom, as it does Egaroucid's.
    @commands("gogui-rules_game_id")
    def cmd_gogui_game_id(self, c: Call) -> str | Reply:
        """The game GoGui plays: Othello."""
        return "Othello"

    @commands("gogui-rules_board_size")
    def cmd_gogui_board_size(self, c: Call) -> str | Reply:
        """The board size: 8."""
        return "8"

    @commands("gogui-rules_board")
    def cmd_gogui_board(self, c: Call) -> str | Reply:
        """The board for GoGui: rows 8 to 1, X black, O white, . empty."""
        pos = self.session.position
        rows = []
        for row in range(7, -1, -1):
            cells = []
            for col in range(8):
                sq = col + 8 * row
                cells.append("X" if pos.black >> sq & 1 else "O" if pos.white >> sq & 1 else ".")
            rows.append(" ".join(cells))
        return "\n".join(rows)   # the first row on the "= " line, as GoGui's example

    @commands("gogui-rules_side_to_move")
    def cmd_gogui_side_to_move(self, c: Call) -> str | Reply:
        """black or white."""
        return "black" if self.session.position.side == Color.BLACK else "white"

    @commands("gogui-rules_legal_moves")
    def cmd_gogui_legal_moves(self, c: Call) -> str | Reply:
        """The side to move's moves in GoGui's upper case, ``pass`` when it has none, nothing
        when the game is over (that is how GoGui sees the end)."""
        pos = self.session.position
        if pos.is_game_over():
            return ""
        return " ".join(vertex(m) for m in pos.legal_moves())

    @commands("gogui-rules_final_result")
    def cmd_gogui_final_result(self, c: Call) -> str | Reply:
        """The result in words once the game is over."""
        game = self.session.game
        if not game.is_over():
            return "Game is not over yet."
        r = game.result()
        if r.winner is None:
            return f"Draw {r.black_discs}-{r.white_discs}."
        winner = "Black" if r.winner == Color.BLACK else "White"
        return f"{winner} wins {r.black_discs}-{r.white_discs}."

    # --- time -------------------------------------------------------------------------------
    def _set_clocks(self, kind: str, main: float, period: float = 0.0, stones: int = 0) -> None:
        for c in self.clocks.values():
            c.kind, c.main, c.period, c.stones = kind, main, period, stones
            c.reset()

    @commands("time_settings")
    def cmd_time_settings(self, c: Call) -> str | Reply:
        try:
            main, byo, stones = _clock_num(c.args[0]), _clock_num(c.args[1]), _count(c.args[2])
        except (IndexError, ValueError):
            raise GtpError("syntax error: time_settings <main> <byo> <stones>") from None
        if byo == 0:
            self._set_clocks(ABSOLUTE if main > 0 else NONE, main)
        elif stones == 0:
            self._set_clocks(NONE, 0.0)  # GTP: byo > 0 and stones = 0 means no limit
        else:
            self._set_clocks(CANADIAN, main, byo, stones)
        return ""

    @commands("kgs-time_settings")
    def cmd_kgs_time_settings(self, c: Call) -> str | Reply:
        return self._kinded_time(c.args, kata=False)

    @commands("kata-time_settings")
    def cmd_kata_time_settings(self, c: Call) -> str | Reply:
        return self._kinded_time(c.args, kata=True)

    @commands("kata-list_time_settings")
    def cmd_kata_list_time_settings(self, c: Call) -> str | Reply:
        return "none absolute byoyomi canadian fischer"

    def _kinded_time(self, args: list[str], kata: bool) -> str:
        if not args:
            raise GtpError("syntax error: missing time kind")
        kind = args[0].lower()
        try:
            nums = [_clock_num(a) for a in args[1:]]
            if kind == "none":
                self._set_clocks(NONE, 0.0)
            elif kind == "absolute":
                self._set_clocks(ABSOLUTE, nums[0])
            elif kind == "byoyomi":
                self._set_clocks(BYOYOMI, nums[0], nums[1], _count(args[3]))
            elif kind == "canadian":
                self._set_clocks(CANADIAN, nums[0], nums[1], _count(args[3]))
            elif kind == "fischer" and kata:
                self._set_clocks(FISCHER, nums[0], nums[1])
            else:
                raise GtpError(f"unknown time settings kind {kind}")
        except (IndexError, ValueError):
            raise GtpError(f"syntax error in {kind} time settings") from None
        return ""

    @commands("time_left")
    def cmd_time_left(self, c: Call) -> str | Reply:
        try:
            color, secs, stones = _color(c.args[0]), _clock_num(c.args[1]), _count(c.args[2])
        except (IndexError, ValueError):
            raise GtpError("syntax error: time_left <color> <time> <stones>") from None
        self.clocks[color].set_left(secs, stones)
        return ""

    # --- thinking ---------------------------------------------------------------------------
    def _limits(self, color: Color, received: float) -> Limits:
        pos = self.session.position
        opts = self.session.options
        budget = self.timeman.budget(self.clocks[color], pos.empties, opts.move_time,
                                     forced=len(pos.legal_moves()) <= 1)
        if budget is None:
            return Limits()  # no clock, no cap: the agent's own default budget
        return Limits(deadline=received + budget)

    def _genmove(self, args: list[str], received: float, play: bool,
                 analyze: str | None = None, cid: str = "") -> str | Reply:
        if not args:
            raise GtpError("syntax error: genmove <color>")
        tokens = list(args)
        color = _color(tokens.pop(0))
        pos = self.session.position
        if pos.is_game_over():
            # Either colour: twogtp-style controllers ask both sides until two passes follow.
            if analyze:
                return self._stream_pass(cid)
            return "pass"
        if pos.side != color and not pos.must_pass():
            raise GtpError(f"wrong color: it is {_name(pos.side)}'s turn, and "
                           f"{_name(pos.side)} has a move")
        n_before = len(self.session.game.moves)
        # The other side must pass first (Quarry never sends passes): a reg_genmove inserts the
        # pass only for its search and takes it back below.
        self._prepare_turn(color)
        limits = self._limits(color, received)
        on_progress = None
        interval = 0.5
        if analyze:
            interval = self._interval(tokens)
            self._respond_stream_header(cid)

            def on_progress(job: SearchJob, result: SearchResult) -> None:
                self.out.write_for(job, self._info_line(result, analyze))

        job = self.session.start("genmove", limits, on_progress=on_progress,
                                 progress_interval=interval, record=play)
        self.session.finish()
        r = job.result
        if r is None or r.best_move is None:
            while len(self.session.game.moves) > n_before:
                self.session.undo()
            raise GtpError(f"search failed: {job.error}")
        if analyze:
            self.out.write(self._info_line(r, analyze))
        if play:
            self.session.play(r.best_move)
            log.info("move", move=vertex(r.best_move), **r.summary())
        else:
            while len(self.session.game.moves) > n_before:
                self.session.undo()
                self.inserted.discard(len(self.session.game.moves))
        text = vertex(r.best_move)
        if analyze:
            lines = [gtp.play_line(text), ""]
            self.session.commit(lines)
            self.out.write(*lines)
            if play:
                self.session.ponder([])
            return Reply(streamed=True)
        # Answer first, then ponder (KataGo's order).
        return Reply(text, then=(lambda: self.session.ponder([])) if play else None)

    @commands("genmove")
    def cmd_genmove(self, c: Call) -> str | Reply:
        return self._genmove(c.args, c.received, play=True, cid=c.cid)

    @commands("reg_genmove")
    def cmd_reg_genmove(self, c: Call) -> str | Reply:
        return self._genmove(c.args, c.received, play=False, cid=c.cid)

    @commands("lz-genmove_analyze")
    def cmd_lz_genmove_analyze(self, c: Call) -> str | Reply:
        return self._genmove(self._default_color(c.args), c.received, play=True, analyze="lz",
                             cid=c.cid)

    @commands("kata-genmove_analyze")
    def cmd_kata_genmove_analyze(self, c: Call) -> str | Reply:
        return self._genmove(self._default_color(c.args), c.received, play=True,
                             analyze="kata", cid=c.cid)

    def _default_color(self, args: list[str]) -> list[str]:
        if args and args[0].lower() in ("b", "w", "black", "white"):
            return args
        return ["black" if self.session.position.side == Color.BLACK else "white"] + list(args)

    def _stream_pass(self, cid: str) -> Reply:
        self._respond_stream_header(cid)
        self.out.write(gtp.play_line("pass"), "")
        return Reply(streamed=True)

    def _respond_stream_header(self, cid: str) -> None:
        self.out.write(gtp.stream_head(cid))

    @staticmethod
    def _interval(tokens: list[str]) -> float:
        """Centiseconds from ``[interval] N`` or a bare number; default 1 s."""
        interval = 100.0
        i = 0
        while i < len(tokens):
            t = tokens[i].lower()
            if t == "interval" and i + 1 < len(tokens):
                try:
                    interval = finite_float(tokens[i + 1])
                except ValueError:
                    raise GtpError(f"invalid analyze interval {tokens[i + 1]!r}") from None
                i += 2
            elif t in ("minmoves", "maxmoves", "ownership", "ownershipstdev", "pvvisits",
                       "movesownership", "rootinfo", "pvedgevisits") and i + 1 < len(tokens):
                i += 2
            elif t in ("avoid", "allow") and i + 3 < len(tokens):
                i += 4
            else:
                try:
                    interval = finite_float(t)
                except ValueError:
                    raise GtpError(f"invalid analyze argument {tokens[i]!r}") from None
                i += 1
        return max(0.01, interval / 100.0)

    def _analyze(self, args: list[str], cid: str, kind: str) -> Reply:
        tokens = list(args)
        if tokens and tokens[0].lower() in ("b", "w", "black", "white"):
            color = _color(tokens.pop(0))
            pos = self.session.position
            if pos.side != color and not pos.must_pass():
                raise GtpError(f"wrong color: it is {_name(pos.side)}'s turn, and "
                           f"{_name(pos.side)} has a move")
        interval = self._interval(tokens)
        self._respond_stream_header(cid)
        if self.session.position.is_game_over():
            # Nothing to report, but the response stays open until the next line, as any
            # analysis does.
            self._analysis = self.session.run_task("analyze-idle", lambda job: None)
            return Reply(streamed=True)

        def on_progress(job: SearchJob, result: SearchResult) -> None:
            self.out.write_for(job, self._info_line(result, kind))

        def on_done(job: SearchJob) -> None:
            if job.result is not None:
                self.out.write_for(job, self._info_line(job.result, kind))

        self._analysis = self.session.start("analyze", Limits(time=ANALYZE_LIMIT, analysis=True),
                                            on_done=on_done, on_progress=on_progress,
                                            progress_interval=interval)
        return Reply(streamed=True)

    @commands("lz-analyze")
    def cmd_lz_analyze(self, c: Call) -> str | Reply:
        return self._analyze(c.args, c.cid, "lz")

    @commands("kata-analyze")
    def cmd_kata_analyze(self, c: Call) -> str | Reply:
        return self._analyze(c.args, c.cid, "kata")

    @commands("stop")
    def cmd_stop(self, c: Call) -> str | Reply:
        self.session.stop()
        return ""

    def _info_line(self, r: SearchResult, kind: str) -> str:
        """One ``info`` line per move searched or proven, best first.  A proven move's win
        rate is its outcome (1, 0.5, 0) and its score is exact once solved."""
        parts = []
        shown = [m for m in r.moves if m.visits > 0 or m.proven is not None
                 or m.book_games is not None
                 or m.move == r.best_move]  # never an empty line: it would end the response
        if r.exact:  # solved: rank by exact margin (unsolved moves last)
            ranked = sorted(shown, key=lambda m: (m.move != r.best_move, not m.exact, -m.eval))
        else:
            ranked = sorted(shown, key=lambda m: (m.move != r.best_move, -m.visits, -m.eval))
        for order, m in enumerate(ranked):
            pv = [vertex(x) for x in r.pv_for(m.move)]
            wr = m.solved_win_rate
            low = wr if m.proven is not None else lcb(wr, m.visits)
            mv = vertex(m.move)
            # a key-value pair analysis readers skip when they do not know it: the move is in
            # the opening book, reached by that many games
            extra = f"book {m.book_games} " if m.book_games is not None else ""
            if r.search_nodes > 0 and r.iterations > 0:
                # a depth-first search: its depth and Multi-ProbCut confidence (100: none)
                extra = f"depth {r.iterations} selectivity {r.selectivity} " + extra
            if kind == "lz":
                parts.append(gtp.info_lz(mv, m.visits, wr, m.prior or 0, low, extra, order, pv))
            else:
                parts.append(gtp.info_kata(mv, m.visits, wr, m.eval, m.prior or 0, low, extra,
                                           order, pv))
        return " ".join(parts)


__all__ = ["GtpHandler", "GtpError"]

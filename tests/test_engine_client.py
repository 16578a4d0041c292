"""The one client of the engine's protocols: response parsing, errors, retries and its channels."""

from __future__ import annotations

import pickle
import queue
import time
from typing import Callable

import pytest

from clients import engine_process, remote
from clients.channels import InProcessChannel, PipeChannel
from clients.engine_client import (
    Channel,
    EngineClient,
    EngineClosed,
    EngineCommandError,
    EngineError,
    EngineTimeout,
    is_idempotent,
    parse_response,
    read_response,
)
from engine_server.game import Game, parse_move
from engine_server.session import EngineOptions

from .loadsafe import SLACK, WAIT, wait_until


class ScriptedChannel(Channel):
    """A channel whose engine is a function from a sent line to the lines it answers with
    (none: it stays silent)."""

    name = "scripted"

    def __init__(self, answer: Callable[[str], list[str]], resend_is_safe: bool = False):
        self.answer = answer
        self.resend_is_safe = resend_is_safe
        self.sent: list[str] = []
        self.resends = 0
        self.resets = 0
        self.deadlines: list[float] = []  # what each read_line was told to wait until
        self.out: queue.Queue[str] = queue.Queue()

    def send(self, line: str) -> None:
        self.sent.append(line)
        for out in self.answer(line):
            self.out.put(out)

    def resend(self) -> None:
        self.resends += 1
        self.send(self.sent[-1])

    def reset(self) -> None:
        self.resets += 1

    def read_line(self, deadline: float) -> str:
        self.deadlines.append(deadline)
        try:
            return self.out.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise EngineTimeout("silent") from None

    def close(self) -> None:
        pass


def silent(line: str) -> list[str]:
    return []


# --- parsing ---------------------------------------------------------------------------------

def test_success_response_gives_its_text_without_the_head():
    r = parse_response(["= d3"])
    assert (r.ok, r.text, r.id) == (True, "d3", "")
    assert parse_response(["="]).text == ""


def test_error_response_gives_its_message():
    r = parse_response(["? unknown command"])
    assert (r.ok, r.text) == (False, "unknown command")


def test_multi_line_response_keeps_its_lines():
    r = parse_response(["= first", "second", "third"])
    assert r.ok and r.text == "first\nsecond\nthird"


def test_response_id_is_echoed_back():
    assert parse_response(["=12 OthelloPy"]).id == "12"
    assert parse_response(["=12 OthelloPy"]).text == "OthelloPy"
    r = parse_response(["?7 illegal move"])
    assert (r.ok, r.id, r.text) == (False, "7", "illegal move")


def test_head_without_status_is_taken_as_a_result_like_engines_expect():
    assert parse_response(["d3"]) == parse_response(["= d3"])


def test_reader_skips_blank_lines_before_a_response_and_stops_at_the_blank_after_it():
    ch = ScriptedChannel(silent)
    for line in ("", "", "= a", "b", "", "= next", ""):
        ch.out.put(line)
    assert read_response(ch, time.monotonic() + 1).text == "a\nb"
    assert read_response(ch, time.monotonic() + 1).text == "next"


# --- errors ----------------------------------------------------------------------------------

def test_question_mark_reply_raises_the_single_command_error():
    client = EngineClient(ScriptedChannel(lambda line: ["? illegal move", ""]))
    with pytest.raises(EngineCommandError) as info:
        client.command("play black a1")
    e = info.value
    assert (e.message, e.command) == ("illegal move", "play black a1")
    assert "'play black a1' failed: ? illegal move" == str(e)
    # the old clients raised RuntimeError and RemoteError for '?': both still catch it
    assert isinstance(e, RuntimeError) and isinstance(e, remote.RemoteError)


def test_command_error_survives_pickling_between_match_processes():
    e = pickle.loads(pickle.dumps(EngineCommandError("illegal move", "play black a1")))
    assert (e.message, e.command, str(e)) == ("illegal move", "play black a1",
                                               "'play black a1' failed: ? illegal move")


def test_silent_channel_times_out_at_the_deadline():
    ch = ScriptedChannel(silent)
    client = EngineClient(ch)
    t0 = time.monotonic()
    with pytest.raises(EngineTimeout):
        client.command("name", timeout=0.2)
    t1 = time.monotonic()
    # The channel was told to wait until 0.2 s after the call, and the client gave up then
    # (not earlier; later only by what a busy machine adds).
    assert ch.deadlines and all(t0 + 0.2 <= d <= t1 for d in ch.deadlines), ch.deadlines
    assert 0.15 < t1 - t0 < 0.2 + SLACK


def test_old_error_names_are_the_new_types():
    assert engine_process.EngineTimeout is EngineTimeout
    assert remote.RemoteError is EngineError
    assert issubclass(EngineTimeout, TimeoutError) and issubclass(EngineClosed, EOFError)


# --- retries ---------------------------------------------------------------------------------

def test_no_retry_unless_asked():
    ch = ScriptedChannel(silent)
    with pytest.raises(EngineTimeout):
        EngineClient(ch).command("name", timeout=0.05)
    assert ch.sent == ["name"]


def test_idempotent_command_is_retried_with_a_fresh_id_when_asked():
    ch = ScriptedChannel(silent)
    with pytest.raises(EngineTimeout, match="after 3 tries"):
        EngineClient(ch).command("name", timeout=0.05, retries=2)
    assert ch.sent == ["name", "1 name", "2 name"]


def test_command_that_changes_the_game_is_never_resent_over_a_pipe_like_channel():
    assert not is_idempotent("play black d3") and not is_idempotent("genmove black")
    ch = ScriptedChannel(silent)
    with pytest.raises(EngineTimeout):
        EngineClient(ch, retries=3).command("play black d3", timeout=0.05)
    assert ch.sent == ["play black d3"]


def test_retry_skips_the_late_answer_to_the_attempt_that_timed_out():
    # The first 'name' is answered only once the retry has gone out: that answer is stale.
    def answer(line: str) -> list[str]:
        return {"name": [], "1 name": ["= late", "", "=1 Fake", ""],
                "version": ["= 1.0", ""]}[line]

    client = EngineClient(ScriptedChannel(answer))
    assert client.command("name", timeout=0.05, retries=1) == "Fake"
    assert client.command("version") == "1.0"  # in step again


def test_channel_with_safe_resends_retries_any_command_as_the_same_request():
    answers = iter([[], ["= ", ""]])
    ch = ScriptedChannel(lambda line: next(answers), resend_is_safe=True)
    assert EngineClient(ch).command("play black d3", timeout=0.05, retries=1) == ""
    assert ch.sent == ["play black d3", "play black d3"] and ch.resends == 1
    assert ch.resets == 1  # the timed-out attempt's transport was dropped before the resend


# --- the in-process channel ------------------------------------------------------------------

def test_in_process_channel_plays_a_genmove_against_a_real_session():
    client = EngineClient(InProcessChannel(EngineOptions(agent="random", warmup=False)),
                          timeout=30)
    try:
        assert client.command("protocol_version") == "2"
        client.play("black", "f5")
        move = client.genmove("white")
        assert parse_move(move) in Game.from_moves(["f5"]).position.legal_moves()
        with pytest.raises(EngineCommandError, match="unknown command"):
            client.command("frobnicate")
        assert "genmove" in client.list_commands()
        lines = list(client.stream("lz-genmove_analyze black 5"))
        assert lines[-1].startswith("play ")
        assert client.command("quit") == ""
        with pytest.raises(EngineClosed):
            client.command("name", timeout=5)
    finally:
        client.close()


def test_in_process_channel_quit_interrupts_a_long_genmove():
    ch = InProcessChannel(EngineOptions(agent="uct:iterations=100000000", warmup=False),
                          protocol="gtp")
    ch.send("genmove black")
    wait_until(lambda: ch.session.busy, what="the genmove's search started")
    t0 = time.monotonic()
    ch.send("quit")
    lines = []
    with pytest.raises(EngineClosed):
        while True:
            lines.append(ch.read_line(time.monotonic() + WAIT))
    # 10^8 iterations and no move time: only the quit ended that search
    assert time.monotonic() - t0 < SLACK
    assert lines[0].startswith("= ") and lines[-2:] == ["= ", ""]


# --- the pipe channel ------------------------------------------------------------------------

def test_pipe_channel_talks_to_the_engine_process():
    client = EngineClient(PipeChannel.ours("--agent", "random", "--no-warmup"), timeout=60)
    assert client.command("name") == "OthelloPy"
    move = client.genmove("black")
    assert parse_move(move) in Game().position.legal_moves()
    with pytest.raises(EngineCommandError):
        client.command("play black a1")
    assert client.close() == 0  # end of input: a clean exit
    with pytest.raises(EngineClosed):
        client.command("name", timeout=5)

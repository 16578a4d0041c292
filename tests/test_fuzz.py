"""Protocol fuzzing: random and mutated lines against both protocols, stdio and ZeroMQ.

The invariants (the engine answers, rejected input changes nothing, stdout carries protocol
lines only) are checked line by line in ``benchmarks/fuzz.py``; ``othello-bench fuzz`` runs the
same checks for long runs.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.fuzz import (
    CONTROL,
    NBOARD_PREFIXES,
    FuzzStats,
    FuzzTarget,
    _gtp_responses,
    check_line,
    fuzz_line,
    mutate,
    still_answers,
)
from clients.remote import RemoteEngine
from engine_server.commands.gtp import GtpError, GtpHandler
from engine_server.commands.nboard import NBoardHandler
from protocol.text import clean_line

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}

# a line: from the generator (valid or damaged commands), or raw text with control characters
_raw = st.text(alphabet=st.sampled_from(CONTROL + "abcdefgh12345678 =?#;/[]()-PAXO"),
               max_size=120)


def _lines(protocol: str):
    generated = st.randoms(use_true_random=False).map(lambda r: fuzz_line(protocol, r))
    return st.lists(st.one_of(generated, _raw), min_size=1, max_size=25)


def _run(protocol: str, lines: list[str]) -> FuzzStats:
    stats = FuzzStats(protocol)
    t = FuzzTarget(protocol)
    try:
        for line in lines:
            check_line(t, line, stats)
        assert still_answers(t), t.lines[-5:]
    finally:
        t.close()
    return stats


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines("gtp"))
@pytest.mark.slow  # fuzzing
def test_gtp_answers_every_line_once_and_rejected_lines_change_nothing(lines):
    stats = _run("gtp", lines)
    assert not stats.failures, stats.failures


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_lines("nboard"))
@pytest.mark.slow  # fuzzing
def test_nboard_emits_only_protocol_lines_and_errors_change_nothing(lines):
    stats = _run("nboard", lines)
    assert not stats.failures, stats.failures


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["gtp", "nboard"]))
@pytest.mark.slow  # fuzzing
def test_mutations_of_valid_commands_are_answered(rng, protocol):
    base = fuzz_line(protocol, rng)
    stats = _run(protocol, [base, mutate(base, rng), mutate(mutate(base, rng), rng)])
    assert not stats.failures, stats.failures


def test_the_checks_catch_a_handler_that_breaks_the_rules():
    """The invariants can fail: a handler that changes the game on a rejected command, one
    that raises, and one that prints a stray line are all reported."""
    t = FuzzTarget("gtp")
    try:
        stats = FuzzStats("gtp")

        broken = GtpHandler.commands.extended()

        @broken.replace("play")
        def bad_play(handler, call):
            t.session.play(t.session.position.legal_moves()[0])
            raise GtpError("no")

        @broken.replace("showboard")
        def bad_showboard(handler, call):
            raise RuntimeError("x")

        t.handler.commands = broken
        check_line(t, "play black d3", stats)
        assert any("state changed" in f for f in stats.failures)
        check_line(t, "showboard", stats)
        assert any("internal error" in f for f in stats.failures)
    finally:
        t.close()
    n = FuzzTarget("nboard")
    try:
        stats = FuzzStats("nboard")
        chatty = NBoardHandler.commands.extended()
        chatty.replace("learn")(lambda handler, rest, received: handler.out.write("debug: hello"))
        n.handler.commands = chatty
        check_line(n, "learn", stats)
        assert any("not an NBoard line" in f for f in stats.failures)
    finally:
        n.close()


def _engine(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine_server", "--agent",
                             "uct:iterations=30", "--move-time", "0.05", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV, cwd=REPO)


def _feed(protocol: str, seed: int, last: str, n: int = 300) -> tuple[list[str], list[str]]:
    """(the fuzz lines, the engine's stdout lines) for ``n`` seeded fuzz lines and ``last``
    piped into an engine process, which must exit cleanly at the end of its input."""
    rng = random.Random(seed)
    # one line each on a pipe: a newline inside a line would make two commands
    lines = [fuzz_line(protocol, rng).replace("\n", " ") for _ in range(n)]
    proc = _engine("--protocol", protocol)
    text = "\n".join(lines + [last]) + "\n"
    out, err = proc.communicate(text.encode("utf-8", "surrogatepass"), timeout=200)
    assert proc.returncode == 0, err[-2000:]
    assert b"Traceback" not in err
    return lines, out.decode("utf-8").split("\n")[:-1]


@pytest.mark.timeout(240)
@pytest.mark.slow  # fuzzing an engine process
def test_stdio_gtp_engine_survives_fuzz_and_stdout_holds_only_responses():
    lines, stdout = _feed("gtp", 11, "protocol_version")
    count, heads, open_ = _gtp_responses(stdout)
    expected = sum(1 for line in lines if clean_line(line, cut_comments=True)) + 1
    assert count == expected and not open_
    assert heads[-1] == "= 2"


@pytest.mark.timeout(240)
@pytest.mark.slow  # fuzzing an engine process
def test_stdio_nboard_engine_survives_fuzz_and_stdout_holds_only_nboard_lines():
    _, stdout = _feed("nboard", 12, "ping 777")
    stdout = [x for x in stdout if x]
    assert all(x.startswith(NBOARD_PREFIXES) for x in stdout), \
        [x for x in stdout if not x.startswith(NBOARD_PREFIXES)][:3]
    assert "pong 777" in stdout
    after = stdout[stdout.index("pong 777") + 1:]
    assert not any(x.startswith(("===", "search", "nodestats")) for x in after)


@pytest.mark.timeout(120)
@pytest.mark.slow  # fuzzing a ZeroMQ server
def test_zmq_server_survives_random_frames_and_keeps_every_session_answering():
    from engine_server.serve.zmq_server import ServerConfig, ZmqServer
    from engine_server.session import EngineOptions

    server = ZmqServer(EngineOptions(agent="uct:iterations=30", move_time=0.05, warmup=False),
                       ServerConfig(endpoint="tcp://127.0.0.1:*"))
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    ctx = zmq.Context.instance()
    keeper = RemoteEngine(server.endpoint, timeout=10)
    keeper.gtp("play black f5")
    rng = random.Random(13)
    socks = []
    try:
        for k in range(6):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(server.endpoint)
            socks.append(s)
            protocol = "gtp" if k % 2 == 0 else "nboard"
            for _ in range(60):
                kind = rng.randrange(4)
                line = fuzz_line(protocol, rng).encode("utf-8", "surrogatepass")
                if kind == 0:
                    s.send_multipart([line])
                elif kind == 1:
                    s.send_multipart([str(rng.randrange(10 ** 6)).encode(), line])
                elif kind == 2:
                    s.send_multipart([os.urandom(rng.randrange(1, 40))
                                      for _ in range(rng.randint(1, 4))])
                else:
                    s.send_multipart([rng.choice([b"", b"-1", b"9" * 30, b"x"]), line])
        # every session still answers; the untouched one kept its game
        probe = RemoteEngine(server.endpoint, timeout=20)
        assert probe.gtp("protocol_version") == "2"
        board = keeper.gtp("showboard")
        assert re.search(r"X=4 O=1", board), board
        probe.close()
    finally:
        for s in socks:
            s.close(0)
        keeper.close()
        server.stop()
        t.join(5)
    assert not t.is_alive()

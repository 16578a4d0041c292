"""The ZeroMQ server with real sockets on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import zmq

from clients.remote import RemoteEngine, RemoteError
from engine_server.game import Game, parse_move
from engine_server.serve.zmq_server import (
    SecurityError,
    ServerConfig,
    ZmqServer,
    generate_keys,
    is_loopback_endpoint,
)
from engine_server.session import EngineOptions

from .loadsafe import SLACK, WAIT, wait_until

REPO = Path(__file__).resolve().parent.parent


def start_server(**cfg) -> tuple[ZmqServer, threading.Thread]:
    options = EngineOptions(agent=cfg.pop("agent", "uct:iterations=300"), warmup=False,
                            move_time=cfg.pop("move_time", None))
    server = ZmqServer(options, ServerConfig(endpoint=cfg.pop("endpoint", "tcp://127.0.0.1:*"),
                                             **cfg))
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return server, t


@pytest.fixture
def server():
    s, t = start_server()
    yield s
    s.stop()
    t.join(5)


def test_loopback_detection():
    assert is_loopback_endpoint("tcp://127.0.0.1:5555")
    assert is_loopback_endpoint("tcp://[::1]:5555") and is_loopback_endpoint("ipc:///tmp/x")
    assert is_loopback_endpoint("tcp://localhost:1")
    assert not is_loopback_endpoint("tcp://0.0.0.0:5555")
    assert not is_loopback_endpoint("tcp://*:5555")
    assert not is_loopback_endpoint("tcp://10.1.2.3:5555")


def test_two_clients_keep_separate_games(server):
    a = RemoteEngine(server.endpoint, timeout=10)
    b = RemoteEngine(server.endpoint, timeout=10)
    a.gtp("play black f5")
    b.gtp("play black d3")
    b.gtp("play white c3")
    assert a.gtp("showboard") != b.gtp("showboard")
    assert "f5" not in b.gtp("showboard")
    sa = [s for s in server.sessions.values()]
    assert len(sa) == 2
    assert sorted(len(s.session.game.moves) for s in sa) == [1, 2]
    a.close()
    b.close()


def test_nboard_session_over_zmq(server):
    c = RemoteEngine(server.endpoint, protocol="nboard", timeout=10)
    c.send("nboard 2")
    c.send("set depth 3")
    assert c.nboard("ping 1", "pong") == ["pong 1"]
    lines = c.nboard("go", "=== ")
    assert lines[-1][4:6].lower() in ("d3", "c4", "f5", "e6")
    c.close()


def test_full_game_played_remotely(server):
    c = RemoteEngine(server.endpoint, timeout=20)
    game = Game()
    while not game.is_over():
        color = "black" if int(game.position.side) == 0 else "white"
        mv = parse_move(c.gtp(f"genmove {color}"))
        assert mv in game.position.legal_moves()
        game.play(mv)
    assert c.gtp("final_score")
    c.close()


def test_retry_with_the_same_seq_does_not_play_twice(server):
    c = RemoteEngine(server.endpoint, timeout=5)
    c.gtp("play black f5")
    seq = c.seq
    # The reply was "lost": resend the same request number on a fresh socket.
    c._connect()
    c._send(seq, "play black f5")
    rseq, line = c.read_line(5)
    assert (rseq, line) == (seq, "= ")
    assert c.gtp("showboard").count("X") >= 1
    (session,) = server.sessions.values()
    assert session.session.game.moves == [parse_move("f5")]
    c.close()


def test_cheap_commands_answered_fast_while_another_session_searches():
    s, t = start_server(agent="uct:iterations=100000000", move_time=60.0)
    try:
        a = RemoteEngine(s.endpoint, timeout=10)
        b = RemoteEngine(s.endpoint, timeout=10)
        b.gtp("protocol_version")
        a.send("genmove black")
        wait_until(lambda: any(cs.session.busy for cs in list(s.sessions.values())),
                   what="a's genmove started")
        delays = []
        for cmd in ("protocol_version", "showboard", "name") * 3:
            t0 = time.monotonic()
            b.gtp(cmd)
            delays.append(time.monotonic() - t0)
        # Answered while a's 60 s search went on, none of them waiting for it; the 100 ms
        # promise is othello-bench zmq's busy_p99_s, on a quiet machine.
        assert any(cs.session.busy for cs in list(s.sessions.values()))
        assert max(delays) < SLACK, delays
        a.close()
        b.close()
    finally:
        s.stop()
        t.join(5)


def test_garbage_and_oversized_frames_do_not_hurt(server):
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(server.endpoint)
    raw.send_multipart([b"1", b"2", b"3"])
    assert raw.recv_multipart()[1].startswith(b"? malformed")
    raw.send_multipart([b"x", b"name"])
    assert raw.recv_multipart()[1].startswith(b"? malformed")
    raw.send_multipart([b"5", b"\xff\xfe"])
    assert raw.recv_multipart()[1].startswith(b"? malformed")
    raw.send_multipart([b"6", b"frobnicate"])
    assert raw.recv_multipart()[1] == b"? unknown command"
    big = ctx.socket(zmq.DEALER)
    big.setsockopt(zmq.LINGER, 0)
    big.connect(server.endpoint)
    big.send_multipart([b"1", b"x" * (200 * 1024)])  # over MAXMSGSIZE: the peer is dropped
    time.sleep(0.2)
    c = RemoteEngine(server.endpoint, timeout=5)
    assert c.gtp("protocol_version") == "2"
    raw.send_multipart([b"7", b"protocol_version"])
    replies = []
    while not replies or replies[-1] != [b"7", b"= 2"]:
        replies.append(raw.recv_multipart())
    assert all(r[1] == b"" for r in replies[:-1])  # only the blank line ending "? unknown"
    for s in (raw, big):
        s.close(0)
    c.close()


def _bare_reply(sock) -> list[str]:
    """One GTP response read frame by frame from a one-frame client: up to the empty frame."""
    lines = []
    while True:
        frames = sock.recv_multipart()
        assert len(frames) == 1, frames  # a bare request gets bare replies
        line = frames[0].decode()
        if line == "":
            return lines
        lines.append(line)


def test_one_frame_client_written_from_the_readme_needs_no_sequence_numbers(server):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 20000)
    sock.connect(server.endpoint)
    sock.send_string("protocol_version")
    assert _bare_reply(sock) == ["= 2"]
    sock.send_string("play black f5")
    assert _bare_reply(sock) == ["= "]
    sock.send_string("genmove white")
    (reply,) = _bare_reply(sock)
    assert reply.startswith("= ") and parse_move(reply[2:]) in (
        Game.from_moves(["f5"]).position.legal_moves())
    sock.send_string("showboard")
    board = _bare_reply(sock)
    assert board[0] == "= " and len(board) >= 9
    assert sum(row.count("X") + row.count("O") for row in board[1:]) >= 6
    sock.send_string("frobnicate")
    assert _bare_reply(sock) == ["? unknown command"]
    # the same session still answers the two-frame form, with its framing
    sock.send_multipart([b"9", b"name"])
    assert sock.recv_multipart()[0] == b"9"
    sock.close(0)


def test_client_vanishing_mid_search_and_many_clients_coming_and_going():
    s, t = start_server(agent="uct:iterations=100000000", move_time=1.0, max_sessions=64)
    try:
        keeper = RemoteEngine(s.endpoint, timeout=10)
        keeper.gtp("play black f5")
        gone = RemoteEngine(s.endpoint, timeout=10)
        gone.send("genmove black")
        time.sleep(0.2)
        gone.close()  # vanishes mid-search
        for _ in range(50):
            c = RemoteEngine(s.endpoint, timeout=10)
            assert c.gtp("protocol_version") == "2"
            c.close()
        assert "f5" not in keeper.gtp("showboard")  # it answers...
        assert keeper.gtp("genmove white") in ("d6", "f4", "f6")  # ...with its game intact
        keeper.close()
    finally:
        s.stop()
        t.join(5)


def test_max_sessions_and_idle_timeout():
    s, t = start_server(max_sessions=2, idle_timeout=0.5)
    try:
        a = RemoteEngine(s.endpoint, timeout=5)
        b = RemoteEngine(s.endpoint, timeout=5)
        a.gtp("name")
        b.gtp("name")
        c = RemoteEngine(s.endpoint, timeout=5, retries=0)
        with pytest.raises(RemoteError, match="server full"):
            c.gtp("name")
        # idle sessions are freed (0.5 s idle, reaped once a second: a busy machine may take
        # longer than a fixed sleep)
        wait_until(lambda: not s.sessions, what="the idle sessions were freed")
        assert c.gtp("name") == "OthelloPy"
        for x in (a, b, c):
            x.close()
    finally:
        s.stop()
        t.join(5)


@pytest.mark.timeout(120)  # the bug below was a hang: fail in minutes, not in the global 10
def test_curve_allows_known_keys_and_refuses_unknown(tmp_path):
    server_pub, server_sec = generate_keys(tmp_path / "server", "server")
    client_pub, client_sec = generate_keys(tmp_path / "clients", "alice")
    _, stranger_sec = generate_keys(tmp_path / "strangers", "mallory")
    s, t = start_server(server_secret_key=server_sec, allowed_clients=tmp_path / "clients")
    try:
        ok = RemoteEngine(s.endpoint, timeout=5, keys=(client_sec, server_pub))
        assert ok.gtp("play black f5") == ""
        for keys in ((stranger_sec, server_pub), None):  # an unknown key, and no CURVE at all
            bad = RemoteEngine(s.endpoint, timeout=1, retries=0, keys=keys)
            with pytest.raises(RemoteError):
                bad.gtp("name")
            bad.close()
            # The request sent after the refusal, not before it: libzmq has dropped the refused
            # connection's pipe by then, and the send used to block forever.
            ctx = MonitoredContext()
            try:
                late = RemoteEngine(s.endpoint, timeout=1, retries=1, keys=keys, context=ctx)
                ctx.wait_for_handshake_failure()
                with pytest.raises(RemoteError):
                    late.gtp("name")
                late.close()
            finally:
                ctx.destroy(linger=0)
        ok.close()
    finally:
        s.stop()
        t.join(5)


class MonitoredContext(zmq.Context):
    """A context whose DEALER sockets are watched from their birth, before they connect."""

    _monitor: zmq.Socket  # declared: pyzmq takes other attributes for socket options

    def socket(self, socket_type, *args, **kwargs):
        sock = super().socket(socket_type, *args, **kwargs)
        if socket_type == zmq.DEALER:
            self._monitor = sock.get_monitor_socket()
            self._monitor.setsockopt(zmq.LINGER, 0)
        return sock

    def wait_for_handshake_failure(self) -> None:
        from zmq.utils.monitor import recv_monitor_message

        failed = {zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
                  zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL}
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self._monitor.poll(100) and recv_monitor_message(self._monitor)["event"] in failed:
                return
        raise AssertionError("the server never refused the handshake")


def test_non_loopback_bind_without_keys_refuses_to_start():
    with pytest.raises(SecurityError, match="without CURVE"):
        ZmqServer(EngineOptions(warmup=False), ServerConfig(endpoint="tcp://0.0.0.0:0"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "engine_server", "--zmq", "tcp://0.0.0.0:0",
                        "--no-stdio"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "without CURVE" in r.stderr


def test_engine_process_serves_zmq_beside_stdio(tmp_path):
    from clients.engine_process import EngineProcess

    endpoint = f"ipc://{tmp_path}/engine.sock"
    eng = EngineProcess.ours("--agent", "uct:iterations=200", "--zmq", endpoint)
    assert eng.gtp("play black f5") == ""
    c = RemoteEngine(endpoint, timeout=20)
    assert c.gtp("protocol_version") == "2"
    assert "f5" not in c.gtp("showboard").split("\n")[0]
    c.close()
    eng.send("quit")
    assert eng.proc.wait(10) == 0

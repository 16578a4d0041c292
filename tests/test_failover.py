"""Several engine servers sharing a PostgreSQL store, as if on separate machines (each named by
``--server-name``): clients with a list of endpoints play on across a kill -9 of their server,
a frozen server that wakes after its lease was taken over writes nothing and tells its client,
and ``othello-remote`` says so when nothing listens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq

from clients.channels import home_index
from clients.remote import RemoteEngine
from engine_server.serve.store import SessionStore

from .loadsafe import WAIT
from .served_engine import ServedEngine

REPO = Path(__file__).resolve().parent.parent
LEASE = 2.0


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f"[store]\nlease = {LEASE}\n")
    return path


def _engine(store: str, endpoint: str, config: Path, name: str) -> ServedEngine:
    proc = ServedEngine(["--no-warmup", "--agent", "ab:depth=3", "--zmq", endpoint,
                         "--no-stdio", "--store", store, "--config", str(config),
                         "--server-name", name])
    line = proc.line(0, WAIT)
    assert "serving ZeroMQ" in line, proc.stacks()
    return proc


def _two_machines(tmp_path: Path, postgres) -> tuple[str, list[str], ServedEngine,
                                                    ServedEngine]:
    """A new database, and two engine servers on it named as separate machines."""
    store = postgres.create_db()
    config = _config(tmp_path)
    ends = [f"ipc://{tmp_path}/a.sock", f"ipc://{tmp_path}/b.sock"]
    return (store, ends, _engine(store, ends[0], config, "machine-a"),
            _engine(store, ends[1], config, "machine-b"))


def _identity_homed_on(index: int, n: int, prefix: bytes) -> bytes:
    """A routing id whose home (the endpoint it starts on) is ``index`` of ``n``."""
    for i in range(1000):
        ident = prefix + str(i).encode()
        if home_index(ident, n) == index:
            return ident
    raise AssertionError("no such routing id")


def _moves(store: str, ident: bytes) -> list[int]:
    reader = SessionStore(store)
    try:
        state = reader.load("zmq", ident.hex())
        assert state is not None
        return list(state["controller"]["session"]["moves"])
    finally:
        reader.close()


@pytest.mark.slow  # engine processes
def test_a_client_with_endpoints_plays_on_across_a_kill_9_of_its_server(tmp_path, postgres):
    store, ends, a, b = _two_machines(tmp_path, postgres)
    try:
        ident = _identity_homed_on(0, 2, b"player-")
        c = RemoteEngine(ends, timeout=5, retries=2, identity=ident)
        assert c.endpoint == ends[0]
        c.gtp("play b f5")
        reply = c.gtp("genmove w")
        board = c.gtp("showboard")
        a.proc.kill()
        a.proc.wait(WAIT)
        start = time.monotonic()
        # b waits out a's lease (a is "on another machine"), then restores the game
        assert c.gtp("showboard") == board
        moved_after = time.monotonic() - start
        assert c.endpoint == ends[1] and c.channel.failovers >= 1
        assert moved_after < WAIT
        c.gtp("genmove b")
        assert len(_moves(store, ident)) == 3
        assert reply in {"D6", "F6", "F4"}
        c.close()
    finally:
        a.close()
        b.close()


@pytest.mark.slow  # engine processes
def test_a_frozen_server_that_wakes_after_its_lease_was_taken_writes_nothing_and_says_so(
        tmp_path, postgres):
    store, ends, a, b = _two_machines(tmp_path, postgres)
    ident = b"frozen-client"
    raw = zmq.Context.instance().socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.setsockopt(zmq.ROUTING_ID, ident)
    raw.connect(ends[0])
    try:
        raw.send_multipart([b"1", b"play b f5"])
        assert raw.recv_multipart() == [b"1", b"= "] and raw.recv_multipart() == [b"1", b""]
        os.kill(a.proc.pid, signal.SIGSTOP)
        try:
            raw.send_multipart([b"2", b"play w d6"])     # waits in frozen a's socket
            # the same client, moved to b: refused while a's lease runs, then served there
            c = RemoteEngine(ends[1], timeout=5, identity=ident)
            c.channel.seq = 10
            c.gtp("play w f6")
            c.gtp("genmove b")
            on_b = _moves(store, ident)
            assert on_b[:2] == [37, 45] and len(on_b) == 3
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        # a wakes and runs the request it held on its stale copy: the write is refused, the
        # client told, and the store keeps b's game
        assert raw.poll(int(WAIT * 1000)), a.stacks()
        told = raw.recv_multipart()
        assert told[0] == b"2" and told[1].startswith(b"? session taken over by another server")
        assert _moves(store, ident) == on_b
        raw.send_multipart([b"3", b"showboard"])
        while True:
            assert raw.poll(int(WAIT * 1000)), a.stacks()
            seq, line = raw.recv_multipart()
            if seq == b"3":
                break
        assert line.startswith(b"? session served by another server (machine-b/")
        assert _moves(store, ident) == on_b
        c.gtp("showboard")
        c.close()
    finally:
        raw.close(0)
        a.close()
        b.close()


@pytest.mark.slow  # engine and client processes
def test_othello_remote_with_endpoints_plays_on_across_a_kill_9(tmp_path, postgres):
    store, ends, a, b = _two_machines(tmp_path, postgres)
    ident = _identity_homed_on(0, 2, b"typist-").decode()
    code = "import sys; from clients.remote import interactive_main; sys.exit(interactive_main())"
    remote = subprocess.Popen([sys.executable, "-c", code, ",".join(ends), "--session", ident,
                               "--timeout", "5"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO)
    assert remote.stdin is not None and remote.stdout is not None

    def ask(line: str) -> list[str]:
        assert remote.stdin is not None and remote.stdout is not None
        remote.stdin.write(line + "\n")
        remote.stdin.flush()
        got = [remote.stdout.readline().rstrip("\n")]
        while got[-1] != "":
            got.append(remote.stdout.readline().rstrip("\n"))
        return got

    try:
        assert ask("play b f5") == ["= ", ""]
        before = ask("showboard")
        a.proc.kill()
        a.proc.wait(WAIT)
        assert ask("showboard") == before          # the same game, at b, printed once
        move = ask("genmove w")
        assert move[0] in {"= D6", "= F6", "= F4"} and move[1:] == [""]
        remote.stdin.close()
        assert remote.wait(WAIT) == 0
        assert f"session {ident} on {ends[0]}" in remote.stderr.read()
        assert len(_moves(store, ident.encode())) == 2
    finally:
        if remote.poll() is None:
            remote.kill()
            remote.wait()
        a.close()
        b.close()


def test_othello_remote_with_no_server_at_the_endpoint_says_so_and_exits_non_zero():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = "import sys; from clients.remote import interactive_main; sys.exit(interactive_main())"
    endpoint = f"tcp://127.0.0.1:{port}"
    r = subprocess.run([sys.executable, "-c", code, endpoint], input="name\n",
                       capture_output=True, text=True, timeout=WAIT, cwd=REPO)
    assert r.returncode == 1
    assert f"no server answers at {endpoint}" in r.stderr and r.stdout == ""


def test_a_match_player_and_the_client_take_a_list_of_endpoints():
    from clients.match.players.base import PlayerSpec, TimeControl
    from clients.match.players.gtp import ZmqPlayer

    spec = PlayerSpec.parse("far=zmq:tcp://127.0.0.1:5551,tcp://127.0.0.1:5552")
    assert spec.target == "tcp://127.0.0.1:5551,tcp://127.0.0.1:5552"
    eng = ZmqPlayer(spec, TimeControl(move_time=1.0))._open()
    try:
        assert eng.channel.endpoints == ["tcp://127.0.0.1:5551", "tcp://127.0.0.1:5552"]
        assert eng.channel.several and eng.endpoint in eng.channel.endpoints
    finally:
        eng.close()
    with pytest.raises(ValueError, match="no endpoint"):
        RemoteEngine(" , ")

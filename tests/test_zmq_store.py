"""The session store: ZeroMQ sessions that outlive their server (SIGTERM, kill -9), servers that
share one store, and store files that cannot be used."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import zmq

from clients.engine_client import EngineError
from clients.remote import RemoteEngine, RemoteError
from engine_server.game import PASS, Color, Game, parse_move
from engine_server.serve.store import SessionStore
from engine_server.serve.zmq_server import ServerConfig, ZmqServer
from engine_server.session import EngineOptions
from protocol.notation import vertex

from .loadsafe import WAIT, wait_until
from .served_engine import ServedEngine

REPO = Path(__file__).resolve().parent.parent


# --- ZeroMQ servers in this process -------------------------------------------------------------

def _server(store_path: Path | str, endpoint: str = "tcp://127.0.0.1:*", agent: str = "ab:depth=3",
            **cfg) -> tuple[ZmqServer, threading.Thread, SessionStore]:
    store = SessionStore(store_path, lease_s=cfg.pop("lease_s", 15.0))
    server = ZmqServer(EngineOptions(agent=agent, warmup=False),
                       ServerConfig(endpoint=endpoint, **cfg), store=store)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return server, t, store


def _stop(server: ZmqServer, t: threading.Thread, store: SessionStore) -> None:
    server.stop(drain=True)
    t.join(WAIT)
    store.close()


def test_a_resent_request_after_a_restart_is_answered_from_the_store_not_run_again(tmp_path):
    server, t, store = _server(tmp_path / "s.sqlite3")
    endpoint = server.endpoint
    c = RemoteEngine(endpoint, timeout=WAIT, identity=b"resender")
    c.gtp("play b f5")
    seq = c.send("genmove w")
    answer = []
    while not answer or answer[-1] != "":
        answer.append(c.read_line()[1])
    board = c.gtp("showboard")
    _stop(server, t, store)
    server, t, store = _server(tmp_path / "s.sqlite3", endpoint=endpoint)
    try:
        c.channel.reset()
        c._send(seq, "genmove w")     # the same request number: a resend
        again = []
        while not again or again[-1] != "":
            again.append(c.read_line()[1])
        assert again == answer and answer[0].startswith("= ")
        assert c.gtp("showboard") == board        # white moved once
        assert server.restored == 1
    finally:
        _stop(server, t, store)


def test_an_nboard_session_comes_back_with_its_depth_game_and_clock(tmp_path):
    server, t, store = _server(tmp_path / "s.sqlite3")
    endpoint = server.endpoint
    c = RemoteEngine(endpoint, protocol="nboard", timeout=WAIT, identity=b"nboard-gui")
    c.send("nboard 2")  # no answer expected
    game = "(;GM[Othello]PC[NBoard]PB[a]PW[b]TI[5:00//2:00]TY[8]BO[8 " + \
        "---------------------------OX------XO--------------------------- *]B[F5//1.5];)"
    c.send(f"set game {game}")
    c.nboard("set depth 5", until="set myname")
    c.nboard("ping 1", until="pong 1")
    before = server.sessions[b"nboard-gui"].controller.snapshot()
    _stop(server, t, store)
    server, t, store = _server(tmp_path / "s.sqlite3", endpoint=endpoint)
    try:
        c.channel.reset()
        assert c.nboard("ping 2", until="pong 2")[-1] == "pong 2"
        after = server.sessions[b"nboard-gui"].controller.snapshot()
        assert after == before
        assert after["handler"]["depth"] == 5 and after["handler"]["times"] == [1.5]
        assert after["handler"]["tc"][0] == 300.0
        lines = c.nboard("go", until="===")
        assert lines[-1].startswith("=== ")
    finally:
        _stop(server, t, store)


def test_two_servers_share_a_store_and_hand_a_session_over(store_location):
    path = store_location
    a, ta, sa = _server(path)
    b, tb, sb = _server(path)
    try:
        c = RemoteEngine(a.endpoint, timeout=WAIT, identity=b"traveller")
        c.gtp("play b f5")
        c.gtp("genmove w")
        board = c.gtp("showboard")
        # served by a: b refuses it while a holds its lease
        on_b = RemoteEngine(b.endpoint, timeout=WAIT, retries=0, identity=b"traveller",
                            restart_wait=0)
        with pytest.raises(RemoteError, match="served by another server"):
            on_b.gtp("showboard")
        on_b.close()
        _stop(a, ta, sa)        # a stops: its lease is given back, the session stays
        c.close()
        c = RemoteEngine(b.endpoint, timeout=WAIT, identity=b"traveller")
        assert c.gtp("showboard") == board
        assert b.restored == 1
        c.gtp("genmove b")
    finally:
        _stop(b, tb, sb)


def test_a_client_that_moved_to_another_server_is_handed_its_session(store_location):
    """Its first server holds the lease while the session is in its memory; asked for it by
    the other server, it gives the session back since its client has left."""
    a, ta, sa = _server(store_location)
    b, tb, sb = _server(store_location)
    try:
        c = RemoteEngine(a.endpoint, timeout=WAIT, identity=b"mover")
        c.gtp("play b f5")
        board = c.gtp("showboard")
        c.close()
        moved = RemoteEngine(b.endpoint, timeout=WAIT, identity=b"mover")
        assert moved.gtp("showboard") == board     # refused while a held it, then handed over
        assert b.restored == 1
        wait_until(lambda: b"mover" not in a.sessions, what="a closing its copy")
        moved.gtp("genmove w")
        assert sb.holds("zmq", b"mover".hex())
    finally:
        _stop(a, ta, sa)
        _stop(b, tb, sb)


def test_a_database_out_of_reach_refuses_requests_and_loses_nothing(tmp_path):
    """PostgreSQL down: a request whose result cannot be kept is refused (not run, as far as
    the client can tell) and the session leaves memory; once the database is back, the resend
    runs on what the store had."""
    pytest.importorskip("psycopg")
    from benchmarks.pgserver import LocalPostgres, PostgresUnavailable

    try:
        pg = LocalPostgres().start()
    except PostgresUnavailable as e:
        pytest.skip(str(e))
    try:
        server, t, store = _server(pg.create_db())
        c = RemoteEngine(server.endpoint, timeout=WAIT, identity=b"outage", restart_wait=0)
        c.gtp("play b f5")
        pg.halt()
        with pytest.raises(RemoteError, match="session store unavailable"):
            c.gtp("play w f6")
        with pytest.raises(RemoteError, match="session store unavailable"):
            c.gtp("showboard")
        pg.resume()
        c.restart_wait = WAIT
        c.gtp("play w f6")
        assert "X=3 O=3" in c.gtp("showboard")       # f5 kept, f6 played once
        assert store.load("zmq", b"outage".hex())["controller"]["session"]["moves"] == [37, 45]
        _stop(server, t, store)
    finally:
        pg.stop()


def test_a_quiet_session_another_server_holds_is_not_ended_for_its_age(store_location):
    path = store_location
    a, ta, sa = _server(path)
    b, tb, sb = _server(path, disconnected_timeout=0.5)
    try:
        c = RemoteEngine(a.endpoint, timeout=WAIT, identity=b"quiet")
        c.gtp("play b f5")
        time.sleep(1.0)     # older than b's disconnected_timeout, but a serves it
        with pytest.raises(RemoteError, match="served by another server"):
            RemoteEngine(b.endpoint, timeout=WAIT, retries=0, identity=b"quiet",
                         restart_wait=0).gtp("name")
        assert "X=4 O=1" in c.gtp("showboard")
        assert sa.load("zmq", b"quiet".hex()) is not None
    finally:
        _stop(a, ta, sa)
        _stop(b, tb, sb)


def test_a_server_whose_lease_was_taken_over_stops_writing_and_says_so(store_location):
    path = store_location
    a, ta, sa = _server(path, lease_s=1.0)
    b, tb, sb = _server(path, lease_s=1.0)
    sa.renew = lambda: 0      # a hangs as far as its leases go: they run out
    try:
        c = RemoteEngine(a.endpoint, timeout=WAIT, identity=b"split", restart_wait=0)
        c.gtp("play b f5")
        time.sleep(1.5)
        on_b = RemoteEngine(b.endpoint, timeout=WAIT, identity=b"split")
        assert "X=4 O=1" in on_b.gtp("showboard")     # b took it over from the store
        on_b.gtp("play w f6")
        # a's copy is stale: it may not answer from it nor write it over b's
        with pytest.raises(RemoteError, match="session taken over by another server"):
            c.gtp("play w d6")
        assert sb.load("zmq", b"split".hex())["controller"]["session"]["moves"] == [37, 45]
        wait_until(lambda: b"split" not in a.sessions, what="a closing its stale copy")
        with pytest.raises(RemoteError, match="served by another server"):
            RemoteEngine(a.endpoint, timeout=WAIT, retries=0, identity=b"split",
                         restart_wait=0).gtp("name")
    finally:
        _stop(a, ta, sa)
        _stop(b, tb, sb)


def test_a_session_that_ended_is_told_so_by_the_next_server(store_location):
    server, t, store = _server(store_location)
    endpoint = server.endpoint
    c = RemoteEngine(endpoint, timeout=WAIT, identity=b"quitter")
    c.gtp("play b f5")
    server.table.close(b"quitter", "test", expired="closed for a test")
    _stop(server, t, store)
    server, t, store = _server(store_location, endpoint=endpoint)
    try:
        c.channel.reset()
        with pytest.raises(RemoteError, match="session expired: closed for a test"):
            c.gtp("showboard")
        assert "X=2 O=2" in c.gtp("showboard")     # a new session, told once
    finally:
        _stop(server, t, store)


def test_stopping_refuses_new_work_with_a_reason_and_the_client_resends_it(tmp_path):
    server, t, store = _server(tmp_path / "s.sqlite3", drain_timeout=30.0)
    endpoint = server.endpoint
    c = RemoteEngine(endpoint, timeout=WAIT, identity=b"patient")
    c.gtp("play b f5")
    # a client mid-genmove keeps the server draining while the others are refused
    plain = zmq.Context.instance().socket(zmq.DEALER)
    plain.setsockopt(zmq.LINGER, 0)
    plain.connect(endpoint)
    plain.send_multipart([b"4", b"play b f5"])
    assert plain.recv_multipart() == [b"4", b"= "] and plain.recv_multipart() == [b"4", b""]
    slow = RemoteEngine(endpoint, timeout=WAIT, identity=b"slow")
    slow.gtp("othello-agent ab:depth=60")
    job = threading.Thread(target=lambda: slow.channel.send("genmove b"))
    job.start()
    job.join()
    deadline = time.monotonic() + WAIT
    while not server.sessions[b"slow"].session.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop(drain=True)
    plain.send_multipart([b"5", b"showboard"])     # no routing id of its own: told it is lost
    assert plain.recv_multipart()[1].startswith(b"? session lost: the server is stopping")
    plain.close(0)
    newcomer = RemoteEngine(endpoint, timeout=WAIT, retries=0, identity=b"newcomer",
                            restart_wait=0.0)
    with pytest.raises(EngineError, match="server stopping"):
        newcomer.gtp("name")
    # the refused request's resend runs on the next server, once
    result: list[str] = []
    resend = threading.Thread(target=lambda: result.append(c.gtp("genmove w")))
    resend.start()
    time.sleep(0.5)
    server.config.drain_timeout = 0.0    # give up on the deep search: interrupted
    t.join(WAIT)
    store.close()
    assert slow.read_line(WAIT)[1].startswith("? interrupted: the server is stopping")
    server, t, store = _server(tmp_path / "s.sqlite3", endpoint=endpoint)
    try:
        resend.join(WAIT)
        assert result and parse_move(result[0]) in Game.from_moves(["f5"]).position.legal_moves()
        assert "X=3 O=3" in c.gtp("showboard")    # f5 and one white move: nothing twice
    finally:
        _stop(server, t, store)


# --- engine processes: SIGTERM and kill -9 --------------------------------------------------------

def _engine(store: Path, endpoint: str, config: Path | None = None,
            agent: str = "ab:depth=5") -> ServedEngine:
    args = ["--no-warmup", "--agent", agent, "--zmq", endpoint, "--no-stdio", "--store", str(store)]
    if config is not None:
        args += ["--config", str(config)]
    proc = ServedEngine(args)
    line = proc.line(0, WAIT)
    assert "serving ZeroMQ" in line and str(store) in line, proc.stacks()
    return proc


@contextmanager
def _explained(procs: list[ServedEngine]):
    """A client's error comes with what the live engine said and where its threads were."""
    try:
        yield
    except EngineError as e:
        live = [p for p in procs if p.proc.poll() is None]
        raise AssertionError(f"{e}; the live engine's stderr and stacks:\n"
                             + "\n---\n".join(p.stacks() for p in live)) from e


def _play(endpoint: str, restart: dict[int, str] | None = None,
          on_restart=None) -> list[tuple[str, str]]:
    """A whole game: black's moves from the client (the first legal move), white's from the
    engine; every command and answer.  ``restart``: ply -> how the server is restarted before
    that ply's command."""
    c = RemoteEngine(endpoint, timeout=60, retries=5, identity=b"store-player")
    game = Game()
    said: list[tuple[str, str]] = []

    def ask(cmd: str) -> str:
        answer = c.gtp(cmd)
        said.append((cmd, answer))
        return answer

    ask("clear_board")
    while not game.is_over():
        ply = len(game.moves)
        if restart and ply in restart:
            on_restart(restart[ply], lambda: ask("showboard"), c)
        pos = game.position
        if pos.side == Color.BLACK:
            move = PASS if pos.must_pass() else pos.legal_moves()[0]
            ask(f"play b {vertex(move)}")
            game.play(move)
        else:
            game.play(parse_move(ask("genmove w")))
    ask("final_score")
    c.close()
    return said


@pytest.mark.slow  # whole games against engine processes, restarted
def test_a_game_goes_on_across_sigterm_and_kill_restarts_as_if_nothing_happened(tmp_path):
    endpoint = f"ipc://{tmp_path}/engine.sock"
    # The reference game is restarted cleanly (SIGTERM between moves) at the same plies: any
    # restart loses the search's table, and a fixed-depth search with a cold table may choose
    # another of two moves than one with the table of the moves before, so the kills and the
    # stop in mid-search below are held to what a clean restart keeps.
    # [remote] move_time: the sessions' cap of 10 s a move would cut a fixed-depth search short
    # on a busy machine (a restarted engine loads its kernels in its first search), and the
    # games compared move by move would part there
    uncapped = "[remote]\nmove_time = 600\n"
    plain_config = tmp_path / "plain.toml"
    plain_config.write_text(uncapped)
    plain_store = tmp_path / "plain.sqlite3"
    plain = [_engine(plain_store, endpoint, plain_config)]

    def clean_restart(how: str, during, client) -> None:
        assert plain[-1].terminate(WAIT) == 0
        plain.append(_engine(plain_store, endpoint, plain_config))

    try:
        with _explained(plain):
            expected = _play(endpoint, {7: "term", 20: "term", 33: "term", 46: "term"},
                             clean_restart)
        assert plain[-1].terminate(WAIT) == 0
    finally:
        for p in plain:
            p.close()
    store = tmp_path / "s.sqlite3"
    config = tmp_path / "config.toml"
    # drain_timeout = 0: a search under way is interrupted
    config.write_text("[store]\ndrain_timeout = 0\n\n" + uncapped)
    procs = [_engine(store, endpoint, config)]
    kinds: list[str] = []

    def restart(how: str, during, client) -> None:
        kinds.append(how)
        old = procs[-1]
        if how == "term-mid-search":
            # the genmove is sent, the server stopped while it searches: told "interrupted",
            # the client resends it to the next server
            waiter = threading.Thread(target=during)
            waiter.start()
            time.sleep(0.02)
            assert old.terminate(WAIT) == 0
            procs.append(_engine(store, endpoint, config))
            waiter.join(WAIT)
            return
        if how == "term":
            assert old.terminate(WAIT) == 0
        else:
            old.proc.kill()
            old.proc.wait(WAIT)
        procs.append(_engine(store, endpoint, config))

    try:
        with _explained(procs):
            got = _play(endpoint, {7: "term", 20: "kill", 33: "term-mid-search", 46: "kill"},
                        restart)
    finally:
        for p in procs:
            p.close()
    # the restarts' own showboard commands aside, the same game and answers, byte for byte
    assert [x for x in got if x[0] != "showboard"] == expected
    assert kinds == ["term", "kill", "term-mid-search", "kill"]


@pytest.mark.slow  # an engine process
def test_an_engine_given_a_corrupt_store_says_so_and_serves_without_one(tmp_path):
    store = tmp_path / "broken.sqlite3"
    garbage = os.urandom(8192)
    store.write_bytes(garbage)
    proc = ServedEngine(["--no-warmup", "--agent", "ab:depth=1", "--zmq", f"ipc://{tmp_path}/e.sock",
                         "--no-stdio", "--store", str(store)])
    try:
        said = proc.line(0, WAIT)
        assert said.startswith(f"othello-engine: session store {store}: is not a readable "
                               "SQLite file"), proc.stacks()
        assert "move it aside" in said and "Serving without a session store" in said
        ready = proc.line(1, WAIT)
        assert "serving ZeroMQ" in ready and "no session store" in ready, proc.stacks()
        c = RemoteEngine(f"ipc://{tmp_path}/e.sock", timeout=WAIT)
        with _explained([proc]):
            assert c.gtp("genmove b") in {"D3", "C4", "F5", "E6"}
        c.close()
        assert proc.terminate(WAIT) == 0
    finally:
        proc.close()
    assert store.read_bytes() == garbage    # left as it was, for its owner to look at


def test_an_nboard_client_resends_what_a_stopping_server_refused(tmp_path):
    server, t, store = _server(tmp_path / "s.sqlite3", drain_timeout=30.0)
    endpoint = server.endpoint
    gui = RemoteEngine(endpoint, protocol="nboard", timeout=WAIT, identity=b"gui")
    gui.send("nboard 2")
    assert gui.nboard("ping 1", until="pong 1")[-1] == "pong 1"
    slow = RemoteEngine(endpoint, timeout=WAIT, identity=b"slow")   # keeps the server draining
    slow.gtp("othello-agent ab:depth=60")
    slow.channel.send("genmove b")
    wait_until(lambda: server.sessions[b"slow"].session.busy, what="the deep search")
    server.stop(drain=True)
    got: list[list[str]] = []
    ping = threading.Thread(target=lambda: got.append(gui.nboard("ping 2", until="pong 2")))
    ping.start()
    time.sleep(0.5)      # refused ("status server stopping ..."), resent meanwhile
    assert not got
    server.config.drain_timeout = 0.0
    t.join(WAIT)
    store.close()
    server, t, store = _server(tmp_path / "s.sqlite3", endpoint=endpoint)
    try:
        ping.join(WAIT)
        assert got == [["pong 2"]]
    finally:
        _stop(server, t, store)


@pytest.mark.slow  # engine processes
def test_a_request_cut_by_a_kill_is_resent_as_soon_as_the_server_is_back(tmp_path):
    endpoint = f"ipc://{tmp_path}/engine.sock"
    store = tmp_path / "s.sqlite3"
    first = _engine(store, endpoint, agent="ab")
    procs = [first]
    try:
        # no retries, and a timeout far longer than the test waits: only the resend on
        # reconnect can bring the answer
        c = RemoteEngine(endpoint, timeout=3600, retries=0, identity=b"cut")
        c.gtp("time_settings 0 2 1")       # about 2 s a move
        c.gtp("play b f5")
        got: list[str] = []
        ask = threading.Thread(target=lambda: got.append(c.gtp("genmove w")))
        ask.start()
        time.sleep(0.5)
        first.proc.kill()
        first.proc.wait(WAIT)
        procs.append(_engine(store, endpoint, agent="ab"))
        ask.join(WAIT)
        assert got and parse_move(got[0]) in Game.from_moves(["f5"]).position.legal_moves()
        assert "X=3 O=3" in c.gtp("showboard")
        c.close()
    finally:
        for p in procs:
            p.close()

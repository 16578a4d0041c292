"""The session store against both back ends: an SQLite file and a real PostgreSQL server (the
``store_location`` fixture runs each test on both).  Sessions, leases and their fencing,
remembered endings, and stores that cannot be used."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys

import pytest

from engine_server.serve.store import SCHEMA_VERSION, SessionStore, StoreError, open_store


def _dead_holder() -> str:
    """A lease holder of this machine whose process has exited."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return f"{socket.gethostname()}/{dead.stdout.strip()}/00000000"


def test_a_session_is_written_read_and_ended_with_why(store_location):
    store = SessionStore(store_location)
    assert store.acquire("zmq", "ab12") is None
    assert store.save("zmq", "ab12", {"moves": [19, 18]})
    assert store.load("zmq", "ab12") == {"moves": [19, 18]}
    assert store.load("web", "ab12") is None and store.keys("zmq") == ["ab12"]
    store.save("zmq", "ab12", {"moves": [19]})      # the whole document, replaced
    assert store.load("zmq", "ab12") == {"moves": [19]}
    assert store.end("zmq", "ab12", "closed for a test")
    assert store.load("zmq", "ab12") is None
    # a second connection (another server) sees what was committed, and is told why once
    other = SessionStore(store_location)
    assert other.take_expired("zmq", "ab12") == "closed for a test"
    assert store.take_expired("zmq", "ab12") is None
    store.close()
    other.close()


def test_a_write_without_the_sessions_lease_is_refused(store_location):
    store = SessionStore(store_location)
    assert not store.save("zmq", "k", {"by": "nobody"})
    assert store.load("zmq", "k") is None and store.keys("zmq") == []
    assert not store.end("zmq", "k", "never held")
    assert store.take_expired("zmq", "k") is None


def test_a_lease_is_held_by_one_server_and_taken_over_when_it_runs_out(store_location):
    now = [1000.0]
    a = SessionStore(store_location, holder="a", lease_s=10, clock=lambda: now[0])
    b = SessionStore(store_location, holder="b", lease_s=10, clock=lambda: now[0])
    assert a.acquire("zmq", "k") is None and a.holds("zmq", "k")
    lease = b.acquire("zmq", "k")
    assert lease is not None and lease.holder == "a" and lease.left == 10.0
    now[0] += 8
    assert a.renew() == 1
    now[0] += 8
    assert b.acquire("zmq", "k") is not None      # renewed: still a's
    now[0] += 3
    assert b.acquire("zmq", "k") is None and b.holds("zmq", "k") and not a.holds("zmq", "k")
    # a, which failed to renew in time, may not write over what b writes now
    assert b.save("zmq", "k", {"by": "b"})
    assert not a.save("zmq", "k", {"by": "a"}) and a.load("zmq", "k") == {"by": "b"}
    # nor end it: b serves it now
    assert not a.end("zmq", "k", "ended by a") and a.load("zmq", "k") == {"by": "b"}
    assert a.take_expired("zmq", "k") is None and b.holds("zmq", "k")
    b.release("zmq")
    assert a.acquire("zmq", "k") is None


def test_a_stale_server_stays_fenced_off_after_the_new_holder_gave_the_lease_back(
        store_location):
    """Frozen past its lease, a server wakes when the server that took its session over has
    stopped (its leases given back, no row left): its writes still carry the old lease's
    token, and are refused; a lease taken again gets a new token."""
    now = [1000.0]
    a = SessionStore(store_location, holder="a", lease_s=5, clock=lambda: now[0])
    b = SessionStore(store_location, holder="b", lease_s=5, clock=lambda: now[0])
    a.acquire("zmq", "k")
    a.save("zmq", "k", {"moves": [1]})
    old = a.fence("zmq", "k")
    now[0] += 6                                   # a is frozen: its lease runs out
    assert b.acquire("zmq", "k") is None
    b.save("zmq", "k", {"moves": [1, 2]})
    b.release("zmq")                              # b drains: the lease row is gone
    assert not a.save("zmq", "k", {"moves": [1, 9]})
    assert not a.end("zmq", "k", "stale")
    assert a.load("zmq", "k") == {"moves": [1, 2]}
    # the same holder taking the lease again gets a new token; the old one stays refused
    assert a.acquire("zmq", "k") is None and a.fence("zmq", "k") != old
    assert a.save("zmq", "k", {"moves": [1, 2, 3]})
    assert a.fence("zmq", "k") is not None
    a.adopt("zmq", "k", old)
    assert not a.save("zmq", "k", {"moves": [0]})


def test_a_lease_taken_under_a_process_of_its_server_is_written_by_it(store_location):
    """A web game's process writes under the lease its server took (``adopt``)."""
    server = SessionStore(store_location, holder="srv")
    assert server.acquire("web", "tok") is None
    worker = SessionStore(store_location, holder="srv")
    assert not worker.save("web", "tok", {"ply": 1})     # no token: not its lease
    worker.adopt("web", "tok", server.fence("web", "tok"))
    assert worker.save("web", "tok", {"ply": 1})
    assert server.load("web", "tok") == {"ply": 1}


def test_the_lease_of_a_killed_server_of_this_machine_is_taken_at_once(store_location):
    a = SessionStore(store_location, holder=_dead_holder(), lease_s=600)
    b = SessionStore(store_location, lease_s=600)
    assert a.acquire("zmq", "k") is None
    assert b.acquire("zmq", "k") is None and b.holds("zmq", "k")


def test_a_killed_server_not_yet_reaped_counts_as_gone(store_location):
    """kill -9 leaves a zombie until its parent waits for it: it no longer serves."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc.kill()
        # not waited for: a zombie
        holder = f"{socket.gethostname()}/{proc.pid}/00000000"
        a = SessionStore(store_location, holder=holder, lease_s=600)
        b = SessionStore(store_location, lease_s=600)
        assert a.acquire("zmq", "k") is None
        import time
        deadline = time.monotonic() + 30
        while b.acquire("zmq", "k") is not None:
            assert time.monotonic() < deadline, "the killed holder never counted as gone"
            time.sleep(0.05)
    finally:
        proc.wait()


def test_a_holder_named_after_another_machine_is_waited_out_even_if_its_pid_is_free(
        store_location):
    """Servers on other machines (or named as if they were): no shortcut from a pid."""
    holder = "another-machine/" + _dead_holder().split("/", 1)[1]
    now = [1000.0]
    a = SessionStore(store_location, holder=holder, lease_s=15, clock=lambda: now[0])
    b = SessionStore(store_location, lease_s=15, clock=lambda: now[0])
    assert a.acquire("zmq", "k") is None
    lease = b.acquire("zmq", "k")
    assert lease is not None and lease.holder == holder
    now[0] += 15.5
    assert b.acquire("zmq", "k") is None


def test_old_sessions_nobody_holds_are_swept_and_their_clients_told(store_location):
    now = [1000.0]
    store = SessionStore(store_location, holder="a", lease_s=10, clock=lambda: now[0])
    for key in ("old", "held"):
        store.acquire("zmq", key)
        store.save("zmq", key, {})
    store.release("zmq", "old")
    now[0] += 5
    store.acquire("zmq", "new")
    store.save("zmq", "new", {})
    store.release("zmq", "new")
    assert store.sweep("zmq", 1001.0, "gone for a test") == ["old"]
    assert store.keys("zmq") == ["held", "new"]
    assert store.take_expired("zmq", "old") == "gone for a test"
    now[0] += 20                                  # held's lease has run out
    assert store.sweep("zmq", now[0], "gone") == ["held", "new"]


def test_a_broken_database_connection_is_opened_again(postgres):
    """The database restarted or the connection was cut since the last call: the next call
    opens a new connection and goes on."""
    dsn = postgres.create_db()
    store = SessionStore(dsn)
    store.acquire("zmq", "k")
    assert store.save("zmq", "k", {"n": 1})
    postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                 "application_name = 'othello-engine' AND pid <> pg_backend_pid()")
    assert store.save("zmq", "k", {"n": 2}) and store.load("zmq", "k") == {"n": 2}


def test_an_unreachable_database_fails_each_call_with_a_clear_error(postgres):
    from benchmarks.pgserver import LocalPostgres

    own = LocalPostgres().start()
    try:
        store = SessionStore(own.create_db())
        store.acquire("zmq", "k")
    finally:
        own.stop()
    with pytest.raises(StoreError, match="saving a session failed .*cannot connect.*"
                                         "database server runs"):
        store.save("zmq", "k", {})
    assert store.shared


# --- stores that cannot be used ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["garbage", "foreign", "newer"])
def test_a_file_that_is_not_our_store_is_refused_naming_it_and_what_to_do(tmp_path, kind):
    path = tmp_path / "s.sqlite3"
    if kind == "garbage":
        path.write_bytes(os.urandom(4096))
    else:
        db = sqlite3.connect(path)
        if kind == "foreign":
            db.execute("CREATE TABLE photos (id INTEGER)")
        else:
            SessionStore(path).close()
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        db.commit()
        db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as e:
        SessionStore(path)
    text = str(e.value)
    assert str(path) in text and "--store PATH" in text
    assert {"garbage": "not a readable SQLite file", "foreign": "another program",
            "newer": "newer othello-engine"}[kind] in text
    assert path.read_bytes() == before     # nothing written to it
    said: list[str] = []
    assert open_store(path, said.append) is None
    assert "Serving without a session store" in said[0] and str(path) in said[0]


def test_a_store_file_of_the_first_version_is_upgraded_in_place(tmp_path):
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE sessions (kind TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL,
            updated REAL NOT NULL, PRIMARY KEY (kind, key));
        CREATE TABLE leases (kind TEXT NOT NULL, key TEXT NOT NULL, holder TEXT NOT NULL,
            until REAL NOT NULL, PRIMARY KEY (kind, key));
        CREATE TABLE expired (kind TEXT NOT NULL, key TEXT NOT NULL, why TEXT NOT NULL,
            at REAL NOT NULL, PRIMARY KEY (kind, key));
        INSERT INTO sessions VALUES ('zmq', 'k', '{"moves": [37]}', 1.0);
        INSERT INTO leases VALUES ('zmq', 'k', 'gone/1/0', 0.0);
        PRAGMA application_id = 1330924627;
        PRAGMA user_version = 1;""")
    db.close()
    store = SessionStore(path)
    assert store.load("zmq", "k") == {"moves": [37]}
    assert store.acquire("zmq", "k") is None and store.save("zmq", "k", {"moves": [37, 45]})
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("kind", ["foreign", "newer", "unmarked"])
def test_a_database_that_is_not_our_store_is_refused_naming_it_and_what_to_do(postgres, kind):
    dsn = postgres.create_db()
    name = dsn.rsplit("/", 1)[1]
    if kind == "foreign":
        postgres.sql("CREATE TABLE sessions (id INTEGER)", db=name)
    elif kind == "newer":
        SessionStore(dsn).close()
        postgres.sql(f"UPDATE othello_store SET version = {SCHEMA_VERSION + 1}", db=name)
    else:
        postgres.sql("CREATE TABLE othello_store (app TEXT, version INTEGER)", db=name)
    with pytest.raises(StoreError) as e:
        SessionStore(dsn)
    text = str(e.value)
    assert dsn in text
    assert {"foreign": "holds tables of another program (sessions)",
            "newer": "newer othello-engine (store version",
            "unmarked": "othello_store that is not ours"}[kind] in text
    # a shared store that cannot be used is not replaced by serving from memory
    with pytest.raises(StoreError):
        open_store(dsn, lambda text: None)


def test_a_database_out_of_reach_or_missing_is_refused_saying_what_to_do(postgres):
    with pytest.raises(StoreError, match="no_such_db.*does not exist.*createdb"):
        SessionStore(postgres.dsn("no_such_db"))
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(StoreError, match=f"127.0.0.1:{port}/x: cannot connect .*start the "
                                         "database server"):
        SessionStore(f"postgresql://u:secret@127.0.0.1:{port}/x")
    try:
        SessionStore(f"postgresql://u:secret@127.0.0.1:{port}/x")
    except StoreError as e:
        assert "secret" not in str(e) and "u:***@" in str(e)


def test_an_address_that_is_neither_a_file_nor_postgresql_is_refused(tmp_path):
    with pytest.raises(StoreError, match="not a file path nor a PostgreSQL address"):
        SessionStore("mysql://root@localhost/othello")
    assert not (tmp_path / "mysql:").exists()


def test_a_full_disk_fails_the_write_with_a_clear_error_and_keeps_what_was_written(tmp_path):
    store = SessionStore(tmp_path / "s.sqlite3")
    store.acquire("zmq", "a")
    store.save("zmq", "a", {"moves": [1]})
    store.acquire("zmq", "b")
    pages = store.backend.db.execute("PRAGMA page_count").fetchone()[0]
    store.backend.db.execute(f"PRAGMA max_page_count={pages}")   # no room for one more page
    with pytest.raises(StoreError, match="saving a session failed .*full.*disk space"):
        store.save("zmq", "b", {"moves": list(range(60)) * 200})
    assert store.load("zmq", "a") == {"moves": [1]}


def test_a_refused_server_marks_the_lease_wanted_and_its_holder_can_hand_it_over(
        store_location):
    a = SessionStore(store_location, holder="a")
    b = SessionStore(store_location, holder="b")
    a.acquire("web", "tok")
    a.save("web", "tok", {"ply": 4})
    assert a.take_wanted("web") == []
    assert b.acquire("web", "tok") is not None       # a's: marked as wanted
    assert a.take_wanted("zmq") == [] and b.take_wanted("web") == []
    assert a.take_wanted("web") == ["tok"]
    assert a.take_wanted("web") == []                # the mark is taken once
    a.release("web", "tok")                          # handed over
    assert b.acquire("web", "tok") is None and b.load("web", "tok") == {"ply": 4}
    assert b.take_wanted("web") == []                # a lease taken starts unmarked

"""Tournaments on a Dask cluster (clients/match/cluster.py): a scheduler and two single-threaded
workers on loopback, started here as the documented recipe starts them (``dask scheduler``,
``dask worker --nthreads 1``); a round-robin that matches the local run game for game; a worker
killed mid-game; a client killed and resumed; the ``othello-match cluster`` command."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from clients.match import cluster as C  # noqa: E402
from clients.match.pool import run_task  # noqa: E402
from clients.match.referee import GameTask  # noqa: E402
from clients.match.tournament import MatchConfig, MatchError, run_match, schedule  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
DASK = str(Path(PY).parent / "dask")
# Deterministic budgets only (no clock): the same seed must give the same games anywhere.
PLAYERS = ["agent:random", "agent:ab:depth=1", "agent:uct:iterations=30"]
# under pytest-xdist (--dist loadgroup) one worker runs this module: one cluster, not one each
pytestmark = pytest.mark.xdist_group("cluster")


def _env() -> dict[str, str]:
    # the workers import this module (the stalling work function below) by name
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _start(args: list[str], log: Path) -> subprocess.Popen:
    # a session of its own: the whole group (nanny, worker, engines) is stopped at the end
    with open(log, "w") as f:
        return subprocess.Popen(args, cwd=REPO, env=_env(), stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(15)
        try:  # a worker process its nanny left behind
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory) -> Iterator[str]:
    """The address of a scheduler with two workers, all on 127.0.0.1 and free ports."""
    d = tmp_path_factory.mktemp("dask")
    info = d / "scheduler.json"
    procs = [_start([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(info)], d / "scheduler.log")]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() or not info.read_text().strip():
            assert time.monotonic() < deadline, (d / "scheduler.log").read_text()
            assert procs[0].poll() is None, (d / "scheduler.log").read_text()
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for i in range(2):
            procs.append(_start([DASK, "worker", address, "--nthreads", "1", "--host",
                                 "127.0.0.1", "--no-dashboard", "--name", f"w{i}"],
                                d / f"worker{i}.log"))
        _wait_workers(address, 2)
        yield address
    finally:
        _stop(procs)


def _wait_workers(address: str, n: int) -> None:
    client = C.connect(address)
    try:
        client.wait_for_workers(n, timeout=120)
    finally:
        client.close()


def _config(tmp_path: Path, name: str, **kw) -> MatchConfig:
    kw.setdefault("games", 2)
    return MatchConfig(players=list(kw.pop("players", PLAYERS)), out=tmp_path / name, **kw)


def _journal(config: MatchConfig) -> list[dict]:
    return [json.loads(l) for l in (config.out / "journal.jsonl").read_text().splitlines()]


@pytest.mark.slow  # whole games on a Dask cluster
def test_cluster_round_robin_is_the_local_round_robin(tmp_path, scheduler):
    local = _config(tmp_path, "local")
    remote = _config(tmp_path, "remote")
    a = run_match(local, concurrency=1, progress=False, plots=False)
    b = run_match(remote, progress=False, plots=False, cluster=scheduler)
    assert a["games_played"] == b["games_played"] == 6 == len(schedule(remote))
    la = {r["key"]: r for r in _journal(local)}
    lb = {r["key"]: r for r in _journal(remote)}
    assert len(lb) == len(_journal(remote)) == 6  # each game once
    assert la.keys() == lb.keys() == {t.key for t in schedule(remote)}
    for key, r in la.items():
        for field in ("moves", "winner", "black_score", "seed", "reason", "black", "white"):
            assert lb[key][field] == r[field], (key, field)
    # the tables agree but for times
    timeless = [{k: v for k, v in p.items() if k != "mean_move_time"} for p in a["players"]]
    assert timeless == [{k: v for k, v in p.items() if k != "mean_move_time"}
                        for p in b["players"]]
    assert (remote.out / "games.ggf").read_text().count("\n") == 6


def _stall_once(task: GameTask, marker: str, target: str) -> object:
    """run_task, except that the first attempt at ``target`` plays its game, then records its
    process in ``marker`` and waits to be killed before handing the result back (the worst
    moment: a game played to the end whose result must not count); every attempt at
    ``target`` appends its pid to ``marker``."""
    out = run_task(task)
    if task.key == target:
        first = not os.path.exists(marker)
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
        if first:
            time.sleep(300)
    return out


@pytest.mark.slow  # whole games on a Dask cluster
def test_a_worker_killed_mid_game_costs_that_game_only(tmp_path, scheduler, monkeypatch):
    _wait_workers(scheduler, 2)
    config = _config(tmp_path, "kill", players=["agent:random", "agent:ab:depth=1"], games=4)
    target = schedule(config)[1].key
    marker = tmp_path / "attempts"
    work = functools.partial(_stall_once, marker=str(marker), target=target)
    # the tournament imports run_cluster when it runs: the whole path, with this work function
    monkeypatch.setattr(C, "run_cluster", functools.partial(C.run_cluster, work=work))
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if marker.exists() and marker.read_text().strip():
                pid = int(marker.read_text().split()[0])
                time.sleep(0.2)  # the worker is inside the task, its result not yet sent
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    res = run_match(config, progress=False, plots=False, cluster=scheduler)
    t.join(5)
    assert killed, "the stalled game never started"
    attempts = [int(x) for x in marker.read_text().split()]
    assert len(attempts) == 2 and attempts[0] == killed[0] and attempts[1] != killed[0]
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0], 0)
    keys = [r["key"] for r in _journal(config)]
    assert len(keys) == len(set(keys)) == 4 == res["games_played"]
    assert sorted(keys) == sorted(t.key for t in schedule(config))
    assert target in keys


@pytest.mark.slow  # whole games on a Dask cluster
def test_a_killed_client_resumes_from_its_journal(tmp_path, scheduler):
    _wait_workers(scheduler, 2)
    out = tmp_path / "cli"
    args = [PY, "-m", "clients.match.cli", "agent:random", "agent:uct:iterations=200",
            "--games", "8", "--openings", "start", "--out", str(out), "--no-plots",
            "--no-progress", "--cluster", scheduler]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    journal = out / "journal.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if journal.exists() and len(journal.read_text().splitlines()) >= 2:
                break
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    n_killed = len(journal.read_text().splitlines())
    assert 2 <= n_killed < 8
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    keys = [json.loads(l)["key"] for l in journal.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 8
    assert "8/8 games" in done.stdout


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "CONNECT_TIMEOUT", 1.0)
    config = _config(tmp_path, "none", players=["agent:random", "agent:random"])
    with pytest.raises(MatchError, match="tcp://127.0.0.1:9"):
        run_match(config, progress=False, plots=False, cluster="tcp://127.0.0.1:9")


def test_tls_options_need_all_three_files(tmp_path):
    assert C.ClusterOptions("tcp://127.0.0.1:8786").security() is None
    with pytest.raises(MatchError, match="together"):
        C.ClusterOptions("tls://h:8786", tls_ca_file="ca.pem").security()
    sec = C.ClusterOptions("tls://h:8786", "ca.pem", "me.pem", "me.key").security()
    assert sec.require_encryption and sec.tls_client_cert == "me.pem"
    assert sec.tls_ca_file == "ca.pem" and sec.tls_client_key == "me.key"


def _certificate(d: Path) -> tuple[str, str]:
    """A self-signed certificate (its own CA) and its key, for a test of one day."""
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=othello-test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


@pytest.mark.slow  # a scheduler process and a match over TLS
def test_the_cluster_command_serves_a_match_over_tls_and_stops_on_sigterm(tmp_path,
                                                                          monkeypatch):
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = _certificate(tmp_path)
    tls = ["--tls-ca-file", cert, "--tls-cert", cert, "--tls-key", key]
    proc = subprocess.Popen([PY, "-m", "clients.match.cli", "cluster", "--workers", "1",
                             "--port", "0", *tls], cwd=REPO, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line.startswith("scheduler tls://127.0.0.1:"), proc.stderr.read()
        address = line.split()[1].rstrip(",")
        config = _config(tmp_path, "local-cluster", players=["agent:random", "agent:random"])
        res = run_match(config, progress=False, plots=False,
                        cluster=C.ClusterOptions(address, cert, cert, key))
        assert res["games_played"] == 2
        # without the certificate the scheduler is out of reach
        monkeypatch.setattr(C, "CONNECT_TIMEOUT", 2.0)
        with pytest.raises(MatchError, match="cannot reach"):
            C.connect(address.replace("tls://", "tcp://"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        _stop([proc])


# --- the training commands' games ----------------------------------------------------------------

@pytest.mark.slow  # self-play games on a Dask cluster
def test_network_selfplay_and_gate_games_on_the_cluster_match_local_ones(tmp_path, scheduler):
    pytest.importorskip("torch")
    from papers.alphazero import export, selfplay
    from papers.alphazero.model import NetConfig, build

    net = export.export(build(NetConfig(blocks=1, filters=8, legal=True, value_hidden=16),
                              seed=2), tmp_path / "n.onnx")
    cfg = {"iterations": 4, "temp_moves": 4, "noise": 0.25, "noise_alpha": 0.5,
           "rules": "standard", "memory_mib": 64}
    tasks = [("selfplay", {"net": str(net), "cfg": cfg, "index": i, "seed": 100 + i})
             for i in range(2)]
    got: dict[str, list] = {"local": [], "cluster": []}
    selfplay.run_tasks(tasks, 1, got["local"].append)
    selfplay.run_tasks(tasks, 1, got["cluster"].append, cluster=scheduler)
    assert len(got["cluster"]) == 2
    by_index = {g["index"]: g for g in got["local"]}
    for g in got["cluster"]:
        assert g["move"].tolist() == by_index[g["index"]]["move"].tolist()
        assert g["black_score"] == by_index[g["index"]]["black_score"]
    # gate games: results are logged as they come, and a rerun finds them done
    log = tmp_path / "gate.jsonl"
    remote = selfplay.match(net, net, 2, 4, log_path=log, cluster=scheduler)
    local = selfplay.match(net, net, 2, 4, workers=1)
    assert {k: remote[k] for k in ("wins", "draws", "losses")} == \
        {k: local[k] for k in ("wins", "draws", "losses")}
    assert len(log.read_text().splitlines()) == 2


@pytest.mark.slow  # self-play games on a Dask cluster
def test_pattern_selfplay_chunks_on_the_cluster_are_the_local_data(tmp_path, scheduler):
    import numpy as np

    from engine_server.game import Rules
    from training import selfplay

    kw = dict(agent_spec="ab:depth=1,random=6", rules=int(Rules.STANDARD), games=6,
              solve_empties=6, seed=5, log=lambda _: None, chunk=2)
    local = selfplay.dataset(cache=tmp_path / "local.npz", threads=1, **kw)
    remote = selfplay.dataset(cache=tmp_path / "remote.npz", cluster=scheduler, **kw)
    assert len(local) > 6 * 20
    for field in ("P", "O", "empties", "target", "game"):
        assert np.array_equal(getattr(local, field), getattr(remote, field)), field


@pytest.mark.slow  # self-play games on a Dask cluster
def test_selfplay_shards_on_the_cluster_are_the_local_bytes(tmp_path, scheduler):
    from engine_server.eval import weights as wts
    from engine_server.game import Rules
    from training import selfplay_data as SD

    def run(out, **kw):
        return SD.run(out, int(Rules.STANDARD), 6, 2, 8, SD.Openings.parse("random:4-8"),
                      wts.weights_path(int(Rules.STANDARD)), 5, 2, log=lambda _: None, **kw)

    local = run(tmp_path / "local", threads=1)
    remote = run(tmp_path / "remote", cluster=scheduler)
    assert remote.played_games == 6 and remote.positions == local.positions
    names = sorted(p.name for p in (tmp_path / "local").glob("shard-*.npz"))
    assert len(names) == 3
    for name in names:
        assert (tmp_path / "local" / name).read_bytes() == \
            (tmp_path / "remote" / name).read_bytes(), name

"""The configuration file, presets everywhere a spec is accepted, and the limits of sessions."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clients.backend import InProcessBackend
from clients.match.players import PlayerSpec
from clients.remote import RemoteEngine, RemoteError
from engine_server.agents import AgentSpecError
from engine_server.agents.policy import BUILTIN_PRESETS, AgentPolicy, Catalog, spec_cost
from engine_server.config import ConfigError, dumps, load, loads, resolve_agent
from engine_server.eval import weights as wts
from engine_server.game import STANDARD
from engine_server.serve.zmq_server import ServerConfig, ZmqServer
from engine_server.session import EngineOptions, Output, Session

from .loadsafe import SLACK
from .protocol_harness import Harness

REPO = Path(__file__).resolve().parent.parent
ENGINE = [sys.executable, "-m", "engine_server"]


def readme_example() -> str:
    """The configuration example of the docs (docs/engine.md, "Configuration file")."""
    text = (REPO / "docs" / "engine.md").read_text()
    m = re.search(r"```toml\n(.*?)```", text, re.S)
    assert m, "docs/engine.md has no ```toml example"
    return m.group(1)


# --- the file -----------------------------------------------------------------------------
def test_the_readme_example_loads_with_every_section():
    cfg = loads(readme_example(), "docs/engine.md")
    assert cfg.engine["agent"] == "strong" and cfg.engine["move_time"] == 4.8
    assert cfg.presets["club"] == "ab:depth=4,threads=1"
    assert cfg.presets["beginner"] == BUILTIN_PRESETS["beginner"]  # built-ins stay
    assert cfg.levels == {1: "beginner", 4: "club", 8: "medium", 12: "strong"}
    assert cfg.remote.threads == 1 and cfg.remote.memory_mib == 256.0
    assert cfg.remote.forbidden_params == ["weights", "net", "book_file"]
    assert cfg.limits.threads is None
    assert cfg.zmq["endpoint"] == "tcp://127.0.0.1:5555" and cfg.log["level"] == "warning"


def test_print_config_reads_back_to_the_same_configuration():
    cfg = loads(readme_example(), "docs/engine.md")
    again = loads(dumps(cfg), "printed")
    for part in ("engine", "log", "zmq", "presets", "levels", "limits", "remote"):
        assert getattr(again, part) == getattr(cfg, part), part


@pytest.mark.parametrize("text, line, words", [
    ("[engine]\nagent = \"best\"\nagnet = \"uct\"\n", 3, "unknown key 'agnet' in [engine]"),
    ("[engine]\nseed = 1\n\n[remot]\nthreads = 1\n", 4, "unknown table [remot]"),
    ("[remote]\nthreads = \"two\"\n", 2, "[remote] threads = 'two': expected an integer"),
    ("[remote]\nmove_time = true\n", 2, "expected seconds > 0"),
    ("[engine]\nmove_overhead = -0.1\n", 2, "expected seconds 0..10"),
    ("[presets]\nfast = \"uct:iteratons=5\"\n", 2, "unknown parameter 'iteratons'"),
    ("[engine]\nmove_time = 1\n[engine\n", 3, "line 3"),
    ("[levels]\n1 = \"nosuch\"\n", 0, "names 'nosuch', which is not a preset"),
    ("[presets]\nuct = \"uct\"\n", 0, "has the name of an agent family"),
    ("[engine]\nagent = \"best:threads=2\"\n[zmq]\nendpoint = \"tcp://127.0.0.1:5555\"\n"
     "[remote]\nthreads = 1\n", 0, "the default agent 'best:threads=2' is refused by [remote]"),
])
def test_a_bad_file_is_refused_naming_the_line(text, line, words):
    with pytest.raises(ConfigError) as e:
        loads(text, "club.toml")
    msg = str(e.value)
    assert words in msg, msg
    if line:
        assert msg.startswith(f"club.toml:{line}:") or f"line {line}" in msg, msg


@pytest.mark.slow  # several engine processes
def test_a_bad_file_stops_the_engine_at_start_and_flags_override_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[engine]\nname = \"Club\"\nmove_tme = 2\n")
    p = subprocess.run([*ENGINE, "--config", str(bad)], input="", capture_output=True,
                       text=True, timeout=60, cwd=REPO)
    assert p.returncode == 2 and f"{bad}:3: unknown key 'move_tme'" in p.stderr
    good = tmp_path / "good.toml"
    good.write_text("[engine]\nname = \"Club\"\nagent = \"club\"\nseed = 4\n"
                    "[presets]\nclub = \"uct:iterations=50\"\n")
    out = subprocess.run([*ENGINE, "--config", str(good), "--seed", "9", "--print-config"],
                         capture_output=True, text=True, timeout=60, cwd=REPO).stdout
    printed = loads(out, "printed")
    assert printed.engine["name"] == "Club" and printed.engine["seed"] == 9  # the flag won
    assert printed.presets["club"] == "uct:iterations=50"
    p = subprocess.run([*ENGINE, "--config", str(good), "--no-warmup"],
                       input="name\nothello-agent\nquit\n", capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert p.stdout.split("\n\n")[:2] == ["= Club", "= uct:iterations=50"], p.stdout
    listing = subprocess.run([*ENGINE, "--config", str(good), "--list-agents"],
                             capture_output=True, text=True, timeout=60, cwd=REPO).stdout
    assert "club" in listing and "uct:iterations=50" in listing and "seed004-dk" in listing


def test_a_missing_file_is_an_error_and_no_file_means_defaults(tmp_path):
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load(tmp_path / "nope.toml")
    assert load(None).remote.threads == 1 and load(None).remote.memory_mib == 256
    assert load(None).limits.threads is None


# --- the policy ---------------------------------------------------------------------------
LIMITED = AgentPolicy(max_threads=1, max_memory_mib=128, forbidden_params=("weights",))


def test_defaults_are_lowered_to_fit_and_explicit_values_beyond_a_limit_are_refused():
    assert LIMITED.admit("best", BUILTIN_PRESETS) == "best:threads=1"
    uct = LIMITED.admit("uct", BUILTIN_PRESETS)
    # a tree's peak is twice its cap (reuse copies the kept subtree)
    assert uct == "uct:memory=64" and spec_cost(uct).memory_mib == 128
    assert LIMITED.admit("uct:c=0.5", BUILTIN_PRESETS) == "uct:c=0.5,memory=64"
    assert LIMITED.admit("uct:solver=1", BUILTIN_PRESETS) == "uct:solver=1,memory=48"
    assert spec_cost(LIMITED.admit("mcts", BUILTIN_PRESETS)).memory_mib <= 128
    assert spec_cost(LIMITED.admit("mcts", BUILTIN_PRESETS)).threads == 1
    with pytest.raises(AgentSpecError, match="threads=2 is above this server's limit of 1"):
        LIMITED.admit("best:threads=2", BUILTIN_PRESETS)
    with pytest.raises(AgentSpecError, match="memory=50000 needs .* limit of 128 MiB"):
        LIMITED.admit("uct:memory=50000", BUILTIN_PRESETS)
    with pytest.raises(AgentSpecError, match="table=26 needs"):
        LIMITED.admit("ab:table=26", BUILTIN_PRESETS)
    with pytest.raises(AgentSpecError, match="'weights' may not be set here"):
        LIMITED.admit("ab:weights=/etc/passwd", BUILTIN_PRESETS)
    assert AgentPolicy().admit("uct:memory=50000", {}) == "uct:memory=50000"  # no limits


def test_allowed_agents_and_presets_only():
    only = AgentPolicy(presets_only=True)
    assert only.admit("beginner", BUILTIN_PRESETS) == BUILTIN_PRESETS["beginner"]
    with pytest.raises(AgentSpecError, match="only presets may be chosen here"):
        only.admit("uct", BUILTIN_PRESETS)
    some = AgentPolicy(agents=("uct", "strong"))
    assert some.admit("uct:c=1", BUILTIN_PRESETS) == "uct:c=1"
    assert some.admit("strong", BUILTIN_PRESETS) == "best"
    with pytest.raises(AgentSpecError, match="agent 'mcts' is not allowed here; allowed: uct"):
        some.admit("mcts", BUILTIN_PRESETS)


def test_session_keeps_its_agent_when_a_request_is_refused():
    options = EngineOptions(agent="uct:iterations=100", warmup=False, policy=LIMITED)
    s = Session(options, Output(lambda line: None))
    try:
        s.play(37)
        with pytest.raises(AgentSpecError):
            s.set_agent("best:threads=2")
        assert s.agent_spec == "uct:iterations=100,memory=64" and s.game.moves == [37]
        s.set_agent("easy")
        assert s.agent_spec == "ab:depth=2,threads=1"
    finally:
        s.close()


def test_a_capped_session_stops_a_search_without_a_clock_at_the_cap():
    options = EngineOptions(agent="uct:iterations=100000000", warmup=False,
                            policy=AgentPolicy(max_move_time=0.3))
    s = Session(options, Output(lambda line: None))
    try:
        from engine_server.search.limits import Limits

        t0 = time.monotonic()
        job = s.start("genmove", Limits())
        s.finish()
        assert job.result is not None and job.result.best_move is not None
        # the cap's watchdog stopped a search of 10^8 iterations (minutes)
        assert job.result.stopped_by == "stop" and time.monotonic() - t0 < 0.3 + SLACK
        job = s.start("genmove", Limits(time=30.0))
        assert job.limits.time == 0.3
        s.finish()
        # the cap and the job's stop event go into the job's copy, not the caller's object
        mine = Limits(time=30.0, deadline=time.monotonic() + 60)
        job = s.start("genmove", mine)
        assert (mine.time, mine.stop) == (30.0, None) and mine.deadline > time.monotonic() + 50
        assert job.limits.time == 0.3 and job.limits.stop is job.stop
        s.finish()
    finally:
        s.close()


# --- remote sessions ----------------------------------------------------------------------
@pytest.fixture
def limited_server():
    options = EngineOptions(agent="uct:iterations=200", warmup=False)
    server = ZmqServer(options, ServerConfig(
        endpoint="tcp://127.0.0.1:*",
        remote_policy=AgentPolicy(max_threads=1, max_memory_mib=128, max_move_time=0.5,
                                  forbidden_params=("weights",))))
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.stop()
    t.join(5)


def test_a_remote_session_cannot_raise_threads_memory_or_time(limited_server):
    c = RemoteEngine(limited_server.endpoint, timeout=20)
    try:
        c.gtp("play black f5")
        before = c.gtp("othello-agent")
        for spec, words in (("best:threads=2", "limit of 1 per session"),
                            ("uct:memory=50000", "limit of 128 MiB"),
                            ("ab:weights=/etc/passwd", "may not be set here"),
                            ("nosuch", "unknown agent 'nosuch'")):
            with pytest.raises(RemoteError, match=words):
                c.gtp(f"othello-agent {spec}")
            assert c.gtp("othello-agent") == before
        assert "O" in c.gtp("showboard")  # the game is kept
        c.gtp("othello-agent uct:iterations=100000000")
        t0 = time.monotonic()
        assert c.gtp("genmove white") in ("D6", "F4", "F6")
        assert time.monotonic() - t0 < 0.5 + SLACK  # the 0.5 s cap, not 10^8 iterations
        c.gtp("othello-agent beginner")
        running = c.gtp("othello-agent")
        assert running == BUILTIN_PRESETS["beginner"] + ",memory=64"  # the cap, not 1024
        assert spec_cost(running).memory_mib <= 128
    finally:
        c.close()


# --- presets wherever specs are accepted ----------------------------------------------------
def test_presets_resolve_in_gtp_nboard_levels_referee_and_judge_adapters():
    catalog = Catalog(levels={1: "beginner", 5: "easy"})
    gtp = Harness("gtp", agent="uct:iterations=50")
    try:
        assert gtp.send("othello-agent seed000-ucb1") == ["= ", ""]
        assert gtp.session.agent_spec == BUILTIN_PRESETS["seed000-ucb1"]
        assert gtp.send("othello-agent nosuch")[0].startswith("? unknown agent 'nosuch'")
    finally:
        gtp.close()
    nb = Harness("nboard", agent="uct:iterations=50", catalog=catalog)
    try:
        nb.send("nboard 2", "set depth 6")
        assert nb.session.agent_spec == BUILTIN_PRESETS["easy"]
        nb.send("set depth 2")
        assert nb.session.agent_spec == BUILTIN_PRESETS["beginner"]
    finally:
        nb.close()
    assert PlayerSpec.parse("agent:strong").target == "best"
    assert resolve_agent("seed002-ocba") == BUILTIN_PRESETS["seed002-ocba"]
    backend = InProcessBackend("beginner", seed=1, iterations=5)
    assert backend.agent.spec == BUILTIN_PRESETS["beginner"]
    p = subprocess.run([sys.executable, "-m", "clients.botzone.main", "--agent", "nosuch"],
                       input="", capture_output=True, text=True, timeout=60, cwd=REPO)
    assert p.returncode == 2 and "unknown agent 'nosuch'" in p.stderr


def test_network_threads_and_paths_are_limited_like_search_threads_and_weights():
    policy = AgentPolicy(max_threads=1, forbidden_params=("weights", "net"))
    with pytest.raises(AgentSpecError, match="net_threads=4 is above this server's limit"):
        policy.admit("puct:net=default,net_threads=4", BUILTIN_PRESETS)
    with pytest.raises(AgentSpecError, match="'net' may not be set here .except to none"):
        policy.admit("puct:net=/tmp/x.onnx", BUILTIN_PRESETS)
    assert policy.admit("puct:net=none", BUILTIN_PRESETS) == "puct:net=none"


def test_a_local_engine_may_start_with_its_own_weights_but_a_zmq_server_may_not(tmp_path):
    # [remote] forbids weights= for remote sessions; an engine on stdin has none, so
    # `othello-engine --agent ab:weights=FILE` is the local user's own choice
    w = wts.weights_path(STANDARD)
    spec = f"ab:weights={w},book=off"
    p = subprocess.run([*ENGINE, "--agent", spec, "--no-warmup"],
                       input="othello-agent\nquit\n", capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert p.returncode == 0 and p.stdout.startswith(f"= {spec}"), (p.stdout, p.stderr)
    with pytest.raises(ConfigError, match="refused by \\[remote\\].*weights"):
        loads(f"[engine]\nagent = \"{spec}\"\n[zmq]\nendpoint = \"tcp://127.0.0.1:5555\"\n")
    assert loads(f"[engine]\nagent = \"{spec}\"\n").engine["agent"] == spec


# --- names you can guess ------------------------------------------------------------------
def test_preset_and_family_names_ignore_letter_case():
    open_policy = AgentPolicy()
    assert open_policy.admit("Medium", BUILTIN_PRESETS) == BUILTIN_PRESETS["medium"]
    assert open_policy.admit("STRONG", BUILTIN_PRESETS) == "best"
    assert open_policy.admit("UCT:c=1", BUILTIN_PRESETS) == "uct:c=1"
    assert AgentPolicy(agents=("Strong",)).admit("strong", BUILTIN_PRESETS) == "best"
    assert AgentPolicy(presets_only=True).admit("Easy", BUILTIN_PRESETS) == "ab:depth=2,threads=1"
    assert resolve_agent("Seed002-OCBA") == BUILTIN_PRESETS["seed002-ocba"]
    assert PlayerSpec.parse("agent:Medium").target == BUILTIN_PRESETS["medium"]
    cfg = loads('[engine]\nagent = "Club"\n[presets]\nclub = "ab:depth=4"\n'
                '[levels]\n3 = "CLUB"\n[limits]\nagents = ["Club", "UCT"]\n')
    assert cfg.resolve(cfg.engine["agent"]) == "ab:depth=4"
    with pytest.raises(ConfigError, match="'Fast' and 'fast' differ only in letter case"):
        loads('[presets]\nFast = "ab:depth=2"\nfast = "ab:depth=3"\n')


def test_an_unknown_name_lists_the_presets_and_the_agent_families():
    with pytest.raises(AgentSpecError) as e:
        AgentPolicy().admit("nosuch", BUILTIN_PRESETS)
    msg = str(e.value)
    assert msg.startswith("unknown agent 'nosuch'")
    assert "presets: " + ", ".join(BUILTIN_PRESETS) in msg
    assert "agent families: random, pseudo-random" in msg and "best" in msg
    with pytest.raises(AgentSpecError, match="'medium' is a preset and takes no parameters"):
        resolve_agent("medium:depth=3")
    with pytest.raises(ConfigError) as c:
        loads('[engine]\nagent = "nosuch"\n', "club.toml")
    assert str(c.value).startswith("club.toml:2: [engine] agent: unknown agent 'nosuch'")
    assert "refused" not in str(c.value) and "presets: " in str(c.value)

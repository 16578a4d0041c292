"""The web page's protocol handler (engine_server/commands/web.py), without sockets.

A harness plays the part of a tab's process (engine_server/serve/web.py): one controller
thread that feeds the handler each message and runs what the handler posts, and one ordered
stream of everything sent to the page.
Bad input must get an ``error`` and leave the game, the agents and the settings as they were.
"""

from __future__ import annotations

import json
import queue
import random
import threading
import time
from typing import Any, Callable

import pytest

from engine_server.agents import make_agent
from engine_server.agents.policy import BUILTIN_PRESETS, AgentPolicy, Catalog
from engine_server.commands.web import WebHandler, parse_move_list
from engine_server.game import PASS, Game, Position, ggf, square_name
from engine_server.search.limits import Limits
from engine_server.session import EngineOptions, Output, Session

from .loadsafe import SLACK, WAIT

# The [remote] defaults (engine_server/config.py): what a browser tab may choose.
REMOTE = AgentPolicy(max_threads=1, max_memory_mib=256, max_move_time=10.0,
                     forbidden_params=("weights",))


class WebHarness:
    def __init__(self, agent: str = "random", policy: AgentPolicy = REMOTE,
                 max_message_bytes: int = 64 * 1024, presets: dict[str, str] | None = None):
        self.messages: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        catalog = Catalog() if presets is None else Catalog(presets=presets)
        options = EngineOptions(agent=agent, warmup=False, policy=policy, catalog=catalog)
        self.session = Session(options, Output(self._sink))
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.handler = WebHandler(self.session, post=self.inbox.put,
                                  max_message_bytes=max_message_bytes, progress_interval=0.05)
        for m in self.handler.welcome():   # what the front end sends first
            self._sink(json.dumps(m))
        self.thread = threading.Thread(target=self._control, daemon=True)
        self.thread.start()

    def _sink(self, line: str) -> None:
        msg = json.loads(line)   # everything written is one JSON object per line
        with self._lock:
            self.messages.append(msg)

    def _control(self) -> None:
        while True:
            item = self.inbox.get()
            if item is None:
                break
            if callable(item):
                item()
                continue
            raw, box, done = item
            box.extend(self.handler.handle_text(raw, time.monotonic()))
            for m in box:
                self._sink(json.dumps(m))
            done.set()
        self.handler.close()

    def send_raw(self, raw: str | bytes) -> list[dict[str, Any]]:
        box: list[dict[str, Any]] = []
        done = threading.Event()
        self.inbox.put((raw, box, done))
        assert done.wait(30), "the controller did not answer"
        return box

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the controller thread (as the tab's process runs ATTACH and DETACH)."""
        box: list[Any] = []
        done = threading.Event()

        def call() -> None:
            box.append(fn())
            done.set()

        self.inbox.put(call)
        assert done.wait(30), "the controller did not run it"
        return box[0]

    def send(self, **msg: Any) -> list[dict[str, Any]]:
        return self.send_raw(json.dumps(msg))

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30.0,
                 start: int = 0) -> dict[str, Any]:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            with self._lock:
                found = [m for m in self.messages[start:] if pred(m)]
            if found:
                return found[0]
            time.sleep(0.005)
        raise AssertionError(f"timed out; last messages: {self.messages[-5:]}")

    def settled(self, timeout: float = 30.0) -> dict[str, Any]:
        """The state once no engine is thinking and the person (or nobody) is to move."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            s = self.send(type="state")[0]
            if not s["thinking"] and not s["hinting"] and (s["human_to_move"] or s["over"]
                                                           or s["paused"]):
                return s
            time.sleep(0.01)
        raise AssertionError(f"never settled: {self.messages[-3:]}")

    def close(self) -> None:
        self.inbox.put(None)
        self.thread.join(30)


@pytest.fixture
def web():
    h = WebHarness()
    yield h
    h.close()


def play_random_until_over(h: WebHarness, rng: random.Random) -> dict[str, Any]:
    s = h.settled()
    while not s["over"]:
        if s["must_pass"]:
            assert h.send(type="pass")[0]["type"] == "state"
        else:
            r = h.send(type="move", square=rng.choice(s["legal"]))
            assert r[0]["type"] == "state", r
        s = h.settled()
    return s


# --- first contact --------------------------------------------------------------------------
def test_welcome_sends_the_registry_presets_and_the_remote_limits(web):
    hello, state = web.messages[0], web.messages[1]
    assert hello["type"] == "welcome" and state["type"] == "state"
    families = {a["name"]: a for a in hello["agents"]}
    dk = {p["name"]: p for p in families["dk"]["params"]}
    assert dk["nSims"]["default"] == 50 and dk["max_iter"]["type"] == "int"
    assert "weights" not in {p["name"] for p in families["ab"]["params"]}  # forbidden remotely
    presets = {p["name"]: p["spec"] for p in hello["presets"]}
    assert presets["strong"] == "best:threads=1"        # fitted to one thread
    assert presets["beginner"].startswith("dk:nSims=5,max_iter=40")
    assert hello["limits"]["max_time"] == 10.0 and hello["limits"]["threads"] == 1
    assert state["legal"] == ["d3", "c4", "f5", "e6"] and state["human_to_move"]
    assert state["players"]["white"]["agent"] == "random"
    json.dumps(hello, allow_nan=False)   # strict JSON: a browser's JSON.parse reads it


def test_a_policy_that_allows_presets_only_lists_no_raw_families():
    h = WebHarness(policy=AgentPolicy(presets_only=True), presets={"club": "random"},
                   agent="club")
    try:
        hello = h.messages[0]
        assert [p["name"] for p in hello["presets"]] == ["club"]
        assert not any(a["spec_allowed"] for a in hello["agents"])
        err = h.send(type="new", white="uct")[0]
        assert err["type"] == "error" and "only presets" in err["message"]
    finally:
        h.close()


# --- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, words", [
    ("{bad", "malformed JSON"),
    ("", "malformed JSON"),
    ("[1, 2]", "a message is a JSON object"),
    ('"state"', "a message is a JSON object"),
    ("{}", "no message type"),
    ('{"type": 5}', "unknown message type 5"),
    ('{"type": "castle"}', "unknown message type 'castle'; known: hello, state"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("[" * 5000 + "]" * 5000, "malformed JSON"),
    ('{"type": "move"}', "a move needs a square"),
    ('{"type": "move", "square": 3}', "'square' must be a string"),
    ('{"type": "move", "square": "z9"}', "not a move: 'z9'"),
    ('{"type": "new", "time": "fast"}', "'time' must be a number"),
    ('{"type": "new", "time": NaN}', "'time' must be a number"),
    ('{"type": "new", "time": -1}', "must be >= 0"),
    ('{"type": "new", "time": 30}', "above this server's limit of 10 s"),
    ('{"type": "new", "rules": "chess"}', "unknown rules 'chess'"),
    ('{"type": "new", "white": 7}', 'must be "human" or an agent'),
    ('{"type": "import", "text": "(;GM[Go];)"}', "cannot import"),
    ('{"type": "import", "text": "f5d6zz"}', "cannot import"),
    ('{"type": "import", "text": "f5f5"}', "cannot import: move 2 (f5)"),
    ('{"type": "import"}', "nothing to import"),
])
def test_bad_input_gets_an_error_and_keeps_the_game(web, raw, words):
    web.send(type="move", square="f5")
    before = web.settled()
    replies = web.send_raw(raw)
    assert len(replies) == 1 and replies[0]["type"] == "error", replies
    assert words in replies[0]["message"], replies[0]["message"]
    after = web.settled()
    for key in ("board", "moves", "players", "time", "rules", "side"):
        assert after[key] == before[key], key


def test_an_oversized_message_is_refused_by_size_and_the_session_goes_on():
    h = WebHarness(max_message_bytes=2048)
    try:
        h.send(type="move", square="d3")
        before = h.settled()
        err = h.send(type="import", text="f5" * 2000)[0]
        assert err["type"] == "error"
        assert "over this server's limit of 2048 bytes" in err["message"]
        assert h.settled()["moves"] == before["moves"]
        assert h.send(type="ping", t=1)[0] == {"type": "pong", "t": 1}
    finally:
        h.close()


def test_ids_are_echoed_on_replies_and_errors(web):
    assert web.send(type="ping", id=7, t=3.5)[0] == {"type": "pong", "t": 3.5, "id": 7}
    err = web.send(type="move", square="a1", id="x1")[0]
    assert err["id"] == "x1" and err["request"] == "move"


@pytest.mark.parametrize("square, words", [
    ("d4", "illegal move d4: the square is taken"),
    ("a1", "illegal move a1: it flips no disc"),
    ("pass", "you cannot pass"),
])
def test_illegal_moves_are_refused(web, square, words):
    before = web.settled()
    err = web.send(type="move", square=square)[0]
    assert err["type"] == "error" and words in err["message"]
    assert web.settled()["moves"] == before["moves"] == []


def test_no_move_for_the_engine_side_nor_while_it_thinks():
    h = WebHarness(agent="uct")
    try:
        h.send(type="new", black="human", white="uct", time=3.0)
        h.send(type="move", square="f5")
        h.wait_for(lambda m: m["type"] == "state" and m["thinking"] == "white")
        err = h.send(type="move", square="d6")[0]
        assert "the engine is thinking" in err["message"]
        assert "the engine is thinking" in h.send(type="hint")[0]["message"]
        h.send(type="stop")
        s = h.settled()
        assert s["ply"] == 2 and s["human_to_move"]
        h.send(type="set", black="random", white="human")  # the engine now plays black
        s = h.settled()
        assert s["ply"] == 3 and s["side"] == "white"
        err = h.send(type="move", square="a1")[0]
        assert "illegal move a1" in err["message"]
    finally:
        h.close()


def test_unknown_and_refused_agents_keep_the_agent_and_the_game(web):
    web.send(type="move", square="f5")
    before = web.settled()
    for agent, words in [("nosuch", "unknown agent 'nosuch'"),
                         ("uct:explroe=2", "unknown parameter 'explroe'"),
                         ("best:threads=2", "above this server's limit of 1 per session"),
                         ("ab:weights=/etc/passwd", "parameter 'weights' may not be set here"),
                         ("mcts:memory=4096", "above this server's limit of 256 MiB")]:
        for kind in ("new", "set"):
            err = web.send(type=kind, black="human", white=agent)[0]
            assert err["type"] == "error" and words in err["message"], (agent, err)
    # watching two engines: one refused name refuses both, nothing changes
    err = web.send(type="new", black="random", white="nosuch")[0]
    assert err["type"] == "error"
    after = web.settled()
    assert after["players"] == before["players"] and after["moves"] == before["moves"]
    assert web.handler._spare is None


def test_presets_and_the_remote_policy_fit_the_agent(web):
    s = web.send(type="new", black="human", white="beginner", time=0)[0]
    assert s["players"]["white"] == {"human": False, "agent": "beginner",
                                     "spec": "dk:nSims=5,max_iter=40,memory=128"}
    s = web.send(type="new", white="best")[0]
    assert s["players"]["white"]["spec"] == "best:threads=1"
    assert web.session.agent_spec == "best:threads=1"
    s = web.send(type="new", white="dk:nSims=7,max_iter=30", time=0.5)[0]
    assert s["players"]["white"]["spec"] == "dk:nSims=7,max_iter=30,memory=128"
    assert s["time"] == 0.5 and s["max_time"] == 10.0


# --- playing --------------------------------------------------------------------------------
def test_a_full_game_against_random_ends_with_the_rules_core_score(web):
    s = play_random_until_over(web, random.Random(3))
    game = Game.from_moves(s["moves"])
    res = game.result()
    assert s["result"]["black"] == res.black_discs and s["result"]["white"] == res.white_discs
    assert s["result"]["score"] == res.black_score
    assert s["counts"] == {"black": res.black_discs, "white": res.white_discs}
    assert web.send(type="move", square=s["legal"][0] if s["legal"] else "a1")[0]["type"] \
        == "error"


def test_the_person_plays_white_and_the_engine_opens(web):
    s = web.send(type="new", black="random", white="human")[0]
    assert s["ply"] == 0
    s = web.settled()
    assert s["ply"] == 1 and s["side"] == "white" and s["human_to_move"] and s["last"]


def test_reversed_rules_come_from_new_and_from_a_ggf_record(web):
    s = web.send(type="new", rules="reversed", black="human", white="random")[0]
    assert s["rules"] == "reversed" and s["ply"] == 0
    s = play_random_until_over(web, random.Random(5))
    res = Game.from_moves(s["moves"], rules="reversed").result()
    assert s["result"]["score"] == res.black_score and res.rules.name == "REVERSED"
    rec = web.send(type="export")[0]["ggf"]
    assert "TY[8a]" in rec and f"RE[{res.black_score:+d}.000]" in rec
    assert web.send(type="new", rules="standard")[0]["rules"] == "standard"
    s = web.send(type="import", text=rec)[0]
    assert s["rules"] == "reversed" and s["over"] and s["result"]["score"] == res.black_score


def test_undo_takes_back_the_engine_reply_with_the_move(web):
    web.send(type="move", square="f5")
    s = web.settled()
    assert s["ply"] == 2
    s = web.send(type="undo")[0]
    assert s["ply"] == 0 and s["human_to_move"]
    assert web.send(type="undo")[0]["message"] == "nothing to undo"


def _forced_pass_game(rng: random.Random) -> list[int]:
    """Moves of a random game up to a position where the side to move must pass."""
    while True:
        g = Game(Position.start())
        while not g.is_over():
            if g.position.must_pass():
                return list(g.moves)
            g.play(rng.choice(g.position.legal_moves()))


def test_pass_when_forced_then_the_engine_goes_on(web):
    moves = _forced_pass_game(random.Random(11))
    game = Game.from_moves(moves)
    me = "black" if game.position.side.name == "BLACK" else "white"
    other = "white" if me == "black" else "black"
    web.send(type="set", **{me: "human", other: "random"})
    s = web.send(type="import", text=" ".join(square_name(m) for m in moves))[0]
    assert s["moves"] == [square_name(m) for m in moves]
    assert s["must_pass"] and s["human_to_move"] and s["legal"] == []
    assert "flips no disc" in web.send(type="move", square=square_name(
        next(i for i in range(64) if not (game.position.black | game.position.white) >> i & 1)
    ))[0]["message"]
    s = web.send(type="pass")[0]
    assert s["moves"][-1] == "pass" and s["ply"] == len(moves) + 1
    s = web.settled()
    assert s["over"] or s["ply"] >= len(moves) + 2


def test_export_and_import_round_trip_ggf_and_move_lists(web):
    for _ in range(3):
        web.send(type="move", square=web.settled()["legal"][0])
    s = web.settled()
    rec = web.send(type="export")[0]
    assert rec["type"] == "record" and rec["moves"] == "".join(s["moves"])
    parsed = ggf.parse(rec["ggf"])
    assert [square_name(m.move) for m in parsed.moves] == s["moves"]
    assert parsed.tags["PB"] == "human" and parsed.tags["PW"] == "random"
    assert any(m.time is not None for m in parsed.moves)    # the engine's moves carry times
    web.send(type="new")
    assert web.send(type="import", text=rec["ggf"])[0]["moves"] == s["moves"]
    web.send(type="new")
    assert web.send(type="import", text=rec["moves"].upper())[0]["moves"] == s["moves"]


def test_a_move_list_may_leave_passes_out():
    moves = _forced_pass_game(random.Random(11))
    g = Game.from_moves(moves)
    g.play(PASS)
    g.play(g.position.legal_moves()[0])
    text = "".join(square_name(m) for m in g.moves if m != PASS)
    assert parse_move_list(text, Position.start()).moves == g.moves
    assert parse_move_list("F5 d6, c3-d3", Position.start()).moves == \
        Game.from_moves(["f5", "d6", "c3", "d3"]).moves


def test_a_hint_evaluates_every_legal_square():
    h = WebHarness(agent="mcts")
    try:
        h.send(type="new", white="mcts", time=0.5)
        start = len(h.messages)
        r = h.send(type="hint")[0]
        assert r["type"] == "thinking" and r["kind"] == "hint"
        # the analyst gives it (the strongest agent allowed), not the opponent (mcts)
        assert r["agent"] == "best:threads=1"
        hints = h.wait_for(lambda m: m["type"] == "hints", start=start)
        assert {m["square"] for m in hints["moves"]} == {"d3", "c4", "f5", "e6"}
        assert all(isinstance(m["eval"], float) for m in hints["moves"])
        # the four first moves are images of one another: one value
        assert len({m["eval"] for m in hints["moves"]}) == 1
        # alpha-beta says how deep it searched (its move statistics count plies, not visits)
        assert hints["best"] in {"d3", "c4", "f5", "e6"} and hints["depth"] > 0
        assert all(m["depth"] > 0 and "visits" not in m for m in hints["moves"])
        assert h.wait_for(lambda m: m["type"] == "progress" and m["kind"] == "hint")
        s = h.settled()
        # a hint searches deeper than the analysis: its value stays with the hint, and the bar
        # and the graph keep values of one depth
        assert s["analyst"] == []
        assert s["evals"] == []          # the opponent's own view: it has not searched
    finally:
        h.close()


def test_progress_shows_visits_for_tree_agents_and_depth_for_alpha_beta():
    h = WebHarness(agent="mcts")
    try:
        for agent, key in (("mcts", "visits"), ("ab", "depth")):
            h.send(type="new", white=agent, time=0.5)
            start = len(h.messages)
            h.send(type="move", square="f5")
            p = h.wait_for(lambda m: m["type"] == "progress", start=start)
            assert p[key] > 0 and p["color"] == "white" and p["kind"] == "move", p
            mv = h.wait_for(lambda m: m["type"] == "move", start=start)
            assert mv[key] > 0 and mv["color"] == "white"
            s = h.settled()
            assert s["ply"] == 2 and [k for k, _ in s["evals"]] == [1]
    finally:
        h.close()


def test_the_engine_answers_within_its_time_and_stop_makes_it_move_now():
    h = WebHarness(agent="uct")
    try:
        h.send(type="new", white="uct", time=0.4)
        h.send(type="move", square="f5")   # loads the kernels
        h.settled()
        start = len(h.messages)
        t0 = time.monotonic()
        h.send(type="move", square=h.settled()["legal"][0])
        h.wait_for(lambda m: m["type"] == "move", start=start, timeout=WAIT)
        # it used its 0.4 s and then moved; within 100 ms of it is othello-bench web's figure
        assert 0.4 <= time.monotonic() - t0 < 0.4 + SLACK
        h.send(type="set", time=10.0)  # the most a tab may ask for
        start = len(h.messages)
        h.send(type="move", square=h.settled()["legal"][0])
        h.wait_for(lambda m: m["type"] == "progress", start=start, timeout=WAIT)
        job = h.session.current_job
        t0 = time.monotonic()
        h.send(type="stop")
        h.wait_for(lambda m: m["type"] == "move", start=start, timeout=WAIT)
        # the stop, not the 10 s budget, ended that search
        assert job is not None and job.result is not None and job.result.stopped_by == "stop"
        assert time.monotonic() - t0 < 10.0 / 2
    finally:
        h.close()


def test_two_engines_play_each_other_to_the_end_and_pause_on_stop(web):
    s = web.send(type="new", black="random", white="random:seed=2", time=0)[0]
    assert not s["human_to_move"]
    end = web.wait_for(lambda m: m["type"] == "state" and m["over"])
    res = Game.from_moves(end["moves"]).result()
    assert end["result"]["score"] == res.black_score
    assert web.handler._spare is not None   # the second agent has its own session
    assert end["players"]["white"]["spec"] == "random:seed=2"
    s = web.send(type="undo")[0]
    assert s["paused"] and s["ply"] == len(end["moves"]) - 1
    s = web.send(type="resume")[0]
    end = web.wait_for(lambda m: m["type"] == "state" and m["over"] and m["ply"] > s["ply"])
    web.send(type="new", black="human", white="random")
    assert web.handler._spare is None       # back to one agent: the second session is freed


def test_a_game_without_its_page_searches_nothing_until_a_page_attaches():
    h = WebHarness()
    try:
        slow = "uct:iterations=100000000"
        h.send(type="new", black="human", white=slow, time=5)
        h.send(type="move", square="f5")
        h.wait_for(lambda m: m["type"] == "state" and m["thinking"] == "white")
        h.run(h.handler.detach)   # the tab closed or is reloading
        assert not h.session.busy and h.handler.detached
        # an engine turn posted before the page left starts nothing either
        h.run(lambda: h.handler._continue(time.monotonic()))
        assert not h.session.busy
        assert h.send(type="state")[0]["thinking"] is None
        mark = len(h.messages)
        replies = h.run(lambda: h.handler.attach(time.monotonic()))   # the page is back
        assert [m["type"] for m in replies] == ["welcome", "state"]
        assert replies[1]["moves"] == ["f5"]
        h.wait_for(lambda m: m["type"] == "state" and m["thinking"] == "white", start=mark)
        h.run(h.handler.detach)
        assert not h.session.busy and [square_name(m) for m in h.session.game.moves] == ["f5"]
    finally:
        h.close()


@pytest.mark.slow  # searches every move of a game
def test_whole_game_analysis_values_every_move_and_finds_the_lost_discs(web):
    rng = random.Random(7)
    game = Game(Position.start())
    while not game.is_over():
        game.play(rng.choice(game.position.legal_moves()))
    text = "".join(square_name(m) for m in game.moves if m != PASS)
    assert web.send(type="import", text=text)[0]["over"]
    mark = len(web.messages)
    first = web.send(type="analyze", time=0.05)[0]
    assert first["type"] == "analysis" and first["total"] == len(game.moves)
    assert first["agent"].startswith("best")   # the strongest agent the policy admits
    web.wait_for(lambda m: m["type"] == "analysis" and m["done"], start=mark, timeout=WAIT)
    entries = [e for m in web.messages[mark:] if m["type"] == "analysis" for e in m["moves"]]
    played = [k for k, m in enumerate(game.moves) if m != PASS]
    assert sorted(e["ply"] for e in entries) == played   # every move once, passes left out
    positions = game.positions()
    for e in entries:
        pos = positions[e["ply"]]
        assert e["move"] == square_name(game.moves[e["ply"]])
        assert e["color"] == ("black" if e["ply"] % 2 == 0 else "white") or \
            any(m == PASS for m in game.moves[:e["ply"]])
        assert e["best"] in {square_name(m) for m in pos.legal_moves()}
        assert e["loss"] is None or e["loss"] >= 0
        if e["value"] is not None and e["best_value"] is not None:
            assert e["loss"] == pytest.approx(max(0.0, e["best_value"] - e["value"]), abs=0.11)
    # random play loses discs, and the last moves are valued by the exact solver
    assert sum(1 for e in entries if (e["loss"] or 0) >= 2) >= 3
    assert any(e["exact"] for e in entries if e["ply"] >= len(game.moves) - 8)
    # a finished game's last move: the exact value is the final margin
    last = max(entries, key=lambda e: e["ply"])
    if last["exact"] and last["after"] is not None:
        assert last["after"] == pytest.approx(game.result().black_score, abs=0.01)


def test_an_analysis_of_a_replaced_game_stops(web):
    web.send(type="import", text="e6d6c3f4d7c5g4g3c4g5")
    mark = len(web.messages)
    assert web.send(type="analyze", time=5)[0]["type"] == "analysis"
    web.send(type="new")   # replaced: its analysis is void
    web.run(lambda: None)   # what the controller had queued has run
    assert web.handler._analysis is None
    assert web.handler._analyst is not None and not web.handler._analyst.busy   # stopped now
    assert not any(m["type"] == "analysis" and m["done"] for m in web.messages[mark:])


# The analyst at a fixed depth on one thread: its answer does not depend on the machine's speed.
ANALYST = "best:depth=5,threads=1,root_solve=14"
# Black to move; at depth 5 c5 is worth 9 discs, the next move 1.75: no near tie for the
# transposition table the analyst keeps between searches to turn.
OPENING = "f5d6c3d3c4f4f6f3e6e7d7c6"


def analyst_best(moves: str, spec: str = ANALYST) -> tuple[str, float]:
    """The analyst's best move and its value on a fresh agent (what a hint must show)."""
    r = make_agent(spec).search(parse_move_list(moves, Position.start()).position,
                                Limits(analysis=True))
    return r.best_name, r.eval


def test_hints_come_from_the_analyst_whoever_the_opponent_is():
    h = WebHarness(agent="beginner", presets=dict(BUILTIN_PRESETS, analyst=ANALYST))
    try:
        assert h.messages[0]["analyst"] == {"spec": ANALYST, "family": "best"}
        best, value = analyst_best(OPENING)
        for k, opponent in enumerate(("beginner", "random")):
            h.send(type="new", white=opponent, time=0.2)
            assert h.send(type="import", text=OPENING)[0]["human_to_move"]
            start = len(h.messages)
            assert h.send(type="hint", time=10)[0]["agent"] == ANALYST
            hints = h.wait_for(lambda m: m["type"] == "hints", start=start, timeout=WAIT)
            assert hints["agent"] == ANALYST and hints["depth"] == 5
            assert hints["best"] == best
            top = max(m["eval"] for m in hints["moves"])
            assert [m["eval"] for m in hints["moves"] if m["square"] == best] == [top]
            s = h.settled()
            assert hints["value"] == hints["eval"]   # black to move
            assert 12 not in dict(s["analyst"])   # the bar and graph keep one depth's values
            if k == 0:   # a fresh analyst: the same search as the one here
                assert hints["eval"] == pytest.approx(value, abs=0.01)
    finally:
        h.close()


def test_the_live_evaluation_values_the_positions_while_no_engine_searches():
    h = WebHarness(agent="random", presets=dict(BUILTIN_PRESETS, analyst=ANALYST))
    try:
        h.send(type="new", white="random", time=0.2)
        start = len(h.messages)
        assert h.send(type="evaluate")[0]["evaluate"] is True
        first = h.wait_for(lambda m: m["type"] == "eval", start=start, timeout=WAIT)
        assert first["ply"] == 0 and first["color"] == "black"
        assert first.get("book") or first["depth"] >= 1   # the opening book, or a search
        h.send(type="move", square="f5")
        e = h.wait_for(lambda m: m["type"] == "eval" and m["ply"] == 2, start=start,
                       timeout=WAIT)
        s = h.settled()
        assert s["ply"] == 2 and dict(s["analyst"])[2] == e["value"]
        # only positions the person was to move in (the engine's cores are its own)
        assert {m["ply"] for m in h.messages[start:] if m["type"] == "eval"} == {0, 2}
        assert sorted(k for k, _ in s["evals"]) == [1]   # the opponent's own view, apart
        # undo forgets the values of the plies it takes back; off stops it
        h.send(type="undo")
        assert [k for k, _ in h.settled()["analyst"]] == [0]
        assert h.send(type="evaluate", on=False)[0]["evaluate"] is False
        mark = len(h.messages)
        h.send(type="move", square="d3")
        h.settled()
        h.run(lambda: None)
        assert not any(m["type"] == "eval" for m in h.messages[mark:])
        assert "'on' must be true or false" in h.send(type="evaluate", on=1)[0]["message"]
    finally:
        h.close()


def test_a_hint_during_the_whole_game_analysis_comes_first_and_the_analysis_goes_on():
    h = WebHarness(agent="random", presets=dict(BUILTIN_PRESETS, analyst=ANALYST))
    try:
        moves = OPENING   # black to move: the person's turn
        assert h.send(type="import", text=moves)[0]["human_to_move"]
        mark = len(h.messages)
        assert h.send(type="analyze", time=10)[0]["agent"] == ANALYST
        assert h.send(type="hint", time=10)[0]["kind"] == "hint"
        hints = h.wait_for(lambda m: m["type"] == "hints", start=mark, timeout=WAIT)
        assert hints["best"] == analyst_best(moves)[0]
        h.wait_for(lambda m: m["type"] == "analysis" and m["done"], start=mark, timeout=WAIT)
        entries = [e["ply"] for m in h.messages[mark:] if m["type"] == "analysis"
                   for e in m["moves"]]
        assert sorted(entries) == list(range(12))   # every move once
    finally:
        h.close()

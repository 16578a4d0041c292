"""The one controller loop that stdin/stdout, ZeroMQ sessions and the in-process channel share."""

from __future__ import annotations

import pathlib
import queue
import threading
import time

from engine_server.commands.controller import Controller, Request, interrupts
from engine_server.session import EngineOptions, Output, Session

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _controller(protocol: str = "auto", agent: str = "uct:iterations=200"):
    lines: list[str] = []
    session = Session(EngineOptions(agent=agent, warmup=False), Output(lines.append))
    return Controller(session, protocol), lines


def test_the_first_line_that_is_not_blank_picks_the_protocol():
    c, lines = _controller()
    assert c.handle("   ", 0.0) and c.handle("# a comment", 0.0) and c.handler is None
    assert c.handle("ping 3", time.monotonic())
    assert c.protocol == "nboard" and lines == ["pong 3"]
    c.session.close()
    c, lines = _controller()
    assert c.handle("name", time.monotonic()) and c.protocol == "gtp"
    assert lines == ["= OthelloPy", ""]
    c.session.close()


def test_a_handler_bug_is_logged_and_the_session_keeps_answering():
    c, lines = _controller("gtp")

    class Broken:
        def handle_line(self, raw: str, received: float | None = None) -> bool:
            raise RuntimeError("boom")

    real = c.handler
    c.handler = Broken()
    assert c.handle("name", 0.0) is True
    c.handler = real
    assert c.handle("name", 0.0) and lines[-2:] == ["= OthelloPy", ""]
    c.session.close()


def test_quit_on_arrival_ends_a_long_genmove_and_the_loop():
    c, lines = _controller("gtp", agent="uct:iterations=1000000000")
    inbox: queue.Queue[Request | None] = queue.Queue()
    seen: list[str] = []
    done = threading.Event()

    def run() -> None:
        c.run(inbox, before=lambda r: seen.append(r.tag))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    inbox.put(Request("genmove black", time.monotonic(), "a"))
    time.sleep(0.3)  # the search has started (or is starting): quit must end it either way
    c.arrived("7 quit")
    inbox.put(Request("7 quit", time.monotonic(), "b"))
    assert done.wait(60), "the loop did not end"
    assert seen == ["a", "b"] and lines[-2:] == ["=7 ", ""]
    assert not c.session.busy


def test_interrupt_rule():
    assert interrupts("quit") and interrupts("12 quit") and interrupts("quit # bye")
    assert not interrupts("genmove black") and not interrupts("name quit")


def test_one_controller_loop_in_the_code_base():
    """Every transport goes through protocol/controller.py: nothing else builds a handler from
    a detected protocol."""
    found = []
    for pkg in ("engine_server", "clients", "benchmarks"):
        for path in (ROOT / pkg).rglob("*.py"):
            text = path.read_text()
            if "make_handler(" in text and path.name not in ("controller.py", "__init__.py"):
                found.append(str(path.relative_to(ROOT)))
    assert found == []

"""One declaration per protocol command: dispatch, list_commands and known_command agree."""

from __future__ import annotations

import pytest

from engine_server.commands import detect_protocol, make_handler
from engine_server.commands.gtp import GtpHandler
from engine_server.commands.nboard import NBoardHandler
from engine_server.commands.registry import Call, CommandRegistry, Reply

from .protocol_harness import Harness


def test_list_commands_is_exactly_the_registry(gtp):
    out = gtp.send("list_commands")
    listed = [out[0][2:]] + out[1:-1]
    assert listed == GtpHandler.commands.names()
    assert len(set(listed)) == len(listed) == len(GtpHandler.commands)


def test_every_registered_command_is_known_and_answered(gtp):
    for name in GtpHandler.commands.names():
        assert gtp.send(f"known_command {name}") == ["= true", ""]
    # A method that exists but is not registered is not a command.
    assert hasattr(GtpHandler, "_genmove")
    assert gtp.send("known_command _genmove") == ["= false", ""]
    assert gtp.send("_genmove black") == ["? unknown command", ""]


def test_a_command_declared_twice_is_refused():
    reg: CommandRegistry = CommandRegistry("test")

    @reg("hello")
    def first(handler, call):
        return "hi"

    with pytest.raises(ValueError, match="'hello' is declared twice"):
        @reg("hello")
        def second(handler, call):
            return "hi again"


def test_registry_keeps_declaration_order_and_docstring_summary():
    reg: CommandRegistry = CommandRegistry("test")

    @reg("b")
    def b(handler, call):
        """Say b.

        More text."""

    @reg("a")
    def a(handler, call):
        pass

    assert reg.names() == ["b", "a"]
    b_cmd, a_cmd = reg.get("b"), reg.get("a")
    assert b_cmd is not None and a_cmd is not None
    assert b_cmd.summary == "Say b." and a_cmd.summary == ""
    assert reg.get("c") is None and "a" in reg and "c" not in reg


def test_a_reply_runs_its_follow_up_after_the_response_is_written(gtp):
    order = []

    class Traced(GtpHandler):
        commands = CommandRegistry("traced")

    @Traced.commands("hello")
    def hello(handler, call: Call) -> Reply:
        return Reply(f"hi {' '.join(call.args)}", then=lambda: order.append(list(gtp.lines)))

    @Traced.commands("bye")
    def bye(handler, call: Call) -> Reply:
        return Reply(quit=True)

    @Traced.commands("fail")
    def fail(handler, call: Call) -> Reply:
        return Reply("no", ok=False)

    h = Traced(gtp.session)
    before = len(gtp.lines)
    assert h.handle_line("3 hello there") is True
    assert gtp.lines[before:] == ["=3 hi there", ""]
    assert order and order[0][-2:] == ["=3 hi there", ""]
    assert h.handle_line("fail") is True and gtp.lines[-2:] == ["? no", ""]
    assert h.handle_line("bye") is False and gtp.lines[-2:] == ["= ", ""]


def test_nboard_dispatches_registered_words_and_reports_the_rest():
    h = Harness("nboard")
    try:
        assert "ping" in NBoardHandler.commands and "quit" in NBoardHandler.commands
        assert h.send("frobnicate 3") == ["status not understood: 'frobnicate 3' (ignored)"]
        assert h.send("ping 4") == ["pong 4"]
        assert h.handler.handle_line("quit") is False
    finally:
        h.close()


def test_make_handler_picks_by_first_line_and_refuses_unknown_protocols():
    assert detect_protocol("nboard 2") == "nboard" and detect_protocol("ping 1") == "nboard"
    assert detect_protocol("1 genmove b") == "gtp"
    h = Harness("gtp")
    try:
        assert isinstance(make_handler("nboard", h.session), NBoardHandler)
        assert isinstance(make_handler("gtp", h.session), GtpHandler)
        with pytest.raises(ValueError, match="unknown protocol 'uci'"):
            make_handler("uci", h.session)
    finally:
        h.close()


def test_an_extended_registry_replaces_commands_without_touching_the_original():
    base: CommandRegistry = CommandRegistry("test")
    base("a")(lambda handler, call: "base a")
    copy = base.extended()
    copy.replace("a")(lambda handler, call: "new a")
    copy("b")(lambda handler, call: "b")
    assert base.names() == ["a"] and copy.names() == ["a", "b"]
    a_base, a_copy = base.get("a"), copy.get("a")
    assert a_base is not None and a_copy is not None
    assert a_base.func(None, None) == "base a" and a_copy.func(None, None) == "new a"
    with pytest.raises(KeyError, match="no command 'zz'"):
        copy.replace("zz")

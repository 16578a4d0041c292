"""Logging goes to stderr (whatever stream that is at the time) or a file, never stdout."""

import io
import json
import sys

from engine_server.log import configure_logging, get_logger


def test_logs_follow_the_current_stderr_even_after_the_old_one_closed(monkeypatch, capsys):
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("info", json=True)
    get_logger("t").info("one")
    first.close()  # e.g. a test runner's capture stream, replaced after its test
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    get_logger("t").info("two", k=3)
    assert json.loads(second.getvalue())["k"] == 3
    assert capsys.readouterr().out == ""
    configure_logging("warning")


def test_log_file(tmp_path):
    path = tmp_path / "engine.log"
    configure_logging("debug", str(path))
    get_logger("t").debug("to-file", x=1)
    configure_logging("warning")
    assert json.loads(path.read_text().splitlines()[0])["event"] == "to-file"

"""Signal handlers run on their own thread: a SIGTERM that arrives while the main thread holds
a lock (structlog writes each line under one) must not deadlock the process."""

from __future__ import annotations

import signal
import textwrap

from .second_process import run_probe

# The main thread logs without pause while another thread signals the process fifty times, and
# each signal's callback logs too: run inside Python's own handler, the callback would wait for
# the file's lock that the interrupted main thread holds, forever.
LOGGING_PROBE = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    from engine_server.log import configure_logging, get_logger
    from engine_server.serve.signals import handle_signals
    configure_logging("info", file=sys.argv[1])
    log = get_logger("probe")
    seen = []
    def on_signal(signum):
        log.info("signal", signum=signum)
        seen.append((signum, threading.current_thread().name))
    handle_signals([signal.SIGUSR1], on_signal)
    def send():
        for _ in range(50):
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.01)
    sender = threading.Thread(target=send)
    sender.start()
    lines = 0
    while sender.is_alive() or not seen:
        log.info("busy", line=lines)
        lines += 1
    time.sleep(0.1)
    print(json.dumps({"seen": seen, "lines": lines}))
    """
)


def test_a_signal_while_the_main_thread_logs_is_handled_and_the_process_goes_on(tmp_path):
    log = tmp_path / "probe.log"
    # a deadlock shows as the probe's timeout
    out = run_probe(LOGGING_PROBE, str(log))
    assert out["seen"] and out["lines"] > 0
    # every callback ran on the signals thread, never inside the interrupted main thread
    assert {tuple(s) for s in out["seen"]} == {(int(signal.SIGUSR1), "signals")}
    text = log.read_text()
    assert text.count('"event": "signal"') == len(out["seen"])


def test_signals_nobody_asked_for_keep_their_meaning():
    # SIGINT still raises KeyboardInterrupt in the main thread; a second registration replaces
    # the callback for its signal.
    out = run_probe(textwrap.dedent(
        """
        import json, os, signal, threading, time
        from engine_server.serve.signals import handle_signals
        # Python's own SIGINT handler, as an interactive start has it: a job a shell put in the
        # background (a CI run started with `&`) inherits SIGINT ignored, and Python keeps that
        signal.signal(signal.SIGINT, signal.default_int_handler)
        got = []
        handle_signals([signal.SIGUSR1], lambda s: got.append("first"))
        handle_signals([signal.SIGUSR1], lambda s: got.append("second"))
        os.kill(os.getpid(), signal.SIGUSR1)
        for _ in range(500):
            if got:
                break
            time.sleep(0.01)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        print(json.dumps({"got": got, "interrupted": interrupted,
                          "threads": [t.name for t in threading.enumerate()]}))
        """))
    assert out["got"] == ["second"]
    assert out["interrupted"] is True
    assert out["threads"].count("signals") == 1

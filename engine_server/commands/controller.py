"""One controller for every transport: stdin/stdout, each ZeroMQ session, the in-process client
channel.

A transport reads lines on its own thread and calls :meth:`Controller.arrived` the moment one
arrives (``quit`` must make a running ``genmove`` return at once, not wait behind it); the
controller's thread runs :meth:`Controller.run` over the queue of :class:`Request`s: the first
line that is not blank picks the protocol (unless one was given), every line goes to that
protocol's I/O-free handler, and a bug in a handler is logged without ending the session.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

from engine_server.log import get_logger
from engine_server.session import Session
from protocol.text import clean_line

from . import LineHandler, detect_protocol, make_handler, refusal_lines

log = get_logger("controller")

# Lines that stop a running search as they arrive, before the controller reads them.
INTERRUPT_WORDS = frozenset({"quit"})


@dataclass(frozen=True)
class Request:
    """One input line, when it arrived (deadlines are measured from it), and whatever the
    transport needs back when the controller takes it (``tag``: ZeroMQ's request number)."""

    text: str
    received: float
    tag: Any = None
    # Set by a transport that refused the line itself (oversized, malformed frames): the
    # controller answers this message in its protocol's error form instead of handling the
    # line, in order with the session's other answers.
    refusal: str | None = None
    # Set by a transport whose input has ended (a closed stdin): the controller lets the
    # commands already given finish their answers (:meth:`Controller.end_of_input`), then
    # ends the session.  ``None`` in the inbox ends it at once instead (a signal, a closed
    # ZeroMQ session).
    end_of_input: bool = False
    # Set by a transport that keeps its sessions in a store: nothing to handle, only the
    # ``after`` hook runs (a search has written its answer on its own thread; the session's
    # state is written from the controller's thread, in order with the requests).
    checkpoint: bool = False


def interrupts(text: str) -> bool:
    """``quit`` or ``<id> quit``: the session must stop searching now."""
    words = clean_line(text, cut_comments=True).split(" ")
    if words and words[0].isdigit():
        words = words[1:]
    return bool(words) and words[0] in INTERRUPT_WORDS


class Controller:
    def __init__(self, session: Session, protocol: str = "auto"):
        self.session = session
        self.protocol = protocol
        self.handler: LineHandler | None = (None if protocol == "auto"
                                            else make_handler(protocol, session))
        self._stopping = threading.Event()

    def stop_now(self) -> None:
        """End the session promptly (SIGTERM, a closed output): the running search returns its
        best so far, and no further queued line is handled.  Thread-safe."""
        self._stopping.set()
        self.session.interrupt()

    def end_of_input(self, poll: float | None = None) -> None:
        """The input has ended: wait until the commands already handled have written what they
        owe (NBoard's ``go`` its ``===`` line, a ``hint`` its last round; a GTP analysis is
        closed with its blank line), unless :meth:`stop_now` is called meanwhile.  Pondering
        owes nothing and ends with the session."""
        finish = getattr(self.handler, "end_of_input", None)
        if finish is not None:
            finish(self._stopping, 0.1 if poll is None else min(poll, 0.1))

    # --- durable state (the session store) ---------------------------------------------------
    def owes_answer(self) -> bool:
        """A request handled already has not written all of its answer (NBoard's ``go`` before
        its ``===`` line, a GTP analysis before the blank line that ends it)."""
        owes = getattr(self.handler, "owes_answer", None)
        return bool(owes()) if owes is not None else False

    def snapshot(self) -> dict[str, Any]:
        """The session's durable state and its protocol's (``restore`` takes it back)."""
        handler_state = getattr(self.handler, "snapshot", None)
        return {"protocol": self.protocol if self.handler is not None else "auto",
                "session": self.session.snapshot(),
                "handler": handler_state() if handler_state is not None else {}}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a :meth:`snapshot` (before the first request is handled).  ValueError,
        KeyError or AgentSpecError when it does not fit this server."""
        protocol = str(state["protocol"])
        self.session.restore(state["session"])
        if protocol != "auto":
            self.protocol = protocol
            self.handler = make_handler(protocol, self.session)
            restore = getattr(self.handler, "restore", None)
            if restore is not None:
                restore(state.get("handler", {}))

    def arrived(self, text: str) -> None:
        """Called by the transport's reading thread as soon as ``text`` arrives."""
        if interrupts(text):
            self.session.interrupt()
        early = getattr(self.handler, "arrived", None)
        if early is not None:
            early(text)  # NBoard's ping: stop the running request now

    def refuse(self, message: str) -> None:
        """Answer a line the transport refused, in the session's protocol
        (:func:`refusal_lines`)."""
        self.session.output.write(*refusal_lines(self.protocol, message))

    def handle(self, text: str, received: float) -> bool:
        """Handle one line; False means the session ends (``quit``)."""
        if self.handler is None:
            if not clean_line(text, cut_comments=True):
                return True
            self.protocol = detect_protocol(text)
            self.handler = make_handler(self.protocol, self.session)
            log.info("protocol_detected", protocol=self.protocol)
        try:
            return self.handler.handle_line(text, received)
        except Exception:
            # A bug must not take the session down: log it and keep answering.
            log.exception("handler_error", line=text.strip()[:200])
            return True

    def run(self, inbox: queue.Queue[Request | None],
            before: Callable[[Request], None] | None = None,
            poll: float | None = None,
            after: Callable[[Request], None] | None = None) -> None:
        """Handle requests until ``None``, ``quit`` or the end of input, then close the
        session.  ``before`` runs for each request ahead of its handling and ``after`` once it
        is handled (the transport's bookkeeping: request numbers, the session store; a
        ``checkpoint`` request runs only ``after``); ``poll`` bounds each wait, for a main
        thread that must also run signal handlers."""
        try:
            while not self._stopping.is_set():
                try:
                    item = inbox.get(timeout=poll)
                except queue.Empty:
                    continue
                if item is None or self._stopping.is_set():
                    break
                if item.end_of_input:
                    self.end_of_input(poll)
                    break
                if item.checkpoint:
                    if after is not None:
                        after(item)
                    continue
                if before is not None:
                    before(item)
                if item.refusal is not None:
                    self.refuse(item.refusal)
                    go_on = True
                else:
                    go_on = self.handle(item.text, item.received)
                if after is not None:
                    after(item)
                if not go_on:
                    break
        finally:
            self.session.close()


__all__ = ["Controller", "INTERRUPT_WORDS", "Request", "interrupts"]

"""The text protocols, I/O-free: a handler turns one input line into output lines written
through its session's ``Output``.  Front ends (stdio, ZeroMQ, the web page) pick a handler here
and feed it lines; they never parse protocol text themselves."""

from __future__ import annotations

from typing import Protocol

from engine_server.session import Session
from protocol.gtp import response_lines
from protocol.nboard import status_line
from protocol.text import clean_line

NBOARD_FIRST_WORDS = ("nboard", "ping", "set")
PROTOCOLS = ("gtp", "nboard")


class LineHandler(Protocol):
    def handle_line(self, raw: str, received: float | None = None) -> bool:
        """Handle one input line (its arrival time measures deadlines); False means quit."""
        ...


def detect_protocol(line: str) -> str:
    """The protocol a session speaks, from its first line (NBoard opens with ``nboard``; GUIs
    that reconnect may open with ``ping`` or ``set``); everything else is GTP."""
    word = clean_line(line).split(" ", 1)[0].lower()
    return "nboard" if word in NBOARD_FIRST_WORDS else "gtp"


def refusal_lines(protocol: str, message: str) -> list[str]:
    """Input refused before a handler saw it, answered in the session's protocol: GTP
    ``? message`` and the blank line that ends a response, NBoard ``status message`` (the form
    its handler uses for bad input); GTP when the protocol is not known yet."""
    # protocol's functions, imported by name: this package's own gtp and nboard submodules
    # take the module names here once imported
    return [status_line(message)] if protocol == "nboard" else response_lines("", False, message)


def make_handler(protocol: str, session: Session) -> LineHandler:
    if protocol == "nboard":
        from .nboard import NBoardHandler

        return NBoardHandler(session)
    if protocol == "gtp":
        from .gtp import GtpHandler

        return GtpHandler(session)
    raise ValueError(f"unknown protocol {protocol!r} (choose from {', '.join(PROTOCOLS)})")


__all__ = ["LineHandler", "PROTOCOLS", "detect_protocol", "make_handler"]

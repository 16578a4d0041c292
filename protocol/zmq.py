"""ZeroMQ frames of the engine's server (docs/engine.md, "Over ZeroMQ"), without a socket.

* client -> server: ``[seq, line]``, ``seq`` the client's request number as ASCII digits and
  ``line`` one protocol line (UTF-8); or a bare one-frame ``[line]``.  A REQ socket's empty
  delimiter frame in front is dropped.
* server -> client: ``[seq, line]`` per output line after a ``[seq, line]`` request, ``[line]``
  after a bare one (the blank line that ends a GTP response is an empty frame).

The ROUTER's routing-id frame is the server's business and is not part of these lists.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_SEQ_DIGITS = 18   # a seq longer than this is refused rather than read as a huge number


class Request(NamedTuple):
    bare: bool               # a one-frame [line] request: answer in bare frames
    seq: int | None          # the request number (0 for a bare one); None when malformed
    line: bytes | None       # the line's bytes; None when the frame list is malformed
    size: int                # the line's size, or the whole list's when malformed


def parse_request(payload: list[bytes]) -> Request:
    """A request's frames (after the routing id) read as they came; the caller decides what
    a malformed one (seq None or line None) gets."""
    if payload and payload[0] == b"":
        payload = payload[1:]
    if len(payload) == 1:
        return Request(True, 0, payload[0], len(payload[0]))
    if len(payload) == 2:
        seq_b, line_b = payload
        seq = int(seq_b) if seq_b.isdigit() and len(seq_b) <= MAX_SEQ_DIGITS else None
        return Request(False, seq, line_b, len(line_b))
    return Request(False, None, None, sum(len(p) for p in payload))


def request_frames(seq: int, line: str) -> list[bytes]:
    return [str(seq).encode(), line.encode("utf-8")]


def reply_frames(seq: int | None, line: str) -> list[bytes]:
    """One output line: ``[seq, line]``, or ``[line]`` when ``seq`` is None (a bare request)."""
    data = line.encode("utf-8")
    return [data] if seq is None else [str(seq).encode(), data]


def parse_reply(frames: list[bytes]) -> tuple[int, str]:
    """``(seq, line)`` of a reply to a ``[seq, line]`` request; ValueError when malformed."""
    if len(frames) != 2 or not frames[0].isdigit():
        raise ValueError(f"malformed reply frames: {frames!r}")
    return int(frames[0]), frames[1].decode("utf-8")

"""The web page's messages (docs/web.md, "Messages"): one JSON object per WebSocket message,
with a ``type``; a request may carry an ``id`` (number or string), echoed on its replies.

This module decodes and encodes them, names the types each side sends, and writes the pieces
several messages share (the board, a colour, an error, a move list).  What each message does is
the handler's business (``engine_server/commands/web.py``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .notation import BLACK

Message = dict[str, Any]

# Page to server, and server to page (docs/web.md has their fields).
REQUEST_TYPES = ("hello", "state", "ping", "new", "set", "move", "pass", "undo", "hint", "stop",
                 "resume", "export", "import", "analyze")
REPLY_TYPES = ("session", "welcome", "state", "analysis", "progress", "move", "thinking", "hints",
               "record", "pong", "error")


class MessageError(Exception):
    """A message that cannot be read or done: answered with an ``error``, nothing changed."""


def decode(raw: str | bytes, max_bytes: int) -> Any:
    """One WebSocket message as it arrived (size, UTF-8 and JSON checked); the decoded value,
    whatever JSON it is (:func:`message_type` checks it is a message)."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "replace"))
    if size > max_bytes:
        raise MessageError(f"message of {size} bytes is over this server's limit of "
                           f"{max_bytes} bytes")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        return json.loads(text)
    except UnicodeDecodeError:
        raise MessageError("malformed message: not UTF-8 text") from None
    except ValueError as e:
        raise MessageError(f"malformed JSON: {e}") from None
    except RecursionError:
        raise MessageError("malformed JSON: nested too deeply") from None


def encode(msg: Message) -> str:
    return json.dumps(msg, separators=(",", ":"))


def message_id(msg: Message) -> int | str | None:
    """The id to echo: numbers and strings only."""
    rid = msg.get("id")
    return None if isinstance(rid, bool) or not isinstance(rid, (int, str)) else rid


def error(message: str, id: Any = None, request: str | None = None, **flags: bool) -> Message:
    """An ``error`` message; ``request`` is the type it answers, ``flags`` are ``fatal`` (the
    tab is being closed) and ``expired`` (its game was closed)."""
    m: Message = {"type": "error", **flags, "message": message}
    if request is not None:
        m["request"] = request
    if id is not None:
        m["id"] = id
    return m


def text_field(msg: Message, key: str, default: str | None = None) -> str | None:
    v = msg.get(key, default)
    if v is not None and not isinstance(v, str):
        raise MessageError(f"{key!r} must be a string")
    return v


def number_field(msg: Message, key: str) -> float | None:
    v = msg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise MessageError(f"{key!r} must be a number")
    return float(v)


def color_name(color: int) -> str:
    return "black" if color == BLACK else "white"


def board_text(black: int, white: int) -> str:
    """64 characters ``b``/``w``/``.``, a1..h1, a2..h8."""
    return "".join("b" if black >> i & 1 else "w" if white >> i & 1 else "." for i in range(64))


def json_safe(v: Any) -> Any:
    """A value JSON can carry: infinities and NaN become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (tuple, list)):
        return [json_safe(x) for x in v]
    return v


def move_tokens(text: str) -> list[str]:
    """A move list such as ``f5d6c3`` (any case; spaces, commas or dashes between moves;
    ``pa``/``pass`` for passes) cut into its moves, lower case; anything else is a token of
    its own, which ``parse_move`` refuses by name."""
    return re.findall(r"pass|pa|[a-h][1-8]|\S", text.lower().replace(",", " ").replace("-", " "))


__all__ = [
    "Message", "MessageError", "REPLY_TYPES", "REQUEST_TYPES", "board_text",
    "color_name", "decode", "encode", "error", "json_safe", "message_id", "move_tokens",
    "number_field", "text_field",
]

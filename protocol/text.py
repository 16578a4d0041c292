"""Cleaning a line of input, for every text protocol."""

from __future__ import annotations


def clean_line(raw: str, cut_comments: bool = False) -> str:
    """Drop ``\\r`` and other control characters (tabs become spaces), optionally cut a GTP
    ``#`` comment, and strip the ends."""
    out = []
    for ch in raw:
        if ch == "\t":
            out.append(" ")
        elif ch >= " " and ch != "\x7f":
            out.append(ch)
    line = "".join(out)
    if cut_comments:
        line = line.split("#", 1)[0]
    return line.strip()

"""structlog configuration, in one place.

Logs go to stderr (console renderer on a TTY, JSON lines otherwise) or to a file when asked.
stdout belongs to the protocols: nothing here ever writes to it.
"""

from __future__ import annotations

import logging
import sys
from typing import IO, Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
_file_handle: IO[str] | None = None


class _Stderr:
    """Whatever ``sys.stderr`` is at the time of writing: a stream bound once may be replaced
    and closed later (test runners capture per test, daemons redirect)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


def configure_logging(level: str = "info", file: str | None = None,
                      json: bool | None = None) -> None:
    """Configure structlog.  ``json=None`` picks JSON unless the destination is a terminal."""
    global _file_handle
    lvl = level.lower()
    if lvl not in _LEVELS:
        raise ValueError(f"unknown log level {level!r}; accepted: {', '.join(_LEVELS)}")
    if _file_handle is not None:
        _file_handle.close()
        _file_handle = None
    if file:
        _file_handle = open(file, "a", buffering=1, encoding="utf-8")
        out: IO[str] = _file_handle
    else:
        out = _Stderr()
    if json is None:
        json = not (hasattr(out, "isatty") and out.isatty())
    renderer: Any = (structlog.processors.JSONRenderer() if json
                     else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[lvl]),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None, **bind: Any) -> Any:
    if not structlog.is_configured():
        # structlog's own default prints to stdout, which would corrupt the protocols.
        configure_logging("warning")
    log = structlog.get_logger(name) if name else structlog.get_logger()
    return log.bind(**bind) if bind else log

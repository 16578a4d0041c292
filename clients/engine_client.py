"""The client side of the engine's text protocols, written once.

Three layers:

* **errors**: :class:`EngineError` and its three kinds: :class:`EngineCommandError` (a GTP
  ``?`` reply), :class:`EngineTimeout` (nothing by the deadline) and :class:`EngineClosed` (the
  channel is closed or the engine died);
* **channels** move lines: :class:`Channel` here is what the client needs of one; the channels
  themselves are in ``clients.channels``: ``PipeChannel`` (a subprocess's stdin/stdout),
  ``ZmqChannel`` (the engine's ZeroMQ server, framing in engine_server/serve/zmq_server.py)
  and ``InProcessChannel`` (a Session and protocol handler in this process);
* :class:`EngineClient` speaks GTP (and raw line requests, for NBoard) over any channel, with
  :func:`read_response` reading responses with ``protocol.gtp``'s parser.

``clients.engine_process``, ``clients.remote``, the match players and the CS303 remote backend
are built on this module and ``clients.channels``.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator, TypeVar

from engine_server.log import get_logger
from protocol import gtp

log = get_logger("engine_client")

T = TypeVar("T")


# --- errors --------------------------------------------------------------------------------------

class EngineError(RuntimeError):
    """Anything that went wrong talking to an engine.  A RuntimeError because the clients this
    module replaced raised RuntimeError for ``?`` replies, and callers still catch that."""


class EngineCommandError(EngineError):
    """The engine answered ``?``: it understood the request and refused it."""

    def __init__(self, message: str, command: str = "", id: str = ""):
        # All three in args, so that the error survives pickling (match workers are processes).
        super().__init__(message, command, id)
        self.message = message
        self.command = command
        self.id = id

    def __str__(self) -> str:
        return f"{self.command!r} failed: {f'?{self.id} {self.message}'.rstrip()}"


class EngineSessionExpired(EngineCommandError):
    """The ZeroMQ server closed this client's session (idle, disconnected too long, or evicted
    for a newcomer) and says why; the game it held is gone, and the next request starts a new
    session."""


class EngineTimeout(EngineError, TimeoutError):
    """No (complete) answer by the deadline.  Also a TimeoutError, as the old clients raised."""


class EngineClosed(EngineError, EOFError):
    """The channel is closed or the engine behind it exited.  Also an EOFError, as the old pipe
    client raised at end of output."""


class EngineRestarting(EngineClosed):
    """The ZeroMQ server did not run the request and says to send it again: it is stopping (a
    restart, a deployment: ``? server stopping: ...``, ``? interrupted: ...``), another server
    sharing its store serves the session (``? session served by another server ...``, ``?
    session taken over ...``), or the store is out of its reach (``? session store
    unavailable ...``).  The same request, resent under its number once a server serves the
    session, is run there once.  Retried by :class:`EngineClient` for up to ``restart_wait``
    seconds whatever its ``retries``, with a growing pause, on the next endpoint where the
    channel has several."""


# The beginnings of the ZeroMQ server's answers to a request it did not run and that is to be
# sent again (there, or at another server sharing the store).
RESTARTING_REPLIES = ("server stopping", "interrupted: the server is stopping",
                      "session served by another server", "session taken over",
                      "session store unavailable")


def resend_refusal(line: str) -> str | None:
    """The refusal text when ``line`` is a server's answer that it did not run the request and
    that it is to be sent again (GTP ``?[id] TEXT``, NBoard ``status TEXT``), else None."""
    if line.startswith("status "):
        text = line[7:]
    elif line.startswith("?"):
        text = gtp.split_id(line[1:])[1].strip()
    else:
        return None
    return text if text.startswith(RESTARTING_REPLIES) else None


RESTART_WAIT = 60.0     # seconds a request not run (see EngineRestarting) is resent for
RESTART_POLL = 0.25     # the first pause before such a resend; doubled each time
RESTART_POLL_MAX = 2.0  # up to this
RESTART_RESEND = 2.0    # while a server restarts, an unanswered request is resent this often


# --- GTP responses -------------------------------------------------------------------------------

# The response's text is protocol.gtp's (one reader for every client); what a refusal means to
# a caller (which exception) is this module's.
GtpResponse = gtp.Response
parse_response = gtp.parse_response


def response_result(response: GtpResponse, command: str) -> str:
    """The text of a success; :class:`EngineCommandError` for a ``?`` reply."""
    if not response.ok:
        kind = (EngineSessionExpired if response.text.startswith("session expired")
                else EngineCommandError)
        raise kind(response.text, command, response.id)
    return response.text


def read_response(channel: "Channel", deadline: float) -> GtpResponse:
    """Read one ``=[id] text`` / ``?[id] message`` response, possibly multi-line, up to the
    blank line that ends it.  Blank lines before it (left from an earlier response) are skipped."""
    lines: list[str] = []
    while True:
        line = channel.read_line(deadline)
        if line == "":
            if lines:
                return parse_response(lines)
            continue
        lines.append(line)


# Commands whose repetition leaves the engine as one execution would: the only ones a client may
# resend over a channel that would execute a resent line again.
IDEMPOTENT_COMMANDS = frozenset({
    "protocol_version", "name", "version", "known_command", "list_commands", "list_games",
    "showboard", "final_score", "boardsize", "clear_board", "komi", "set_game", "time_settings",
    "kgs-time_settings", "kata-time_settings", "othello-rules",
})


def is_idempotent(text: str) -> bool:
    words = gtp.split_id(text)[1].split()
    return bool(words) and words[0] in IDEMPOTENT_COMMANDS


# --- the channel interface ---------------------------------------------------------------------

class Channel:
    """Moves protocol lines to and from one engine session.

    ``resend_is_safe``: a resent request is answered from memory rather than executed again (the
    ZeroMQ server does this by sequence number), so any command may be retried over it.
    ``several``: it leads to several servers sharing a store, and :meth:`reset` moves it to
    the next one (a lost connection then moves a request on rather than failing it)."""

    name: str = "engine"
    resend_is_safe: bool = False
    several: bool = False

    def send(self, line: str) -> None:
        """Send one protocol line (no newline).  :class:`EngineClosed` if it cannot go."""
        raise NotImplementedError

    def read_line(self, deadline: float) -> str:
        """The next line of output, waiting until ``deadline`` (``time.monotonic()`` seconds):
        :class:`EngineTimeout` when none comes by then, :class:`EngineClosed` at end of output."""
        raise NotImplementedError

    def close(self) -> int | None:
        raise NotImplementedError

    def reset(self) -> None:
        """After a request timed out: drop what the transport holds of it (ZeroMQ: the socket)."""

    def resend(self) -> None:
        """Send the last request again as the same request (only where ``resend_is_safe``)."""
        raise EngineError(f"{self.name} cannot resend a request as the same request")

    def __str__(self) -> str:
        return self.name


# --- the client ----------------------------------------------------------------------------------

class EngineClient:
    """GTP over any :class:`Channel`.

    ``timeout`` is the default wait for a whole response (per attempt), ``retries`` the default
    number of resends after a timeout or a closed channel.  A retry happens only when it cannot
    run a command twice: over a channel whose resends are safe (ZeroMQ), or for an idempotent
    command (:data:`IDEMPOTENT_COMMANDS`); other commands get one attempt whatever is asked.
    Over a pipe or in process a retried command carries a fresh GTP id, so the late answer to the
    attempt that timed out is recognised and skipped."""

    def __init__(self, channel: Channel, timeout: float = 60.0, retries: int = 0,
                 restart_wait: float = RESTART_WAIT):
        self.channel = channel
        self.timeout = timeout
        self.retries = retries
        # How long a request refused by a stopping server is resent for (a restart).
        self.restart_wait = restart_wait
        self._next_id = 0

    # --- GTP ------------------------------------------------------------------------------------
    def command(self, text: str, timeout: float | None = None, retries: int | None = None) -> str:
        """Send one GTP command and return its result text; :class:`EngineCommandError` on
        ``?``, :class:`EngineTimeout` / :class:`EngineClosed` when no answer comes."""
        return response_result(self.response(text, timeout, retries), text)

    def response(self, text: str, timeout: float | None = None,
                 retries: int | None = None) -> GtpResponse:
        """Like :meth:`command`, but a ``?`` reply is returned rather than raised."""
        attempts = self._attempts(text, retries)

        def attempt(n: int, deadline: float) -> GtpResponse:
            if n == 0:
                self.channel.send(text)
                expect = None
            elif self.channel.resend_is_safe:
                self.channel.resend()
                expect = None
            else:
                self._next_id += 1
                expect = str(self._next_id)
                self.channel.send(f"{expect} {gtp.split_id(text)[1]}")
            while True:
                r = read_response(self.channel, deadline)
                if expect is None or r.id == expect:
                    if not r.ok and self.channel.resend_is_safe and \
                            r.text.startswith(RESTARTING_REPLIES):
                        raise EngineRestarting(r.text)
                    return r

        return self._with_retries(text, attempt, timeout, attempts)

    def stream(self, text: str, timeout: float | None = None) -> Iterator[str]:
        """Send a command whose response streams (``lz-genmove_analyze``) and return an iterator
        over the lines after the head as they come, up to the blank line that ends the response;
        :class:`EngineCommandError` on ``?``.  Not retried: lines already seen cannot be taken
        back."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self.channel.send(text)  # now, not at the first next(): the search starts at once
        return self._stream_lines(text, deadline)

    def _stream_lines(self, text: str, deadline: float) -> Iterator[str]:
        line = ""
        while line == "":
            line = self.channel.read_line(deadline)
        head = parse_response([line])
        if not head.ok:
            raise EngineCommandError(head.text, text, head.id)
        if head.text:
            yield head.text
        while (line := self.channel.read_line(deadline)) != "":
            yield line

    def genmove(self, color: str, timeout: float | None = None,
                retries: int | None = None) -> str:
        """The move the engine plays for ``color`` (``"black"``/``"white"``), as it wrote it."""
        return self.command(f"genmove {color}", timeout, retries)

    def play(self, color: str, move: str, timeout: float | None = None,
             retries: int | None = None) -> None:
        self.command(f"play {color} {move}", timeout, retries)

    def list_commands(self, timeout: float | None = None,
                      retries: int | None = None) -> set[str]:
        return set(self.command("list_commands", timeout, retries).split())

    # --- raw line protocols (NBoard) ------------------------------------------------------------
    def request(self, line: str, done: Callable[[list[str]], bool], timeout: float | None = None,
                retries: int | None = None) -> list[str]:
        """Send ``line`` and collect output lines until ``done(lines)``.  Retried only where
        resends are safe: a raw protocol has no id to tell a late answer from a new one."""
        attempts = 1 if not self.channel.resend_is_safe else self._attempts(line, retries)

        def attempt(n: int, deadline: float) -> list[str]:
            if n == 0:
                self.channel.send(line)
            else:
                self.channel.resend()
            lines: list[str] = []
            while True:
                got = self.channel.read_line(deadline)
                refused = resend_refusal(got) if got.startswith("status ") else None
                if self.channel.resend_is_safe and refused is not None:
                    raise EngineRestarting(refused)   # NBoard's form of the same refusal
                lines.append(got)
                if done(lines):
                    return lines

        return self._with_retries(line, attempt, timeout, attempts)

    # --- retries --------------------------------------------------------------------------------
    def _attempts(self, text: str, retries: int | None) -> int:
        n = self.retries if retries is None else retries
        if n > 0 and not (self.channel.resend_is_safe or is_idempotent(text)):
            n = 0
        return max(0, n) + 1

    def _with_retries(self, text: str, attempt: Callable[[int, float], T],
                      timeout: float | None, attempts: int) -> T:
        t = self.timeout if timeout is None else timeout
        error: EngineError | None = None
        n = 0
        restart_until: float | None = None
        pause = RESTART_POLL
        # Several servers sharing a store: a lost connection moves the request to the next
        # one as a refusal would, not counted as a retry (the server may have died).
        moves = self.channel.several
        while n < attempts:
            try:
                # After a refusal for a restart the request is resent (attempt 1 or later).
                wait = t if restart_until is None else min(t, RESTART_RESEND)
                return attempt(n if restart_until is None else max(n, 1),
                               time.monotonic() + wait)
            except (EngineRestarting, EngineClosed, EngineTimeout) as e:
                if isinstance(e, EngineRestarting) or (moves and isinstance(e, EngineClosed)):
                    # Not run: resent under its number until a server runs it, whatever the
                    # retries (the same number is run once, never twice).
                    now = time.monotonic()
                    restart_until = restart_until or now + self.restart_wait
                    if now >= restart_until:
                        raise EngineClosed(f"no answer to {text!r} from {self.channel}: not "
                                           f"served for {self.restart_wait:g} s ({e})") from None
                    time.sleep(pause)
                    pause = min(RESTART_POLL_MAX, 2 * pause)
                    self.channel.reset()
                    continue
                if restart_until is not None and time.monotonic() < restart_until:
                    # The server is restarting: a request sent as the old one closed is lost
                    # with it; resent (the same number) until a new one answers.
                    if moves:
                        self.channel.reset()
                    continue
                error = e
                self.channel.reset()
                if n + 1 < attempts:
                    log.warning("engine_retry", channel=str(self.channel), attempt=n + 1,
                                line=text[:80])
            n += 1
        tries = f" after {attempts} tries" if attempts > 1 else f" within {t:g} s"
        if isinstance(error, EngineClosed):
            raise EngineClosed(f"no answer to {text!r} from {self.channel}{tries}: "
                               f"{error}") from error
        raise EngineTimeout(f"no answer to {text!r} from {self.channel}{tries}") from None

    def close(self) -> int | None:
        return self.channel.close()

    def __enter__(self) -> "EngineClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "Channel", "EngineClient", "EngineClosed", "EngineCommandError", "EngineError",
    "EngineRestarting", "EngineSessionExpired", "EngineTimeout", "GtpResponse",
    "IDEMPOTENT_COMMANDS", "is_idempotent", "parse_response", "read_response", "resend_refusal",
]

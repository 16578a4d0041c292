"""Who may reach the ZeroMQ server: a bind that other hosts can reach needs CURVE
authentication (a server key pair and a directory of the allowed clients' public keys) or an
explicit ``--insecure``; a loopback, ``ipc://`` or ``inproc://`` bind needs neither.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING

import zmq
import zmq.auth

if TYPE_CHECKING:
    from zmq.auth.thread import ThreadAuthenticator

from engine_server.log import get_logger

log = get_logger("zmq")


class SecurityError(RuntimeError):
    """The requested bind would expose the engine without authentication."""


def is_loopback_endpoint(endpoint: str) -> bool:
    """``tcp://127.x`` / ``[::1]`` / ``localhost`` and ``ipc://``/``inproc://`` are local."""
    scheme, _, rest = endpoint.partition("://")
    if scheme in ("ipc", "inproc"):
        return True
    if scheme != "tcp":
        return False
    host = rest.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "*", interface names and host names may reach the network


def secure(sock: zmq.Socket, ctx: zmq.Context, endpoint: str, secret_key: Path | None,
           allowed_clients: Path | None, insecure: bool) -> ThreadAuthenticator | None:
    """Make ``sock`` a CURVE server with ``secret_key`` (a ``zmq.auth`` secret key file) that
    admits the clients whose public keys are in ``allowed_clients``, or refuse (SecurityError)
    a bind of ``endpoint`` that would reach the network without it unless ``insecure``.  The
    authenticator, started, to stop when the server closes (None without CURVE)."""
    local = is_loopback_endpoint(endpoint)
    auth = None
    if secret_key is not None:
        from zmq.auth.thread import ThreadAuthenticator

        if allowed_clients is None:
            raise SecurityError("CURVE needs --allowed-clients DIR (client public keys)")
        public, secret = zmq.auth.load_certificate(str(secret_key))
        if secret is None:
            raise SecurityError(f"{secret_key} holds no secret key")
        auth = ThreadAuthenticator(ctx)
        auth.start()
        auth.configure_curve(domain="*", location=str(allowed_clients))
        sock.curve_secretkey = secret
        sock.curve_publickey = public
        sock.curve_server = True
    elif not local:
        if not insecure:
            sock.close(0)
            raise SecurityError(
                f"refusing to bind {endpoint} without CURVE authentication: pass "
                "--curve-key and --allowed-clients, or --insecure to accept the risk")
        log.warning("insecure_bind", endpoint=endpoint,
                    note="anyone who can reach this address controls the engine")
    return auth


def generate_keys(directory: str | Path, name: str) -> tuple[Path, Path]:
    """A CURVE key pair ``NAME.key`` (public) and ``NAME.key_secret`` in ``directory``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    public, secret = zmq.auth.create_certificates(str(d), name)
    return Path(public), Path(secret)


__all__ = ["SecurityError", "generate_keys", "is_loopback_endpoint", "secure"]

"""``othello-engine``: the long-running engine process (NBoard v2 or GTP on stdin/stdout)."""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .log import configure_logging, get_logger


def _parser() -> argparse.ArgumentParser:
    from .agents import DEFAULT_AGENT

    p = argparse.ArgumentParser(
        prog="othello-engine",
        description="Othello engine speaking NBoard v2 or GTP v2 on stdin/stdout. The first "
                    "command picks the protocol unless --protocol says it. Logs go to stderr "
                    "(or --log-file); stdout carries protocol lines only.")
    p.add_argument("--agent", default=DEFAULT_AGENT,
                   help=f"agent spec name[:key=value,...] (default {DEFAULT_AGENT}); "
                        "see --list-agents")
    p.add_argument("--list-agents", action="store_true",
                   help="list agents, their parameters, defaults and source seeds, then exit")
    p.add_argument("--protocol", default="auto", choices=["auto", "nboard", "gtp"],
                   help="auto: 'nboard', 'ping' or 'set ...' first means NBoard, else GTP")
    p.add_argument("--rules", default="standard", choices=["standard", "reversed"],
                   help="reversed: fewer discs win (GGF TY[..a] also selects it per game)")
    p.add_argument("--move-time", type=float, default=None, metavar="SECONDS",
                   help="hard cap per move, measured from the command's arrival (e.g. 4.8)")
    p.add_argument("--ponder", action="store_true",
                   help="think on the opponent's time until the next command")
    p.add_argument("--seed", type=int, default=1, help="seed of the agent's random stream")
    p.add_argument("--name", default="OthelloPy", help="engine name (one word)")
    p.add_argument("--no-warmup", action="store_true",
                   help="do not load/compile the search kernels in the background at start")
    p.add_argument("--precompile", action="store_true",
                   help="load or compile every agent's numba kernels into the cache, then exit")
    p.add_argument("--selfplay", action="store_true",
                   help="play one game against itself, print it, and exit")
    z = p.add_argument_group("ZeroMQ server")
    z.add_argument("--zmq", metavar="ENDPOINT",
                   help="also serve over ZeroMQ, e.g. tcp://127.0.0.1:5555 or ipc:///tmp/oth")
    z.add_argument("--no-stdio", action="store_true", help="serve ZeroMQ only")
    z.add_argument("--max-sessions", type=int, default=64, help="clients served at once")
    z.add_argument("--idle-timeout", type=float, default=1800.0,
                   help="seconds without a message before a session is freed")
    z.add_argument("--curve-key", metavar="FILE",
                   help="server secret key file (zmq.auth format) to require CURVE")
    z.add_argument("--allowed-clients", metavar="DIR",
                   help="directory of allowed client public key files (with --curve-key)")
    z.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback bind without CURVE (logs a warning)")
    z.add_argument("--gen-keys", nargs=2, metavar=("DIR", "NAME"),
                   help="create a CURVE key pair DIR/NAME.key and DIR/NAME.key_secret, exit")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error", "critical"])
    p.add_argument("--log-file", default=None, help="append logs (JSON lines) to this file")
    return p


def _selfplay(spec: str, rules: str, seed: int, move_time: float) -> int:
    from .agents import make_agent
    from .game import Game, Position, square_name
    from .search.limits import Limits

    agent = make_agent(spec, seed=seed)
    game = Game(Position.start(rules))
    played = 0
    while not game.is_over():
        agent.advance(game.moves[played:])
        played = len(game.moves)
        game.play(agent.search(game.position, Limits(time=move_time)).best_move)
    print(game.position)
    print(" ".join(square_name(m) for m in game.moves))
    print(game.result())
    return 0


def _precompile() -> int:
    import time

    from .agents import AGENTS, make_agent
    from .game import Game, Position
    from .search.limits import Limits

    t0 = time.monotonic()
    pos = Game.from_moves(["f5", "d6"]).position
    # an endgame, so the root solver's kernels are compiled too (not at a game's first solve)
    end = Position.from_string(
        "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--", "X")
    for name in AGENTS:
        for rules in ("standard", "reversed"):
            for p in (pos, end):
                agent = make_agent(name)
                r = agent.search(p.with_rules(rules), Limits(iterations=20))
                agent.advance([r.best_move])
    get_logger("engine").info("precompiled", seconds=round(time.monotonic() - t0, 2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_level, args.log_file)
    if args.list_agents:
        from .agents import describe_agents

        print(describe_agents())
        return 0
    from .agents import AgentSpecError, parse_spec

    try:
        parse_spec(args.agent)
    except AgentSpecError as e:
        print(f"othello-engine: {e}", file=sys.stderr)
        return 2
    if args.move_time is not None and args.move_time <= 0:
        print("othello-engine: --move-time must be > 0", file=sys.stderr)
        return 2
    if not args.name.isalnum():
        print("othello-engine: --name must be letters and digits only", file=sys.stderr)
        return 2
    if args.gen_keys:
        from .serve.zmq_server import generate_keys

        public, secret = generate_keys(*args.gen_keys)
        print(f"public key: {public}\nsecret key: {secret}")
        return 0
    if args.precompile:
        return _precompile()
    if args.selfplay:
        return _selfplay(args.agent, args.rules, args.seed, args.move_time or 0.2)
    from .game import Rules
    from .serve.stdio import serve_stdio
    from .session import EngineOptions

    options = EngineOptions(agent=args.agent, rules=Rules.parse(args.rules),
                            move_time=args.move_time, ponder=args.ponder, seed=args.seed,
                            name=args.name, version=__version__, warmup=not args.no_warmup)
    get_logger("engine").info("start", agent=args.agent, rules=args.rules,
                              move_time=args.move_time, ponder=args.ponder)
    if args.no_stdio and not args.zmq:
        print("othello-engine: --no-stdio needs --zmq ENDPOINT", file=sys.stderr)
        return 2
    if not args.zmq:
        return serve_stdio(options, args.protocol)
    return _serve_zmq(args, options)


def _serve_zmq(args, options) -> int:
    import signal
    import threading
    from pathlib import Path

    from .serve.stdio import serve_stdio
    from .serve.zmq_server import SecurityError, ServerConfig, ZmqServer

    config = ServerConfig(
        endpoint=args.zmq, max_sessions=args.max_sessions, idle_timeout=args.idle_timeout,
        insecure=args.insecure,
        server_secret_key=Path(args.curve_key) if args.curve_key else None,
        allowed_clients=Path(args.allowed_clients) if args.allowed_clients else None)
    try:
        server = ZmqServer(options, config)
    except (SecurityError, OSError, ValueError) as e:
        print(f"othello-engine: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # zmq.ZMQError (bad endpoint, address in use)
        print(f"othello-engine: cannot serve {args.zmq}: {e}", file=sys.stderr)
        return 2
    if args.no_stdio:
        signal.signal(signal.SIGTERM, lambda *a: server.stop())
        signal.signal(signal.SIGINT, lambda *a: server.stop())
        server.serve_forever()
        return 0
    t = threading.Thread(target=server.serve_forever, name="zmq", daemon=True)
    t.start()
    try:
        return serve_stdio(options, args.protocol)
    finally:
        server.stop()
        t.join(5)


if __name__ == "__main__":
    sys.exit(main())

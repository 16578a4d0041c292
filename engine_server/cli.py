"""``othello-engine``: the long-running engine process (NBoard v2 or GTP on stdin/stdout)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from . import __version__
from .log import configure_logging, get_logger

if TYPE_CHECKING:
    from .config import Config
    from .session import EngineOptions


def _parser(web: bool = False) -> argparse.ArgumentParser:
    """The engine's options; ``web`` gives ``othello-web``'s usage (a HOST:PORT argument in
    place of ``--web``)."""
    from .presets import DEFAULT_AGENT

    if web:
        p = argparse.ArgumentParser(
            prog="othello-web",
            description="Serve the page where anyone plays the engine in a browser (docs/web.md)"
                        "; the same as othello-engine --web HOST:PORT. Each tab is a session "
                        "with the configuration's [remote] limits.")
        p.add_argument("web", nargs="?", default="", metavar="HOST:PORT",
                       help="address to serve (default: the [web] table's address, "
                            "127.0.0.1:8000; port 0: any free port)")
    else:
        p = argparse.ArgumentParser(
            prog="othello-engine",
            description="Othello engine speaking NBoard v2 or GTP v2 on stdin/stdout. The "
                        "first command picks the protocol unless --protocol says it. Logs go to "
                        "stderr (or --log-file); stdout carries protocol lines only.")
    # Options that the configuration file can also set default to None here: a flag given
    # overrides the file, a flag not given leaves the file's value (config.py).
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--config", metavar="PATH",
                   help="configuration file (TOML; default $OTHELLO_ENGINE_CONFIG, else "
                        "~/.config/othello-engine/config.toml when it exists)")
    p.add_argument("--print-config", action="store_true",
                   help="print the effective configuration (file + flags + defaults), exit")
    p.add_argument("--agent", default=None,
                   help=f"preset name or agent spec name[:key=value,...] (default "
                        f"{DEFAULT_AGENT}); see --list-agents")
    p.add_argument("--list-agents", action="store_true",
                   help="list presets and agents (parameters, defaults, source seeds), exit")
    p.add_argument("--rules", default=None, choices=["standard", "reversed"],
                   help="reversed: fewer discs win (GGF TY[..a] also selects it per game)")
    p.add_argument("--move-time", type=float, default=None, metavar="SECONDS",
                   help="hard cap per move, measured from the command's arrival (e.g. 4.8). "
                        "Without it, and without a clock from the GUI, each agent has its own "
                        "budget: best searches 8 plies deep (mostly 0.005-0.1 s a move) and "
                        "solves endgames exactly (up to about 2 s); --list-agents gives every "
                        "agent's budget")
    p.add_argument("--ponder", action="store_true", default=None,
                   help="think on the opponent's time until the next command")
    p.add_argument("--seed", type=int, default=None, help="seed of the agent's random stream")
    p.add_argument("--name", default=None, help="engine name (one word)")
    p.add_argument("--no-warmup", action="store_true", default=None,
                   help="do not load/compile the search kernels in the background at start")
    if web:
        # stdin and ZeroMQ options do not apply to the page; their values stay unset
        p.set_defaults(protocol=None, precompile=False, selfplay=False, zmq=None,
                       no_stdio=None, max_sessions=None, idle_timeout=None, curve_key=None,
                       allowed_clients=None, insecure=None, gen_keys=None,
                       move_overhead=None)   # the page has no GUI clock to keep time back of
    else:
        p.add_argument("--move-overhead", type=float, default=None, metavar="SECONDS",
                       help="seconds kept back of every budget the GUI's clock gives (default "
                            "0.15): what a move loses in transit and in stopping the search. "
                            "Raise it where the GUI is remote or the machine busy, lower it where "
                            "a referee on the same machine allows every last hundredth")
        p.add_argument("--protocol", default=None, choices=["auto", "nboard", "gtp"],
                       help="auto: 'nboard', 'ping' or 'set ...' first means NBoard, else GTP")
        p.add_argument("--precompile", action="store_true",
                       help="load or compile every agent's numba kernels into the cache, then "
                            "exit; while anything compiles, progress goes to stderr (a line "
                            "per agent, and one at least every 10 s)")
        p.add_argument("--selfplay", action="store_true",
                       help="play one game against itself, print it, and exit")
        z = p.add_argument_group("ZeroMQ server")
        z.add_argument("--zmq", metavar="ENDPOINT",
                       help="also serve over ZeroMQ, e.g. tcp://127.0.0.1:5555 or ipc:///tmp/oth")
        z.add_argument("--no-stdio", action="store_true", default=None, help="serve ZeroMQ only")
        z.add_argument("--max-sessions", type=int, default=None,
                       help="clients served at once (default 16)")
        z.add_argument("--idle-timeout", type=float, default=None,
                       help="seconds without a message before a session is freed (default 1800)")
        z.add_argument("--curve-key", metavar="FILE",
                       help="server secret key file (zmq.auth format) to require CURVE")
        z.add_argument("--allowed-clients", metavar="DIR",
                       help="directory of allowed client public key files (with --curve-key)")
        z.add_argument("--insecure", action="store_true", default=None,
                       help="allow a non-loopback bind without CURVE (logs a warning)")
        z.add_argument("--gen-keys", nargs=2, metavar=("DIR", "NAME"),
                       help="create a CURVE key pair DIR/NAME.key and DIR/NAME.key_secret, exit")
        p.add_argument("--web", nargs="?", const="", metavar="HOST:PORT",
                       help="serve the web page instead of stdin (docs/web.md); without a "
                            "value, or with a part left out, the [web] table's address "
                            "(127.0.0.1:8000)")
    st = p.add_argument_group("session store (ZeroMQ and web sessions outlive the server)")
    st.add_argument("--store", metavar="PATH|DSN", default=None,
                    help="SQLite file the sessions are kept in (default: [store] path, else "
                         "~/.local/share/othello-engine/sessions.sqlite3), or a PostgreSQL "
                         "database, postgresql://USER@HOST:PORT/DATABASE (the postgres "
                         "extra); servers given the same store share their sessions")
    st.add_argument("--server-name", metavar="NAME", default=None,
                    help="this server's name in the store's leases (default: the host's "
                         "name); servers of one machine with different names wait out each "
                         "other's leases as if on separate machines")
    st.add_argument("--no-store", action="store_true", default=None,
                    help="keep sessions in memory only: a restart loses them")
    p.add_argument("--log-level", default=None,
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
        move = agent.search(game.position, Limits(time=move_time)).best_move
        assert move is not None  # the game is not over
        game.play(move)
    print(game.position)
    print(" ".join(square_name(m) for m in game.moves))
    print(game.result())
    return 0


def _precompile(args: argparse.Namespace, prog: str) -> int:
    """Every agent's kernels into the cache: the search modules' own as they load, then an
    agent a group, with progress on stderr while anything compiles (kernel_progress.py) and
    nothing when the cache holds them all."""
    import time

    from .kernel_progress import CompileProgress

    t0 = time.monotonic()
    with CompileProgress(prog=prog) as progress:
        # the searches' kernels declare their signatures, so numba compiles them as their
        # modules load, which the configuration's imports are the first to do
        with progress.group("the search modules", counted=False):
            if _configure(args, prog) is None:
                return 2
            from .agents import AGENTS, make_agent
            from .game import Game, Position
            from .search.limits import Limits

        pos = Game.from_moves(["f5", "d6"]).position
        # an endgame, so the root solver's kernels are compiled too (not at a game's first solve)
        end = Position.from_string(
            "--XXXXX--OOOXX-O-OOOXXOX-OXOXOXXOXXXOXXX--XOXOXX-XXXOOO--OOOOO--", "X")
        progress.groups = len(AGENTS)
        for name in AGENTS:
            with progress.group(name):
                for rules in ("standard", "reversed"):
                    # puct has no shipped reversed network: net=none compiles the same kernels
                    # without warning every new install that a network is missing
                    spec = f"{name}:net=none" if name == "puct" and rules == "reversed" \
                        else name
                    for p in (pos, end):
                        agent = make_agent(spec)
                        r = agent.search(p.with_rules(rules), Limits(iterations=20))
                        assert r.best_move is not None
                        agent.advance([r.best_move])
    get_logger("engine").info("precompiled", seconds=round(time.monotonic() - t0, 2),
                              compiled=progress.compiled)
    return 0


# flag -> (table, key, value to store); the value is the flag's own unless given here
_FLAG_KEYS: list[tuple[str, str, str, Any]] = [
    ("agent", "engine", "agent", None), ("protocol", "engine", "protocol", None),
    ("rules", "engine", "rules", None), ("move_time", "engine", "move_time", None),
    ("move_overhead", "engine", "move_overhead", None),
    ("ponder", "engine", "ponder", None), ("seed", "engine", "seed", None),
    ("name", "engine", "name", None), ("no_warmup", "engine", "warmup", False),
    ("zmq", "zmq", "endpoint", None), ("no_stdio", "zmq", "stdio", False),
    ("max_sessions", "zmq", "max_sessions", None),
    ("idle_timeout", "zmq", "idle_timeout", None), ("curve_key", "zmq", "curve_key", None),
    ("allowed_clients", "zmq", "allowed_clients", None), ("insecure", "zmq", "insecure", None),
    ("log_level", "log", "level", None), ("log_file", "log", "file", None),
    ("store", "store", "path", None), ("no_store", "store", "enabled", False),
    ("server_name", "store", "server_name", None),
]


def effective_config(args: argparse.Namespace) -> Config:
    """Defaults, then the file, then the flags given; ConfigError names what is wrong."""
    from .agents import AgentSpecError
    from .config import ConfigError, default_path, load

    cfg = load(args.config if args.config is not None else default_path())
    for flag, table, key, stored in _FLAG_KEYS:
        value = getattr(args, flag)
        if value is not None:
            getattr(cfg, table)[key] = value if stored is None else stored
    if args.agent is not None:
        try:
            cfg.resolve(args.agent)
        except AgentSpecError as e:
            raise ConfigError(f"--agent: {e}") from None
    if cfg.engine["move_time"] is not None and not cfg.engine["move_time"] > 0:
        raise ConfigError("--move-time must be > 0")
    if not 0 <= cfg.engine["move_overhead"] <= 10:
        raise ConfigError("--move-overhead must be 0..10 seconds")
    if not str(cfg.engine["name"]).isalnum():
        raise ConfigError("--name must be letters and digits only")
    if cfg.zmq["max_sessions"] < 1:
        raise ConfigError("--max-sessions must be >= 1")
    if cfg.zmq["idle_timeout"] <= 0:
        raise ConfigError("--idle-timeout must be > 0")
    cfg.validate()
    return cfg


# Where a preset or agent name is used, for --list-agents.
NAME_USES = (
    ("--agent NAME", "the engine's and the web page's default agent on the command line "
                     "(othello-engine, othello-web, othello-botzone; [engine] agent in the "
                     "configuration file)"),
    ("othello-agent NAME", "a GTP command: GoGui, Quarry or othello-remote switch agents "
                           "in a running session"),
    ("NBoard", "no command names an agent: give --agent NAME in the engine's Command field; "
               "with a [levels] table, set depth N (the GUI's level) picks that level's preset"),
    ("web page", "the opponent menus list the presets and families that [remote] allows"),
    ("agent:NAME", "a player of othello-match"),
    ("export --agent NAME", "othello-cs303 export: the alpha-beta family (ab, best) and its "
                            "presets"),
)


def _list_agents(cfg: Config) -> str:
    from .agents import describe_agents

    width = max(len(n) for n in cfg.presets)
    lines = ["A NAME is a preset or an agent spec family[:key=value,...]; letter case does not "
             "matter. Where names go:"]
    use_width = max(len(u) for u, _ in NAME_USES)
    lines += [f"  {u:<{use_width}}  {what}" for u, what in NAME_USES]
    lines += ["", f"presets ({cfg.source or 'built-in'}):"]
    lines += [f"  {n:<{width}}  {s}" for n, s in cfg.presets.items()]
    if cfg.levels:
        lines.append("NBoard levels (set depth N -> preset):")
        lines += [f"  {lv:>2}+  {n}" for lv, n in sorted(cfg.levels.items())]
    lines += ["", "agent families (a spec: family[:key=value,...]):", describe_agents()]
    return "\n".join(lines)


def web_main(argv: list[str] | None = None) -> int:
    """``othello-web [HOST:PORT] [options]``: the engine's page."""
    return main(argv, web=True)


def _configure(args: argparse.Namespace, prog: str) -> Config | None:
    """The effective configuration, with logging set up as it says; None (said on stderr)
    when it is wrong."""
    from .config import ConfigError

    try:
        cfg = effective_config(args)
    except ConfigError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None
    configure_logging(cfg.log["level"], cfg.log["file"])
    return cfg


def main(argv: list[str] | None = None, web: bool = False) -> int:
    prog = "othello-web" if web else "othello-engine"
    args = _parser(web).parse_args(argv)
    # An empty kernel cache compiles for minutes, mostly while the search modules load (the
    # configuration's imports load them first): what reports on it listens from here on.
    if args.precompile:
        return _precompile(args, prog)
    from .kernel_progress import announce_first_compile

    announce_first_compile(prog)   # one line, to a terminal only: NBoard reads stderr
    cfg = _configure(args, prog)
    if cfg is None:
        return 2
    if args.print_config:
        from .config import dumps

        sys.stdout.write(dumps(cfg))
        return 0
    if args.list_agents:
        print(_list_agents(cfg))
        return 0
    eng = cfg.engine
    if args.gen_keys:
        from .serve.zmq_server import generate_keys

        public, secret = generate_keys(*args.gen_keys)
        print(f"public key: {public}\nsecret key: {secret}")
        return 0
    if args.selfplay:
        return _selfplay(cfg.resolve(eng["agent"]), eng["rules"], eng["seed"],
                         eng["move_time"] or 0.2)
    from .game import Rules
    from .serve.stdio import serve_stdio
    from .session import EngineOptions

    options = EngineOptions(agent=eng["agent"], rules=Rules.parse(eng["rules"]),
                            move_time=eng["move_time"], move_overhead=eng["move_overhead"],
                            ponder=eng["ponder"], seed=eng["seed"],
                            name=eng["name"], version=__version__, warmup=eng["warmup"],
                            catalog=cfg.catalog(), policy=cfg.limits.policy())
    get_logger("engine").info("start", agent=eng["agent"], rules=eng["rules"],
                              move_time=eng["move_time"], ponder=eng["ponder"],
                              config=str(cfg.source) if cfg.source else None)
    if args.web is not None:
        from .serve.web import serve_web

        return serve_web(cfg, options, args.web)
    if not cfg.zmq["stdio"] and not cfg.zmq["endpoint"]:
        print("othello-engine: --no-stdio needs --zmq ENDPOINT", file=sys.stderr)
        return 2
    if not cfg.zmq["endpoint"]:
        return serve_stdio(options, eng["protocol"])
    return _serve_zmq(cfg, options)


def _serve_zmq(cfg: Config, options: EngineOptions) -> int:
    import signal
    import threading
    from pathlib import Path

    from .serve.signals import handle_signals
    from .serve.stdio import serve_stdio
    from .serve.store import StoreError, store_from_settings
    from .serve.zmq_server import SecurityError, ServerConfig, ZmqServer

    z = cfg.zmq
    config = ServerConfig(
        endpoint=z["endpoint"], max_sessions=z["max_sessions"], idle_timeout=z["idle_timeout"],
        new_session_timeout=z["new_session_timeout"],
        disconnected_timeout=z["disconnected_timeout"], heartbeat=float(z["heartbeat"]),
        max_message_bytes=z["max_message_bytes"], insecure=z["insecure"],
        server_secret_key=Path(z["curve_key"]) if z["curve_key"] else None,
        allowed_clients=Path(z["allowed_clients"]) if z["allowed_clients"] else None,
        remote_policy=cfg.remote.policy(), drain_timeout=float(cfg.store["drain_timeout"]))
    try:
        store = store_from_settings(cfg.store, "othello-engine")
    except StoreError as e:
        print(f"othello-engine: {e}", file=sys.stderr)
        return 2
    try:
        server = ZmqServer(options, config, store=store)
    except (SecurityError, OSError, ValueError) as e:
        print(f"othello-engine: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # zmq.ZMQError (bad endpoint, address in use)
        print(f"othello-engine: cannot serve {z['endpoint']}: {e}", file=sys.stderr)
        return 2
    if not z["stdio"]:
        # Both drain: requests under way finish (up to drain_timeout), then the sessions wait
        # in the store for the next server.
        handle_signals([signal.SIGTERM, signal.SIGINT], lambda signum: server.stop(drain=True))
        # bound, so clients may connect now; with stdio serving a protocol too, stderr stays
        # quiet (NBoard merges it into the protocol)
        print(server.ready_line(), file=sys.stderr, flush=True)
        server.serve_forever()
        return 0
    t = threading.Thread(target=server.serve_forever, name="zmq", daemon=True)
    t.start()
    try:
        return serve_stdio(options, cfg.engine["protocol"])
    finally:
        server.stop()
        t.join(5)


if __name__ == "__main__":
    sys.exit(main())

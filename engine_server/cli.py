"""``othello-engine``: the engine's command line."""

from __future__ import annotations

import argparse
import sys

from .log import configure_logging, get_logger


def _parser() -> argparse.ArgumentParser:
    from .agents import DEFAULT_AGENT

    p = argparse.ArgumentParser(
        prog="othello-engine",
        description="Othello engine server. Until the protocol front ends land, it plays a "
                    "self-play demo game of the chosen agent and prints the board to stdout.")
    p.add_argument("--agent", default=DEFAULT_AGENT,
                   help="agent spec name[:key=value,...]; see --list-agents")
    p.add_argument("--list-agents", action="store_true",
                   help="list agents, their parameters, defaults and source seeds, then exit")
    p.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    p.add_argument("--move-time", type=float, default=0.2, help="seconds per move")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-level", default="warning")
    p.add_argument("--log-file", default=None)
    return p


def _demo(spec: str, rules: str, seed: int, move_time: float) -> int:
    from .agents import make_agent
    from .game import Game, Position, square_name
    from .search.limits import Limits

    agent = make_agent(spec, seed=seed)
    log = get_logger("demo")
    game = Game(Position.start(rules))
    played = 0
    while not game.is_over():
        agent.advance(game.moves[played:])
        played = len(game.moves)
        result = agent.search(game.position, Limits(time=move_time))
        log.info("move", **result.summary())
        game.play(result.best_move)
    print(game.position)
    print(" ".join(square_name(m) for m in game.moves))
    print(game.result())
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
    get_logger("engine").info("start", agent=args.agent, rules=args.rules, seed=args.seed)
    return _demo(args.agent, args.rules, args.seed, args.move_time)


if __name__ == "__main__":
    sys.exit(main())

"""``othello-engine``: the engine's command line."""

from __future__ import annotations

import argparse
import sys

from .log import configure_logging, get_logger


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="othello-engine",
        description="Othello engine server. Until the protocol front ends land, it plays a short "
                    "self-play demo game and prints the board to stdout.")
    p.add_argument("--rules", default="standard", choices=["standard", "reversed"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-level", default="warning")
    p.add_argument("--log-file", default=None)
    return p


def _demo(rules: str, seed: int) -> int:
    import numpy as np

    from .game import Game, Position, square_name

    rng = np.random.default_rng(seed)
    game = Game(Position.start(rules))
    while not game.is_over():
        moves = game.position.legal_moves()
        game.play(int(rng.choice(moves)))
    print(game.position)
    print(" ".join(square_name(m) for m in game.moves))
    print(game.result())
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_level, args.log_file)
    get_logger("engine").info("start", rules=args.rules, seed=args.seed)
    return _demo(args.rules, args.seed)


if __name__ == "__main__":
    sys.exit(main())

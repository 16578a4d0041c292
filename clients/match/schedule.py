"""Which games a match holds: player labels, pairings and the interleaved game list."""

from __future__ import annotations

import random

from . import openings as O
from .config import MatchConfig
from .players import PlayerSpec
from .referee import GameTask, derive_seed


def labels(specs: list[PlayerSpec]) -> list[str]:
    """Player names as tables show them; a name given twice gets ``#2``, ``#3``..."""
    out: list[str] = []
    for s in specs:
        name, k = s.name, 2
        while name in out:
            name = f"{s.name}#{k}"
            k += 1
        out.append(name)
    return out


def pairings(n: int, fmt: str) -> list[tuple[int, int]]:
    if fmt == "gauntlet":
        return [(0, j) for j in range(1, n)]
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def schedule(config: MatchConfig) -> list[GameTask]:
    """All games of the match, interleaved over pairings so that partial results stay balanced.

    Game ``g`` of a pairing (a, b) plays opening ``order[g // 2]`` (``order[g]`` without colour
    swap) with a black when ``g`` is even; openings are taken in a seeded order and repeat in
    further rounds when there are fewer openings than game pairs.
    """
    specs = config.specs()
    names = labels(specs)
    book = O.load(config.openings, config.rules)
    order = list(range(len(book)))
    random.Random(derive_seed("openings", config.seed)).shuffle(order)
    per_pair = 2 if config.swap else 1
    tasks: list[GameTask] = []
    pairs = pairings(len(specs), config.format)
    for g in range(config.games):
        slot, swap = divmod(g, per_pair)
        opening = book[order[slot % len(book)]]
        rnd = slot // len(book)
        for a, b in pairs:
            black, white = (a, b) if swap == 0 else (b, a)
            pairing = f"{names[a]} vs {names[b]}"
            key = f"{pairing}|o{opening.index}|s{swap}|r{rnd}"
            tasks.append(GameTask(
                key=key, pairing=pairing, opening_index=opening.index, opening=opening.moves,
                swap=swap, round=rnd, black=specs[black].text, white=specs[white].text,
                black_label=names[black], white_label=names[white], rules=config.rules,
                tc=config.tc, seed=derive_seed(config.seed, key), event=config.event))
    return tasks

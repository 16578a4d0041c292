"""What the web page is shown of the engine and of a game (docs/web.md, "Messages"): the
agents and presets it may choose, the ``welcome`` message, and the game's part of ``state``.

Pure functions of the session and the game.  ``protocol/web.py`` encodes the messages and
writes the pieces they share (the board, a colour); the handler (``web.py``) adds to ``state``
who plays each side and what is running.
"""

from __future__ import annotations

from engine_server.agents import AGENTS, AgentSpecError, parse_spec
from engine_server.game import PASS, Color, Game, square_name
from engine_server.session import Session
from protocol import web

Message = web.Message


def black_view(value: float, mover: Color) -> float:
    """A value from the mover's view (disc margin), from black's."""
    return value if mover == Color.BLACK else -value


def agent_catalog(session: Session) -> tuple[list[Message], list[Message]]:
    """The agent families (with their parameters) and presets this session may choose, as
    the page shows them.  A preset the policy refuses is left out; a family is listed with
    ``spec_allowed`` false when only presets may be chosen or the family is not allowed."""
    policy = session.options.policy
    presets = session.options.catalog.presets
    forbidden = set(policy.forbidden_params)
    families = []
    for info in AGENTS.values():
        allowed = not policy.presets_only and (not policy.agents or info.name in policy.agents)
        families.append({
            "name": info.name, "source": info.source, "summary": info.summary,
            "spec_allowed": allowed,
            "params": [{"name": p.name, "type": p.type.__name__,
                        "default": web.json_safe(p.default), "help": p.help,
                        "choices": web.json_safe(p.choices), "min": p.min,
                        "max": p.max} for p in info.params if p.name not in forbidden]})
    shown = []
    for name in presets:
        try:
            fitted = policy.admit(name, presets)
        except AgentSpecError:
            continue
        shown.append({"name": name, "spec": fitted, "family": parse_spec(fitted)[0].name})
    return families, shown


def welcome_message(session: Session, max_time: float | None, time: float,
                    max_message_bytes: int) -> Message:
    """The agents, presets and limits a page needs first (``max_time``: the server's cap on the
    time per move; ``time``: the page's default)."""
    opts = session.options
    families, presets = agent_catalog(session)
    policy = opts.policy
    return {
        "type": "welcome", "engine": opts.name, "version": opts.version,
        "agents": families, "presets": presets,
        "limits": {"max_time": max_time, "threads": policy.max_threads,
                   "memory_mib": policy.max_memory_mib, "presets_only": policy.presets_only,
                   "max_message_bytes": max_message_bytes},
        "defaults": {"agent": opts.agent, "time": time, "rules": str(opts.rules),
                     "color": "black"},
    }


def game_state(game: Game, human_to_move: bool) -> Message:
    """The game's part of a ``state`` message: the board, the side to move and its legal moves,
    the moves so far from their start, the result once over (``human_to_move``: a person at the
    page is to move, so a forced pass is theirs to play)."""
    pos = game.position
    b, w = pos.discs()
    human = human_to_move
    legal = [square_name(m) for m in pos.legal_moves() if m != PASS]
    result = None
    if pos.is_game_over():
        r = game.result()
        winner = None if r.winner is None else web.color_name(r.winner)
        text = "Draw" if winner is None else f"{winner.capitalize()} wins"
        result = {"winner": winner, "black": r.black_discs, "white": r.white_discs,
                  "score": r.black_score, "text": f"{text} {r.black_discs}-{r.white_discs}"}
    last = game.moves[-1] if game.moves else None
    return {
        "type": "state",
        "board": web.board_text(pos.black, pos.white),
        # The position the moves start from (an imported record may start anywhere): the
        # page replays the moves from it to step back through the game.
        "start": web.board_text(game.start.black, game.start.white),
        "start_side": web.color_name(game.start.side),
        "side": web.color_name(pos.side), "rules": str(pos.rules),
        "counts": {"black": b, "white": w},
        "legal": legal, "human_to_move": human, "must_pass": human and pos.must_pass(),
        "last": None if last is None else square_name(last),
        "ply": len(game.moves), "moves": [square_name(m) for m in game.moves],
        "over": pos.is_game_over(), "result": result,
    }


__all__ = ["agent_catalog", "black_view", "game_state", "welcome_message"]

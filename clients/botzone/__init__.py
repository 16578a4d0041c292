"""Botzone Reversi adapter: JSON and simplified I/O, one-shot and keep-running
(``othello-botzone --agent SPEC``)."""

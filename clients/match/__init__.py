"""Referee and tournaments for any Othello engines (``othello-match``); see docs/match.md.

Kept free of imports: ``python -m clients.match.cs303_worker`` runs a student's file in a process
that should hold nothing but what the course judge's process holds.
"""

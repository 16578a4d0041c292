"""Every console script's ``--help``: no text cut off mid-sentence, preset lists that follow the
preset table, and the commands a help or a closing line suggests are the README's.

The parsers are found the way a user meets them: each script of ``[project.scripts]`` is called
with no arguments (and with each ``PROG WORD`` its help mentions, for commands a script
dispatches by hand) while ``parse_known_args`` is replaced by a function that hands back the
parser instead of parsing; subcommands are walked from there.
"""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
# commands dispatched by hand that no help mentions yet
UNLISTED = {"othello-match": ["compare"]}

# Words a complete sentence or phrase does not end with: articles, possessive determiners,
# conjunctions, prepositions and the like (a verb may end one: "... as most positions are").
DANGLING = frozenset("""
    a an the and or nor but of to in on at by for from with into onto as than that which whose
    its their his her our your my every each per via if when unless not no e.g. i.e. this these
    those some any all such both either neither between within without under over about
    """.split())


class _Parser(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def unfinished(text: str) -> str | None:
    """Why ``text`` reads as cut off mid-sentence, or None."""
    t = " ".join(text.split())
    if not t:
        return None
    if t[-1] in ",;-(/[&+=":
        return f"ends with {t[-1]!r}"
    last = t.split()[-1].lower().strip("\"'`")
    if re.search(r"\w['’]s$", last):
        return f"ends with the possessive {last!r}"
    if last in DANGLING:
        return f"ends with {last!r}"
    for opening, closing in ("()", "[]"):
        if t.count(opening) != t.count(closing):
            return f"unbalanced {opening}{closing}"
    return None


def _walk(parser: argparse.ArgumentParser, found: dict[str, argparse.ArgumentParser]) -> None:
    found[parser.prog] = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _walk(sub, found)


def _captured(entry, argv: list[str]) -> argparse.ArgumentParser | None:
    try:
        entry(argv)
    except _Parser as p:
        return p.parser
    except SystemExit:
        pass
    return None


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    def hand_back(self, args=None, namespace=None):
        raise _Parser(self)

    found: dict[str, argparse.ArgumentParser] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_known_args", hand_back)
        for script, target in SCRIPTS.items():
            module, _, name = target.partition(":")
            entry = getattr(importlib.import_module(module), name)
            top = _captured(entry, [])
            assert top is not None, f"{script} built no parser"
            mine: dict[str, argparse.ArgumentParser] = {}
            _walk(top, mine)
            helps = "\n".join(p.format_help() for p in mine.values())
            words = set(re.findall(rf"{script} ([a-z][a-z0-9-]+)", helps))
            for word in sorted(words | set(UNLISTED.get(script, []))):
                if f"{script} {word}" not in mine:
                    sub = _captured(entry, [word])
                    if sub is not None:
                        _walk(sub, mine)
            found.update(mine)
    return found


def texts(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str]]:
    """(where, text) of every prose text ``--help`` shows: description, epilog, group
    descriptions, each option's help (with its %(default)s filled in) and each subcommand's."""
    formatter = parser._get_formatter()
    yield "description", parser.description or ""
    yield "epilog", parser.epilog or ""
    for group in parser._action_groups:
        yield f"group {group.title!r}", group.description or ""
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            yield (action.option_strings or [action.dest])[0], formatter._expand_help(action)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield f"subcommand {choice.dest}", choice.help or ""


def test_the_walk_reaches_every_script_and_the_commands_they_dispatch_by_hand(parsers):
    progs = set(parsers)
    assert {p.split()[0] for p in progs} == set(SCRIPTS)
    # subcommands of argparse, of a hand-made dispatch, and one level down
    assert {"othello-cs303 export", "othello-botzone pack", "othello-match cluster",
            "othello-reproduce", "othello-match compare", "othello-book show",
            "othello-train az loop", "othello-bench startup"} <= progs


def test_no_help_text_ends_mid_sentence(parsers):
    bad = [f"{prog} {where}: {why}: ...{' '.join(text.split())[-60:]}"
           for prog, parser in sorted(parsers.items()) for where, text in texts(parser)
           for why in [unfinished(text)] if why]
    assert bad == []


@pytest.mark.parametrize("text", [
    "solves endgames exactly; --list-agents gives every agent's",
    "the default of the", "rules and", "speed, in nodes per", "(default 5", "numbers, e.g.",
    "a list of moves,", "the table's [web"])
def test_a_text_cut_mid_sentence_is_caught(text):
    assert unfinished(text) is not None


@pytest.mark.parametrize("text", [
    "print the configuration, exit", "address (default 127.0.0.1:8000)",
    "other than the game's: most positions are", "for a machine lent for a while",
    "hard cap per move (e.g. 4.8). Without it, every agent's budget applies.", ""])
def test_a_complete_text_passes(text):
    assert unfinished(text) is None


@pytest.mark.parametrize("prog", ["othello-cs303 export", "othello-botzone pack"])
def test_the_export_helps_list_the_presets_of_the_exportable_family(parsers, prog):
    from clients.cs303.export import EXPORTABLE
    from engine_server.agents import parse_spec
    from engine_server.agents.policy import BUILTIN_PRESETS

    exportable = [name for name, spec in BUILTIN_PRESETS.items()
                  if parse_spec(spec)[0].name in EXPORTABLE]
    assert exportable == ["easy", "medium", "hard", "strong"]
    (agent,) = [a for a in parsers[prog]._actions if "--agent" in a.option_strings]
    assert agent.help is not None and f"({', '.join(exportable)})" in agent.help


def test_the_light_preset_table_is_the_registrys():
    from engine_server import presets
    from engine_server.agents import AGENTS, parse_spec
    from engine_server.agents.ab import AB, BEST
    from engine_server.agents.policy import BUILTIN_PRESETS

    assert BUILTIN_PRESETS is presets.BUILTIN_PRESETS
    for name in (presets.DEFAULT_AGENT, presets.SINGLE_THREAD_AGENT):
        assert parse_spec(name)[0].name in presets.ALPHA_BETA
    assert set(presets.ALPHA_BETA) == {AB.name, BEST.name}
    for spec in BUILTIN_PRESETS.values():
        assert presets.family(spec) in AGENTS and parse_spec(spec)[0].name == \
            presets.family(spec)


@pytest.mark.parametrize("module", ["clients.cs303.cli", "engine_server.cli"])
def test_the_help_does_not_load_the_agents(module):
    """Listing the presets in ``othello-cs303 export --help``, and the default agent in
    ``othello-engine --help``, cost no numba import; and ``--precompile`` can report on the
    search modules' compiling from before they load."""
    r = subprocess.run([sys.executable, "-c", f"import sys; from {module} import _parser; "
                        "_parser(); print(sorted(m for m in sys.modules if m.startswith("
                        "('numba', 'engine_server.agents'))))"],
                       capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_the_line_after_an_export_is_the_readmes_check(tmp_path, capsys, monkeypatch):
    from clients.cs303.cli import check_command, main

    readme = (REPO / "README.md").read_text()
    assert check_command(Path("12345678.py"), ".venv/bin/othello-cs303") in readme
    # started by another name (python -m, a test): the command's own name
    monkeypatch.setattr(sys, "argv", ["/some/where/pytest"])
    out = tmp_path / "my player.py"
    assert main(["export", "--agent", "easy", "-o", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith(f"check it with: othello-cs303 check '{out}' --time-out 1 --quiet")

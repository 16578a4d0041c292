"""The console scripts, run as a user runs them."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import data_file
from .loadsafe import SLACK

REPO = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=timeout)


def test_list_agents_names_every_agent_with_parameters_and_seed():
    r = _run("-m", "engine_server", "--list-agents")
    assert r.returncode == 0, r.stderr
    for name in ("random", "pseudo-random", "shallow", "minmax", "ucb1", "uct", "ocba", "dk"):
        assert f"\n{name}" in "\n" + r.stdout
    assert "UCB1 paper, Alg. 3.4" in r.stdout and "n0" in r.stdout and "nSims" in r.stdout


def test_bad_agent_spec_is_a_clear_error():
    r = _run("-m", "engine_server", "--agent", "uct:bogus=1")
    assert r.returncode == 2
    assert "unknown parameter 'bogus'" in r.stderr and r.stdout == ""


def test_bench_perft_and_search_print_json_lines():
    r = _run("-m", "benchmarks.cli", "perft", "6", "--json", "--repeat", "1", "--no-c")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["depth"] == 6 and obj["count"] == 8200 and obj["leaves_per_s"] > 0
    r = _run("-m", "benchmarks.cli", "search", "--agent", "uct", "--seconds", "0.2",
             "--repeat", "1", "--position", "midgame", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["iterations_per_s"] > 0 and obj["playouts_per_s"] > 0
    # The figures are printed; their goals (20 ms) are for a quiet machine, not for this test.
    assert 0.0 <= obj["max_overrun_s"] < SLACK
    assert 0.0 <= obj["max_stop_latency_s"] < SLACK


def test_bench_eval_times_both_evaluation_kernels():
    r = _run("-m", "benchmarks.cli", "eval", "--positions", "2000", "--repeat", "1", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["evals_per_s"] > 0 and obj["search_evals_per_s"] > 0
    assert obj["load_s_fresh_process"] > 0


def test_bench_midgame_searches_late_positions_to_the_end():
    r = _run("-m", "benchmarks.cli", "midgame", "--set", "late", "--to-end", "--positions", "2",
             "--repeat", "1", "--agent", "ab:threads=1,book=off,root_solve=0,selectivity=74",
             "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["set"] == "late" and obj["positions"] == obj["ends_reached"] == 2
    assert obj["nodes"] > 0 and 0 < obj["seconds_median"] <= obj["seconds_max"]


def test_bench_prints_the_latency_figures_the_tests_leave_to_it():
    """The timing claims taken out of the tests (tests/loadsafe.py) are these commands'
    figures: each must run and print them."""
    env = dict(ENV, OTHELLO_DATA=str(data_file("ffo40-59.txt").parent))

    def bench(*args: str) -> list[dict]:
        r = subprocess.run([sys.executable, "-m", "benchmarks.cli", *args, "--json"],
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
        assert r.returncode == 0, r.stderr
        return [json.loads(line) for line in r.stdout.splitlines()]

    (ping,) = bench("ping", "--pings", "2")
    assert ping["searching_max_s"] >= ping["searching_median_s"] > 0
    (cold,) = bench("timing", "--cold", "--moves", "1", "--move-time", "0.3",
                    "--agent", "uct:iterations=100000000")
    assert cold["ready_s"] > 0 and cold["first_s"] > 0.25  # the move time, 0.3 s, used
    adapter, interrupt = bench("cs303", "--goes", "2", "--time-out", "0.5")
    assert adapter["goes"] == 2 and adapter["max_s"] >= 0.3  # the cutoff, 0.3 s of 0.5
    assert interrupt["interrupts"] >= 1 and interrupt["max_interrupt_latency_s"] >= 0
    (bot,) = bench("botzone", "--runs", "1", "--time-limit", "1.0")
    assert bot["turn_max_s"] >= bot["budget_s"] == 0.8
    rows = bench("endgame", "--latency", "0.05", "--first", "2", "--table-bits", "16",
                 "--set", "ffo40-59")
    # (None where a solve finished first: a win-loss solve of FFO #40 can)
    assert any(r["stop_latency_s"] is not None and r["stop_latency_s"] >= 0 for r in rows)
    assert any(r["deadline_overrun_s"] is not None and r["deadline_overrun_s"] >= 0
               for r in rows)
    # FFO #40 by two threads sharing the solve
    (row, summary) = bench("endgame", "--threads", "2", "--first", "1", "--table-bits", "16",
                           "--set", "ffo40-59")
    assert row["correct"] and row["threads"] == 2 and summary["threads"] == 2


def test_othello_web_help_shows_its_address_and_only_the_options_that_apply(capsys):
    import pytest

    from engine_server.cli import web_main

    with pytest.raises(SystemExit) as e:
        web_main(["--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith("usage: othello-web ")
    assert "HOST:PORT" in out and "--agent" in out and "--config" in out
    options = out.split("options:")[1]
    for engine_only in ("--zmq", "--protocol", "--selfplay", "--gen-keys", "--web ",
                        "--move-overhead"):
        assert engine_only not in options


def test_version_flag(capsys):
    import pytest

    from engine_server import __version__
    from engine_server.cli import main, web_main

    for entry, prog in ((main, "othello-engine"), (web_main, "othello-web")):
        with pytest.raises(SystemExit) as e:
            entry(["--version"])
        assert e.value.code == 0 and capsys.readouterr().out == f"{prog} {__version__}\n"


def test_a_session_reports_the_package_version():
    from engine_server import __version__
    from engine_server.session import EngineOptions

    assert EngineOptions().version == __version__


def _help(entry, argv):
    import pytest

    with pytest.raises(SystemExit) as e:
        entry(argv)
    assert e.value.code == 0
    return e


def test_othello_botzone_help_lists_its_pack_command(capsys):
    from clients.botzone.main import main

    _help(main, ["--help"])
    out = capsys.readouterr().out
    assert "othello-botzone pack -o bot.zip" in out and "othello-botzone pack --help" in out
    _help(main, ["pack", "--help"])
    assert capsys.readouterr().out.startswith("usage: othello-botzone pack ")


def test_othello_match_help_lists_cluster_and_the_papers_experiments_are_othello_reproduce(
        capsys):
    from clients.match.cli import main
    from papers.reproduce import main as reproduce

    _help(main, ["--help"])
    out = capsys.readouterr().out
    assert "othello-reproduce" in out and "othello-match cluster" in out
    _help(reproduce, ["--help"])
    assert capsys.readouterr().out.startswith("usage: othello-reproduce ")
    assert main(["reproduce", "ucb1"]) == 2   # the old spelling says where it went
    assert "othello-reproduce ucb1" in capsys.readouterr().err


def test_tool_help_is_plain_text_without_rst_markup(capsys):
    from benchmarks.cli import main as bench
    from clients.match.cli import main as match
    from training.book import main as book
    from training.cli import main as train

    for entry, argv in ((book, ["--help"]), (book, ["build", "--help"]), (train, ["--help"]),
                        (train, ["az", "--help"]), (train, ["mpc", "--help"]),
                        (bench, ["--help"]), (match, ["cluster", "--help"])):
        _help(entry, argv)
        out = capsys.readouterr().out
        assert out.startswith("usage: ")
        for markup in ("``", ":func:", ":mod:", ":class:"):
            assert markup not in out, (argv, markup)


def test_the_move_overhead_flag_reaches_the_budget_and_a_bad_one_is_refused():
    r = _run("-m", "engine_server", "--move-overhead", "-1")
    assert r.returncode == 2 and "--move-overhead must be 0..10 seconds" in r.stderr
    p = subprocess.run([sys.executable, "-m", "engine_server", "--protocol", "gtp",
                        "--agent", "uct:iterations=100000000", "--move-overhead", "0.4",
                        "--log-level", "info", "--no-warmup"],
                       input="time_settings 0 1 1\ngenmove black\nquit\n", capture_output=True,
                       text=True, env=ENV, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    (budget,) = [json.loads(line)["budget"] for line in p.stderr.splitlines()
                 if line.startswith("{") and json.loads(line).get("event") == "search"]
    # 1 s a move less 0.4 s, counted from the command's arrival (the default keeps 0.15 s back)
    assert 0 < budget <= 0.6 + 1e-3, budget


def test_engine_help_states_the_budget_without_a_move_time(capsys):
    from engine_server.cli import main

    _help(main, ["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Without it, and without a clock from the GUI, each agent has its own budget: " \
           "best searches 8 plies deep" in out


def test_cs303_check_on_a_terminal_prints_each_line_once(tmp_path):
    """stdout and stderr on one terminal, as a student runs it."""
    import pty
    import select

    player = REPO / "clients" / "cs303" / "player.py"
    main_fd, sub_fd = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "clients.cs303.cli", "check", str(player),
                             "--time-out", "0.4", "--positions", "1"],
                            stdin=subprocess.DEVNULL, stdout=sub_fd, stderr=sub_fd, env=ENV,
                            cwd=REPO)
    os.close(sub_fd)
    chunks = []
    while True:
        ready, _, _ = select.select([main_fd], [], [], 300)
        assert ready, "no output from the checker for 300 s"
        try:
            data = os.read(main_fd, 65536)
        except OSError:   # the terminal closed: the checker has exited
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    # (whether every go kept to 0.4 s depends on the machine's load; the lines do not)
    assert proc.wait(60) in (0, 1)
    lines = [ln.rstrip() for ln in b"".join(chunks).decode().splitlines() if ln.strip()]
    checks = [ln.strip() for ln in lines if ln.lstrip().startswith("[")]
    assert len(checks) >= 5 and "forced pass" in " ".join(checks)
    assert len(checks) == len(set(checks)), "a check was printed twice"
    assert lines[0] == f"CS303 usability check of {player}"
    summaries = [ln for ln in lines if ln.startswith(("OK: ", "FAILED: "))]
    assert summaries == [lines[-1]]


def test_precompile_is_quiet_on_stderr():
    """`make setup` runs it on every new install: on stderr only its progress while anything
    compiles, nothing to worry a user (puct has no shipped reversed network, which used to print
    a warning there), and nothing at all once the cache holds the kernels."""
    progress = re.compile(r"othello-engine: (compiling the numba kernels into .*|compiling "
                          r"\[\d+/\d+\] \S+ \(.*\)|still compiling \[\d+/\d+\] .*|compiled \d+ "
                          r"functions in .*)")
    for run in ("cold or warm", "warm"):
        r = subprocess.run([sys.executable, "-m", "engine_server", "--precompile"],
                           capture_output=True, text=True, env=ENV, cwd=REPO, timeout=600)
        assert r.returncode == 0 and r.stdout == "", r.stderr
        if run == "warm":
            assert r.stderr == ""
        else:
            assert all(progress.fullmatch(line) for line in r.stderr.splitlines()), r.stderr


def test_each_command_names_itself_and_lists_presets_for_an_unknown_agent(capsys, tmp_path):
    from clients.cs303.cli import main as cs303_main
    from engine_server.cli import main, web_main

    for entry, prog in ((main, "othello-engine"), (web_main, "othello-web")):
        assert entry(["--agent", "nosuch"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{prog}: --agent: unknown agent 'nosuch'"), err
        assert "presets: beginner, easy" in err and "agent families: random" in err
        assert "refused" not in err
    assert cs303_main(["export", "--agent", "nosuch", "-o", str(tmp_path / "p.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("othello-cs303: --agent: unknown agent 'nosuch'") and "medium" in err
    assert not (tmp_path / "p.py").exists()
    # a preset of the exportable family, in any letter case
    assert cs303_main(["export", "--agent", "Medium", "-o", str(tmp_path / "m.py")]) == 0
    assert "depth cap 6" in capsys.readouterr().out


def test_an_agent_name_in_another_letter_case_starts_the_engine():
    r = subprocess.run([sys.executable, "-m", "engine_server", "--agent", "Medium",
                        "--no-warmup"], input="othello-agent\nquit\n", capture_output=True,
                       text=True, env=ENV, cwd=REPO, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("= ab:depth=6,threads=1\n"), r.stderr


def test_list_agents_says_where_names_are_used():
    r = _run("-m", "engine_server", "--list-agents")
    head = r.stdout.split("presets (")[0]
    assert "letter case does not matter" in head
    for use in ("--agent NAME", "othello-agent NAME", "NBoard", "set depth N", "web page",
                "agent:NAME", "othello-cs303 export"):
        assert use in head, use
    # the GTP command is named as one, not as a shell command beside --agent
    assert "othello-agent NAME, --agent NAME" not in r.stdout


def test_bench_startup_times_both_typings_of_the_recursive_kernels():
    # on the suite's kernel cache, already filled: the bench's own default, a new empty cache
    # per run, compiles for a minute and is left to the command (docs/engine.md, "First start")
    from engine_server import kernel_cache

    r = _run("-m", "benchmarks.cli", "startup", "--runs", "1", "--typing", "both",
             "--agent", "best:threads=1", "--cache-base", str(kernel_cache.base_dir()), "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["empty_cache"] is False and obj["runs"] == 1 and obj["opening"]
    for kind in ("ours", "numba"):
        assert obj[f"{kind}_first_start_move_median_s"] >= \
            obj[f"{kind}_first_start_ready_median_s"] > 0
        assert obj[f"{kind}_later_start_move_median_s"] > 0
    assert obj["first_start_ratio_ours_to_numba"] > 0

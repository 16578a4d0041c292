"""The import contract: layers import downward only (docs/extending.md, "Layers").

Every ``import`` in the project's packages, at module level or inside a function, is resolved to
the layer it names; a module may import its own layer or one below it, never one above.  The
checker is tested on hand-made modules too, so the contract cannot pass by checking nothing.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first.  A module belongs to the layer of its longest matching prefix.
LAYERS: list[tuple[str, ...]] = [
    # The wire formats sit beside the rules core; they import nothing of the project
    # (test_the_wire_formats_import_nothing_of_the_engine_or_its_clients).
    ("protocol", "engine_server.log", "engine_server.kernel_cache",
     "engine_server.kernel_progress", "engine_server.kernel_recursion",
     "engine_server.kernel_locator", "engine_server.game"),
    ("engine_server.eval",),
    ("engine_server.search",),
    # the papers' agents are the engine's (engine_server.agents.papers); the preset table
    # sits apart, importing nothing, so that help texts list it cheaply
    ("engine_server.agents", "engine_server.presets"),
    ("engine_server.session",),
    ("engine_server.commands",),
    ("engine_server.serve", "engine_server.cli", "engine_server.config",
     "engine_server.__main__"),
    # the packages above the engine, each its own layer, so that packages point one way:
    # the papers' experiments run matches through the clients, the training runs the
    # AlphaZero loop of the papers, and the benchmarks measure everything
    ("clients",),
    ("papers",),
    ("training",),
    ("benchmarks",),
]
PACKAGES = ("protocol", "engine_server", "clients", "training", "benchmarks", "papers")
# The package root holds the version string and sets up the kernel cache: every layer may
# import it.
SHARED = ("engine_server",)


def layer_of(module: str) -> int | None:
    if module in SHARED:
        return 0
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    return best


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source``; ``from X import y`` yields
    ``X.y`` as well as ``X``, because ``y`` may be a submodule of another layer."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            found.extend((node.lineno, f"{target}.{a.name}") for a in node.names)
    return found


def violations(root: pathlib.Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    out = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            module = module_name(path, root)
            own = layer_of(module)
            if own is None:
                out.append(f"{module}: in no layer")
                continue
            reported = set()
            for line, target in imported_modules(path.read_text(), module,
                                                 path.name == "__init__.py"):
                theirs = layer_of(target)
                if target not in SHARED and theirs is not None and theirs > own \
                        and line not in reported:
                    reported.add(line)
                    out.append(f"{path.relative_to(root)}:{line}: {module} (layer {own}) "
                               f"imports {target} (layer {theirs})")
    return out


def import_graph(root: pathlib.Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the project modules it imports, function-level imports included.
    ``from pkg import sub`` is an edge to ``pkg.sub`` alone when ``sub`` is a module (running the
    package's ``__init__`` on the way is not a dependency on its contents)."""
    paths = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                subs = [f"{source}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in paths]
                if len(targets) < len(subs):
                    targets.append(source)
            else:
                continue
            for t in targets:
                while t and t not in paths:  # import a.b.c where only a.b is ours: a.b
                    t = t.rpartition(".")[0]
                if t and t != module:
                    edges.add(t)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_between_modules_even_inside_functions():
    assert cycles(import_graph(ROOT)) == []


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    (tmp_path / "clients" / "sub").mkdir(parents=True)
    (tmp_path / "clients" / "__init__.py").write_text("")
    (tmp_path / "clients" / "sub" / "__init__.py").write_text("")
    (tmp_path / "clients" / "cli.py").write_text("def main():\n    from .sub import web\n")
    (tmp_path / "clients" / "sub" / "web.py").write_text(
        "def main():\n    from clients.cli import main as m\n    return m()\n")
    (tmp_path / "clients" / "ok.py").write_text("from . import sub\nfrom .sub import web\n")
    assert cycles(import_graph(tmp_path, ("clients",))) == [["clients.cli", "clients.sub.web"]]


def test_the_project_imports_downward_only():
    assert violations(ROOT) == []


def test_no_package_imports_the_tests():
    """The tests use the packages, never the other way round: a tool that needs something of
    the tests' gets it from the package it belongs to."""
    found = [f"{path.relative_to(ROOT)}:{line}: {target}"
             for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py"))
             for line, target in imported_modules(path.read_text(), module_name(path, ROOT),
                                                  path.name == "__init__.py")
             if target == "tests" or target.startswith("tests.")]
    assert found == []


def test_every_module_is_in_a_layer():
    assert not [v for v in violations(ROOT) if "in no layer" in v]


@pytest.mark.parametrize("source", [
    "from engine_server.session import Session\n",
    "import engine_server.commands.gtp\n",
    "def f():\n    from ..agents import make_agent\n",
    "from engine_server import serve\n",
])
def test_a_lower_layer_importing_a_higher_one_is_reported(tmp_path, source):
    (tmp_path / "engine_server" / "search").mkdir(parents=True)
    (tmp_path / "engine_server" / "__init__.py").write_text("")
    (tmp_path / "engine_server" / "search" / "__init__.py").write_text("")
    (tmp_path / "engine_server" / "search" / "bad.py").write_text(source)
    found = violations(tmp_path, ("engine_server",))
    assert len(found) == 1 and "engine_server.search.bad (layer 2)" in found[0]


def test_importing_downward_or_sideways_is_allowed(tmp_path):
    (tmp_path / "engine_server" / "commands").mkdir(parents=True)
    (tmp_path / "engine_server" / "__init__.py").write_text("")
    (tmp_path / "engine_server" / "commands" / "__init__.py").write_text("")
    (tmp_path / "engine_server" / "commands" / "ok.py").write_text(
        "from engine_server import __version__\nfrom engine_server.session import Session\n"
        "from . import common\nfrom ..game import ggf\n")
    assert violations(tmp_path, ("engine_server",)) == []


# What a wire-format module may import: the standard library, numpy (the CS303 board is an
# array) and the other formats.  No numba, no sockets, nothing of the engine or its clients.
WIRE_FORMAT_IMPORTS = ("protocol", "numpy")


def foreign_imports(root: pathlib.Path) -> list[str]:
    import sys

    out: list[str] = []
    for path in sorted((root / "protocol").rglob("*.py")):
        module = module_name(path, root)
        for line, target in imported_modules(path.read_text(), module,
                                             path.name == "__init__.py"):
            top = target.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            where = f"{path.relative_to(root)}:{line}:"
            if top not in WIRE_FORMAT_IMPORTS and not (out and out[-1].startswith(where)):
                out.append(f"{where} imports {target}")
    return out


def test_the_wire_formats_import_nothing_of_the_engine_or_its_clients():
    assert foreign_imports(ROOT) == []


@pytest.mark.parametrize("source", [
    "from engine_server.game import Position\n",
    "def f():\n    import numba\n",
    "import zmq\n",
    "from clients import engine_client\n",
])
def test_a_wire_format_importing_the_engine_or_a_library_is_reported(tmp_path, source):
    (tmp_path / "protocol").mkdir()
    (tmp_path / "protocol" / "__init__.py").write_text("")
    (tmp_path / "protocol" / "ok.py").write_text(
        "import re\nimport numpy as np\nfrom . import gtp\n")
    (tmp_path / "protocol" / "bad.py").write_text(source)
    found = foreign_imports(tmp_path)
    assert len(found) == 1 and found[0].startswith("protocol/bad.py")


@pytest.mark.parametrize("first", ["engine_server.search.alphabeta",
                                   "engine_server.search.alphabeta.pvs",
                                   "engine_server.search.endgame",
                                   "engine_server.search.endgame.solver"])
def test_the_two_searches_import_in_either_order(first):
    """The midgame search's kernels use the exact solver's small-node kernels, and the solver
    asks the midgame search for its first guess: whichever a process imports first, both load
    (``endgame/guess.py`` imports the midgame search when it first runs it, not at the top)."""
    code = (f"import importlib; importlib.import_module({first!r}); "
            "from engine_server.search.endgame import Estimator, RootSolver, Solver, solve; "
            "from engine_server.search.alphabeta import AlphaBeta, search_root")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)

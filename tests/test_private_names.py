"""No private reach-ins: outside the tests, no module uses another module's private name.

A name with a leading underscore belongs to the module that defines it; what another module needs
is that module's public name.  Every ``.py`` file outside ``tests/`` is parsed, and two things
are reported: ``from x import _y`` (``from __future__`` and dunder names such as ``__version__``
aside), and ``m._y`` where ``m`` is a module the file imported (``import x``, ``import x as m``,
or ``from package import module`` when ``module`` is one of the project's files).  Tests may
still import private helpers to test them.  The checker is tested on hand-made modules, so it
cannot pass by checking nothing.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Not the project's code: the tests (which may reach in), and what tools put into the clone.
SKIPPED = ("tests", "build", "docs")
# The standard library's names that have no public spelling: os._exit is documented (leaving a
# forked child at once), and argparse's add_subparsers() and add_argument_group() return these
# classes, which an annotation can only name so.
ALLOWED = {"os._exit", "argparse._SubParsersAction", "argparse._ArgumentGroup"}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def source_files(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in root.rglob("*.py")
                  if not any(part.startswith(".") or part.endswith(".egg-info")
                             for part in p.relative_to(root).parts)
                  and p.relative_to(root).parts[0] not in SKIPPED)


def _absolute(node: ast.ImportFrom, path: pathlib.Path, root: pathlib.Path) -> str:
    if not node.level:
        return node.module or ""
    parts = list(path.relative_to(root).with_suffix("").parts)
    base = parts[:-1]  # the package holding this file (its own for an __init__)
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(name: str, root: pathlib.Path) -> bool:
    rel = pathlib.Path(*name.split("."))
    return (root / rel.with_suffix(".py")).is_file() or (root / rel / "__init__.py").is_file()


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ``["a", "b", "c"]``; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def reach_ins(path: pathlib.Path, root: pathlib.Path) -> list[str]:
    """Every use in ``path`` of another module's private name, as ``file:line: what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(root)
    found: list[str] = []
    modules: set[str] = set()  # the names this file binds to modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, path, root)
            if node.module == "__future__":
                continue
            for a in node.names:
                if is_private(a.name):
                    found.append(f"{where}:{node.lineno}: from {source} import {a.name}")
                elif _is_module(f"{source}.{a.name}", root):
                    modules.add(a.asname or a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain = _dotted(node)
            if chain is not None and chain[0] in modules and ".".join(chain) not in ALLOWED \
                    and not any(is_private(p) for p in chain[:-1]):
                found.append(f"{where}:{node.lineno}: {'.'.join(chain)}")
    return found


def violations(root: pathlib.Path) -> list[str]:
    return [v for path in source_files(root) for v in reach_ins(path, root)]


def test_no_module_uses_another_modules_private_name():
    assert violations(ROOT) == []


def test_the_checker_reads_the_project():
    files = source_files(ROOT)
    assert ROOT / "engine_server" / "search" / "endgame" / "deep.py" in files
    assert not any(p.relative_to(ROOT).parts[0] == "tests" for p in files)


def _tree(tmp_path: pathlib.Path, bad: str) -> pathlib.Path:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for init in ("pkg/__init__.py", "pkg/sub/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "pkg" / "sub" / "kernels.py").write_text("def _helper():\n    pass\n")
    (tmp_path / "pkg" / "bad.py").write_text(bad)
    # the tests may reach in
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from pkg.sub.kernels import _helper\n")
    return tmp_path


@pytest.mark.parametrize("bad", [
    "from pkg.sub.kernels import _helper\n",
    "from pkg.sub.kernels import helper, _helper as h\n",
    "from pkg.sub.kernels import (\n    helper,\n    _helper,\n)\n",
    "def f():\n    from .sub.kernels import _helper\n",
    "from .sub import _kernels\n",
    "import pkg.sub.kernels\npkg.sub.kernels._helper()\n",
    "import pkg.sub.kernels as k\nk._helper()\n",
    "from pkg.sub import kernels\nx = kernels._helper\n",
    "from .sub import kernels as K\ndef f():\n    return K._helper()\n",
    "import numpy as np\nnp._core\n",
])
def test_a_private_reach_in_is_reported(tmp_path, bad):
    found = violations(_tree(tmp_path, bad))
    assert len(found) == 1 and found[0].startswith("pkg/bad.py:"), found


@pytest.mark.parametrize("ok", [
    "from __future__ import annotations\n",
    "from pkg import __version__\n",
    "from pkg.sub.kernels import helper\nhelper()\n",
    "class A:\n    def _own(self):\n        return self._x\n",
    "def _mine():\n    pass\n_mine()\n",
    "from pkg.sub import kernels\nkernels.__name__\n",
    "import os\nos._exit(0)\n",
])
def test_public_names_and_own_private_names_are_allowed(tmp_path, ok):
    assert violations(_tree(tmp_path, ok)) == []

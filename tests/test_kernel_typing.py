"""The Python code of the kernel modules is typed, as mypy's strict settings want.

pyproject.toml relaxes mypy's disallow_untyped_defs for the search modules that hold numba
kernels, because the kernels are left unannotated (numba infers their types).  mypy applies the
relaxation to whole modules, so this test holds the rest of those modules to the rule: every
function that is not a kernel (``@njit``, ``@intrinsic``, ...) or defined inside one annotates
its parameters and its return.  The checker is tried on hand-made code too.
"""

from __future__ import annotations

import ast
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNEL_DECORATORS = {"njit", "jit", "intrinsic", "vectorize", "guvectorize", "cfunc",
                     "overload", "overload_method", "register_jitable"}


def relaxed_modules() -> list[str]:
    """The project's modules for which pyproject.toml turns disallow_untyped_defs off."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found: list[str] = []
    for override in config["tool"]["mypy"].get("overrides", []):
        if override.get("disallow_untyped_defs") is False:
            modules = override["module"]
            found += [modules] if isinstance(modules, str) else modules
    return [m for m in found if not m.startswith("tests")]


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _annotated(f: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> bool:
    a = f.args
    params = a.posonlyargs + a.args
    if method and params and not any(_decorator_name(d) == "staticmethod"
                                     for d in f.decorator_list):
        params = params[1:]  # self / cls, as mypy
    params += a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p is not None]
    return all(p.annotation is not None for p in params) and (
        f.returns is not None or f.name == "__init__")


def untyped_functions(source: str) -> list[tuple[int, str]]:
    """(line, name) of every function of ``source`` that is neither a kernel, nor inside one,
    nor fully annotated."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_kernel: bool, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kernel = in_kernel or any(_decorator_name(d) in KERNEL_DECORATORS
                                          for d in child.decorator_list)
                if not kernel and not _annotated(child, in_class):
                    found.append((child.lineno, child.name))
                visit(child, kernel, False)
            else:
                visit(child, in_kernel, in_class or isinstance(child, ast.ClassDef))
    visit(ast.parse(source), False, False)
    return found


def test_the_checker_finds_untyped_python_and_spares_kernels():
    source = '''
from numba import njit
from numba.extending import intrinsic

@njit(cache=True)
def kernel(P, O):
    def inner(x):
        return x
    return inner(P)

@intrinsic
def popcount(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return None, codegen

def typed(a: int, *rest: int, key: str = "", **more: float) -> int:
    def helper(b: int) -> int:
        return b
    return helper(a)

def untyped(a, b: int) -> int:
    return a

def no_return(a: int):
    return a

class Driver:
    def __init__(self, n: int):
        self.n = n

    def method(self, k: int) -> int:
        return k

    def loose(self, k):
        return k

    @staticmethod
    def static(k) -> int:
        return k
'''
    names = [name for _, name in untyped_functions(source)]
    assert names == ["untyped", "no_return", "loose", "static"]


def test_python_code_in_kernel_modules_is_annotated():
    modules = relaxed_modules()
    assert "engine_server.search.mcts.nodes" in modules  # the override is where this test looks
    problems = []
    for module in modules:
        path = ROOT / (module.replace(".", "/") + ".py")
        for line, name in untyped_functions(path.read_text()):
            problems.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not problems, "unannotated Python functions in kernel modules:\n" + "\n".join(problems)

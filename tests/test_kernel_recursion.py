"""Recursive kernels with a declared signature are typed without re-typing their bodies at each
recursive call, and compute what numba's own typing computes (engine_server/kernel_recursion.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from numba import float64, int64, njit
from numba.core import typeinfer

import engine_server.game  # noqa: F401  (installs the typing before any kernel compiles)
from engine_server import kernel_recursion


@pytest.fixture
def partial_typings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions whose type inference numba clones to type a recursive call."""
    seen: list[str] = []
    copy = typeinfer.TypeInferer.copy

    def counting_copy(self: typeinfer.TypeInferer,
                      skip_recursion: bool = False) -> typeinfer.TypeInferer:
        if skip_recursion:
            seen.append(self.func_id.func_name)
        return copy(self, skip_recursion=skip_recursion)

    monkeypatch.setattr(typeinfer.TypeInferer, "copy", counting_copy)
    return seen


def test_the_engine_installs_it() -> None:
    assert kernel_recursion.install()
    assert hasattr(typeinfer.TypeInferer.return_types_from_partial, "numba_own")


def test_a_declared_signature_types_its_recursive_calls_at_once(partial_typings: list[str]) -> None:
    @njit(int64(int64, int64))
    def declared_gcd(a, b):
        if b == 0:
            return a
        return declared_gcd(b, a % b)

    assert declared_gcd(1071, 462) == 21
    assert partial_typings == []


def test_without_a_declared_signature_numba_types_it_as_before(partial_typings: list[str]) -> None:
    @njit
    def inferred_gcd(a, b):
        if b == 0:
            return a
        return inferred_gcd(b, a % b)

    assert inferred_gcd(1071, 462) == 21
    assert "inferred_gcd" in partial_typings


def test_the_declared_return_type_wins_over_the_base_case_literal() -> None:
    # numba's partial typing would read int64 from ``return 1``; the declaration says float64
    @njit(float64(int64))
    def halves(n):
        if n <= 1:
            return 1
        return 0.5 * halves(n // 2) + halves(n - n // 2)

    def reference(n: int) -> float:
        return 1.0 if n <= 1 else 0.5 * reference(n // 2) + reference(n - n // 2)

    for n in (1, 2, 7, 100):
        assert halves(n) == pytest.approx(reference(n))
    assert halves.nopython_signatures[0].return_type == float64


def test_it_can_be_turned_off() -> None:
    env = dict(os.environ, OTHELLO_RECURSION_TYPING="numba")
    code = ("import engine_server.game\n"
            "from engine_server import kernel_recursion\n"
            "from numba.core import typeinfer\n"
            "print(kernel_recursion.install(), "
            "hasattr(typeinfer.TypeInferer.return_types_from_partial, 'numba_own'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]

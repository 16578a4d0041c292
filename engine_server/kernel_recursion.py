"""Faster typing of recursive kernels that declare their signature.

The searches are recursive kernels with an explicit signature (``_pvs``, the solver's ``_deep``
and ``shallow``) whose bodies are large once their helpers are inlined.  numba types a call of a
kernel to itself by cloning the caller's whole type inference and running it again without the
recursive calls, to learn what the function returns (``TypeInferer.return_types_from_partial``);
it does so at every recursive call site, again on each pass of the propagation, even when the
signature already states the return type.  Most of a first start's compile time went there:
with this module the first move of ``best`` on an empty kernel cache comes in 0.64 of the time
(``othello-bench startup --typing both``; ``docs/engine.md``, "First start").

When every return of the function being typed has a type locked by its declared signature, that
type is the answer the clone would have to agree with (numba casts each return to it), so it is
returned at once; everything else (signatures numba infers, functions that declare none) takes
numba's own path.  The machine code is the same either way (the assembly of ``_pvs``, ``_deep``
and ``shallow`` compared byte for byte, numba 0.68).  ``OTHELLO_RECURSION_TYPING=numba`` turns
it off; numba versions without the method are left as they are.
"""

from __future__ import annotations

import os
from typing import Any

_installed = False


def declared_return_type(infer: Any) -> Any | None:
    """The return type a declared signature locked on every return of the function that
    ``infer`` types, or None when there is none or the returns disagree."""
    from numba.core import types

    found = set()
    for var in infer._get_return_vars():
        typevar = infer.typevars.get(var.name)
        if typevar is None or not typevar.locked:
            return None
        found.add(types.unliteral(typevar.getone()))
    return found.pop() if len(found) == 1 else None


def install() -> bool:
    """Patch numba's recursive-call typing once per process; return whether it is patched."""
    global _installed
    if _installed:
        return True
    if os.environ.get("OTHELLO_RECURSION_TYPING", "").strip().lower() == "numba":
        return False
    from numba.core import typeinfer

    cls = typeinfer.TypeInferer
    numba_own = getattr(cls, "return_types_from_partial", None)
    if numba_own is None or not hasattr(cls, "_get_return_vars"):
        return False

    def return_types_from_partial(self: Any) -> Any:
        declared = declared_return_type(self)
        return declared if declared is not None else numba_own(self)

    return_types_from_partial.numba_own = numba_own  # type: ignore[attr-defined]
    cls.return_types_from_partial = return_types_from_partial
    _installed = True
    return True


__all__ = ["declared_return_type", "install"]

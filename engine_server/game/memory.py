"""What the search kernels do about memory: prefetching the table's lines, and no reference
counting of the arrays a recursive kernel passes down.

* A table probe that misses the cache waits on memory (about 100 ns on the development VM), and
  the solver and the alpha-beta search probe at almost every node: :func:`prefetch` asks for the
  line ahead of the probe, so the wait overlaps with the work done before it (move generation,
  the other children's keys).
* A table's bucket is read whole at each probe: :func:`zeros_on_lines` allocates a table so that
  its first byte starts a cache line, and a bucket no larger than a line then never straddles two.
* numba counts references to every array argument of a compiled function: each call of a
  recursive kernel with five arrays made ten atomic updates of their counts (a quarter of the
  midgame search's perf samples, and it ran measurably faster without them; the measurements:
  ``docs/notes/2026-11-endgame-tuning.md``, "Memory").  Kernels that allocate
  nothing and keep no array beyond the call are compiled with ``**NO_REFCOUNT`` (numba's
  ``_nrt=False``): the arrays belong to the Python caller for the whole search, so the counts
  are not needed.  A kernel that tried to allocate under it would fail to compile, not misbehave.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

NO_REFCOUNT: dict[str, Any] = {"_nrt": False}


def zeros_on_lines(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Zeros of ``shape`` whose first byte starts a 64-byte cache line."""
    n = int(np.prod(shape))
    size = np.dtype(dtype).itemsize
    raw: np.ndarray = np.zeros(n + 64 // size, dtype=dtype)
    skip = (-raw.ctypes.data % 64) // size
    return raw[skip:skip + n].reshape(shape)


if TYPE_CHECKING:
    def prefetch(arr: np.ndarray, i: int) -> None: ...
else:
    @intrinsic
    def prefetch(typingctx, arr, i):
        """Start loading row ``i`` of a 1-D or 2-D array into the cache (LLVM ``prefetch``:
        read, high locality); no effect on any value."""
        if not (isinstance(arr, types.Array) and arr.ndim in (1, 2)
                and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            aty = signature.args[0]
            a = context.make_array(aty)(context, builder, args[0])
            row = context.cast(builder, args[1], signature.args[1], types.intp)
            index = [row] + [context.get_constant(types.intp, 0)] * (aty.ndim - 1)
            ptr = cgutils.get_item_pointer(context, builder, aty, a, index)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
            builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.none(arr, i), codegen

"""Row masks the decode layer's kernels share: which rows of a tile are still running.

With STOP, a row whose ``finished`` flag is set is neither loaded nor stored, and a tile with no row
left returns before streaming its weights.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def unfinished(ok, finished_ptr, index):
    """``ok`` without the rows whose ``finished`` flag (at ``index``) is set."""
    done = tl.load(finished_ptr + index, mask=ok, other=1)
    return ok & (done == 0)


@triton.jit
def none_left(ok):
    """True when no row of the tile is left to do."""
    return tl.max(ok.to(tl.int32), axis=0) == 0

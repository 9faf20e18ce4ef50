"""regsurvey: register and spill surveys of Triton kernels, for every key, target and commit.

The public keys API used by ``keys/*.py`` files::

    import regsurvey as rs
    matrix = rs.Matrix(targets=["gfx950", "sm90"], tp=[4, 8], width=[2, 4, 8])

    @matrix.kind(axes=["tp", "width"])
    def router(tp, width):
        x = rs.tensor((width, 7168), "bf16")
        ...
"""

from .keys.matrix import Kind, Matrix
from .keys.session import launch, name, names, pin_config, skip, target
from .model.keys import Key
from .model.targets import TARGETS, Target, get_target
from .model.version import __version__


def tensor(shape, dtype="bf16", *, stride=None, offset=0, storage_numel=None):  # type: ignore[no-untyped-def]
    """A data-less 'meta' tensor a launch specializes on exactly as on a GPU (see meta_tensor.tensor).

    Imported lazily: torch takes a second to import and only kind bodies need it.
    """
    from .keys.meta_tensor import tensor as _tensor

    return _tensor(shape, dtype, stride=stride, offset=offset, storage_numel=storage_numel)


def device():  # type: ignore[no-untyped-def]
    """The torch device a kind body should allocate extra buffers on (``meta`` while surveyed)."""
    from .keys.meta_tensor import device as _device

    return _device()


__all__ = [
    "Key", "Kind", "Matrix", "device", "TARGETS", "Target", "get_target", "launch", "name", "names", "pin_config",
    "skip", "target", "tensor", "__version__",
]

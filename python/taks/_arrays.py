"""Arrays in: whatever numpy can read without a copy (a numpy array, a CPU tensor, any
object with the DLPack protocol) becomes a C-contiguous array of the dtype the core
reads. float32 C-contiguous input is passed on as it is; anything else is converted once
here. Wrong kinds of values are refused with TypeError, wrong shapes with ValueError."""

from __future__ import annotations

from typing import Any

import numpy as np


def _array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError, ValueError) as e:
            raise TypeError(
                f"{name}: numpy cannot read this {type(x).__name__} in place ({e}); "
                "hand a CPU array (for a torch tensor: .detach().cpu())"
            ) from None
    return np.asarray(x)


def float32(x: Any, name: str, ndim: int) -> np.ndarray:
    """``x`` as a C-contiguous float32 array of ``ndim`` dimensions."""
    a = _array(x, name)
    if a.dtype.kind != "f":
        raise TypeError(f"{name} must hold floating-point numbers, not {a.dtype}")
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), not shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def labels(x: Any, name: str = "labels") -> np.ndarray:
    """``x`` as a 1-D int64 array of class indices."""
    a = _array(x, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer class indices, not {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must have 1 dimension, not shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)

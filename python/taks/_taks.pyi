# Types of the Rust extension module (python/src/); the package's public API is in
# __init__.py and typed inline.
from collections.abc import Callable
from os import PathLike
from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

class Selection:
    def __init__(
        self,
        method: str,
        n: int,
        k: int,
        eta: float,
        seed: int,
        labels: npt.NDArray[np.int64] | None = None,
    ) -> None: ...
    @property
    def n(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def eta(self) -> float: ...
    def current(self) -> npt.NDArray[np.int64]: ...
    def cumulative(self) -> npt.NDArray[np.float32]: ...
    def step_risks(self, risks: npt.NDArray[np.float32]) -> dict[str, Any]: ...
    def step_logits(self, logits: npt.NDArray[np.float32]) -> dict[str, Any]: ...
    def state(self) -> tuple[int, list[float], list[int], float]: ...
    def restore(self, epoch: int, cumulative: list[float], current: list[int], total_selection_risk: float) -> None: ...

def k_of(n: int, k_ratio: float) -> int: ...
def eta_of(k: int, epochs: int, eta_ratio: float) -> float: ...
def audit_features(
    features: npt.NDArray[np.float32],
    labels: npt.NDArray[np.int64],
    classes: list[str] | None,
    options: dict[str, Any],
    progress: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]: ...
def audit_path(
    path: str | PathLike[str],
    labels: str | None,
    label_column: str,
    model: str | None,
    image_size: tuple[int, int] | None,
    budget: float,
    cache_dir: str | None,
    options: dict[str, Any],
    progress: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]: ...

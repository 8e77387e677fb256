"""TAkS's selection for a training loop that is not taks's.

Each epoch the loop trains on the current k-set, scores every one of the n samples, and
hands the scores to :meth:`Selector.step`: the next k-set is the k smallest of
``L_t + eta r_t`` (Follow-the-Perturbed-Leader over the cumulative noise-risk ``L_t``,
``r_t`` standard normal drawn from the seed and the epoch), exactly the sets a
``taks train --method taks --device cpu`` run with the same seed, k and eta chooses from
the same risks. ``method="naive"`` (eta = 0) and ``method="greedy"`` (the latest risk
alone) are the paper's two ablations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _arrays
from ._taks import Selection, eta_of, k_of

_STATE_VERSION = 1


@dataclass(frozen=True)
class Step:
    """What one epoch's scores did: the next k-set and the regret columns that
    ``taks train`` writes to metrics.csv."""

    #: The epoch just scored (1-based).
    epoch: int
    #: The next k-set, ascending sample indices.
    indices: np.ndarray
    #: The risk of the set that was trained on, d_t . theta_t.
    selection_risk: float
    #: The sum of ``selection_risk`` over the epochs so far.
    total_selection_risk: float
    #: Over the epochs so far: the risk of the best fixed k-set in hindsight (the k
    #: smallest of L_t).
    total_hindsight_risk: float
    #: ``total_selection_risk - total_hindsight_risk``.
    regret: float
    #: The bound on FPL's expected regret at this eta (None for eta = 0 and greedy).
    regret_bound: float | None
    #: The formula the paper prints, beside ``regret_bound`` (not a bound on runs).
    paper_bound: float | None


class Selector:
    """TAkS's k-set selection over ``n`` samples.

    Give ``labels`` (one class index per sample) to score epochs by logits, or ``n`` to
    score them by noise-risks. The set size is ``k``, or ``floor(n * k_ratio)`` as
    ``taks train --k-ratio`` takes it. The perturbation scale is ``eta``, or
    ``eta_ratio * sqrt(k * epochs)`` as ``--eta-ratio`` takes it (``epochs``: the
    epochs the loop will run). ``seed`` draws the first set and every perturbation.
    """

    def __init__(
        self,
        labels: Any = None,
        *,
        n: int | None = None,
        k: int | None = None,
        k_ratio: float | None = None,
        eta: float | None = None,
        eta_ratio: float | None = None,
        epochs: int | None = None,
        method: str = "taks",
        seed: int = 0,
    ) -> None:
        label_array = None if labels is None else _arrays.labels(labels)
        if label_array is not None:
            if n is not None and n != len(label_array):
                raise ValueError(f"n = {n}, but {len(label_array)} labels")
            n = len(label_array)
        if n is None:
            raise ValueError("give the labels, or n when epochs are scored by risks")
        if (k is None) == (k_ratio is None):
            raise ValueError("give k or k_ratio (one of them)")
        if k is None:
            assert k_ratio is not None
            if not 0.0 < k_ratio <= 1.0:
                raise ValueError(f"k_ratio {k_ratio} must be in (0, 1]")
            k = k_of(n, k_ratio)
        if method == "taks":
            if (eta is None) == (eta_ratio is None):
                raise ValueError("give eta, or eta_ratio and epochs (one of them)")
            if eta is None:
                assert eta_ratio is not None
                if epochs is None or epochs < 1:
                    raise ValueError("eta_ratio needs the number of epochs (at least 1)")
                eta = eta_of(k, epochs, eta_ratio)
        elif eta not in (None, 0, 0.0) or eta_ratio not in (None, 0, 0.0):
            raise ValueError(f"method '{method}' has no perturbation: leave eta out")
        if seed < 0 or seed >= 2**64:
            raise ValueError(f"seed {seed} must be in [0, 2**64)")
        self._seed = int(seed)
        self._labels = label_array
        self._selection = Selection(method, int(n), int(k), float(eta or 0.0), self._seed, label_array)

    # What it is.
    @property
    def n(self) -> int:
        return self._selection.n

    @property
    def k(self) -> int:
        return self._selection.k

    @property
    def eta(self) -> float:
        return self._selection.eta

    @property
    def method(self) -> str:
        return self._selection.method

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def epoch(self) -> int:
        """Epochs scored so far."""
        return self._selection.epoch

    # Where it is.
    @property
    def indices(self) -> np.ndarray:
        """The k samples the next epoch trains on, ascending (int64)."""
        return self._selection.current()

    @property
    def mask(self) -> np.ndarray:
        """The same set as a boolean mask over the n samples."""
        mask = np.zeros(self.n, dtype=bool)
        mask[self.indices] = True
        return mask

    @property
    def cumulative_risk(self) -> np.ndarray:
        """L_t, every sample's noise-risk summed over the epochs so far (float32)."""
        return self._selection.cumulative()

    def step(self, logits: Any = None, *, risks: Any = None) -> Step:
        """Score an epoch and choose the next k-set.

        ``logits``: ``[n, classes]`` scores of every sample (the selector measures each
        one's noise-risk against its label, paper Eq. 6); or ``risks``: ``[n]``
        noise-risks in [0, 1]. float32 C-contiguous arrays are read in place; other
        floating-point arrays, CPU tensors and DLPack objects are converted. Refused
        (nothing changes): the wrong shape, NaN or infinity, a label outside the logits'
        classes.
        """
        if (logits is None) == (risks is None):
            raise ValueError("give logits or risks (one of them)")
        if logits is not None:
            if self._labels is None:
                raise ValueError(
                    "logits need the labels they are scored against: build the Selector with labels, or step with risks="
                )
            report = self._selection.step_logits(_arrays.float32(logits, "logits", 2))
        else:
            report = self._selection.step_risks(_arrays.float32(risks, "risks", 1))
        return Step(indices=self.indices, **report)

    # State, for torch.save / torch.load(weights_only=True) and pickle: plain values only.
    def state_dict(self) -> dict[str, Any]:
        epoch, cumulative, current, total = self._selection.state()
        return {
            "version": _STATE_VERSION,
            "method": self.method,
            "n": self.n,
            "k": self.k,
            "eta": self.eta,
            "seed": self._seed,
            "labels": None if self._labels is None else self._labels.tolist(),
            "epoch": epoch,
            "cumulative_risk": [float(v) for v in cumulative],
            "indices": [int(i) for i in current],
            "total_selection_risk": float(total),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on from ``state`` (a :meth:`state_dict` of a selector built the same way)."""
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"state version {state.get('version')!r} is not {_STATE_VERSION}")
        mine = {"method": self.method, "n": self.n, "k": self.k, "eta": self.eta, "seed": self._seed}
        for key, value in mine.items():
            if state.get(key) != value:
                raise ValueError(f"the state's {key} is {state.get(key)!r}, this selector's {value!r}")
        self._selection.restore(
            int(state["epoch"]),
            [float(v) for v in state["cumulative_risk"]],
            [int(i) for i in state["indices"]],
            float(state["total_selection_risk"]),
        )

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Selector:
        """The selector a :meth:`state_dict` was taken from, as it was then."""
        labels = state.get("labels")
        selector = cls(
            None if labels is None else np.asarray(labels, dtype=np.int64),
            n=state["n"],
            k=state["k"],
            eta=state["eta"] if state["method"] == "taks" else None,
            method=state["method"],
            seed=state["seed"],
        )
        selector.load_state_dict(state)
        return selector

    def __reduce__(self) -> tuple[Any, ...]:
        return (Selector.from_state_dict, (self.state_dict(),))

    def __repr__(self) -> str:
        return f"Selector(method={self.method!r}, n={self.n}, k={self.k}, eta={self.eta:.6g}, seed={self._seed}, epoch={self.epoch})"

"""The label audit from Python: which labels are wrong, what they should probably be.

The same audit as ``taks audit`` (a short probe estimates the noise rate, then a TAkS run
collects every sample's noise-risk), on a feature matrix you hold (embeddings, tabular
features) or on the data a path names. The result's columns are named as cleanlab's
(``is_label_issue``, ``label_quality``, ``given_label``) so a cleanlab user finds their
way; ``suggested_label`` is taks's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _arrays
from ._taks import audit_features, audit_path

_COLUMNS = (
    "given_label",
    "suggested_label",
    "suggested_confidence",
    "label_quality",
    "is_label_issue",
    "cumulative_risk",
    "selected_fraction",
)


class AuditResult:
    """What an audit found. Per-sample columns are numpy arrays in data order; ``ids``
    name the samples (row numbers, or image paths for a folder)."""

    ids: list[str]
    classes: list[str]
    given_label: np.ndarray
    suggested_label: np.ndarray
    suggested_confidence: np.ndarray
    label_quality: np.ndarray
    is_label_issue: np.ndarray
    cumulative_risk: np.ndarray
    selected_fraction: np.ndarray
    estimated_noise_rate: float
    per_class_noise_rate: list[float]
    k: int
    k_ratio: float
    history: list[dict[str, Any]]

    def __init__(self, fields: dict[str, Any]) -> None:
        self._csv = fields.pop("suspects_csv")
        self._summary = fields.pop("summary_json")
        self.__dict__.update(fields)

    @property
    def summary(self) -> dict[str, Any]:
        """What ``taks audit`` writes as ``summary.json`` for this audit: the estimate,
        k, the label issues per class, the settings, the device and the seconds, and
        the scores against the truth where it is known."""
        return json.loads(self._summary)

    @property
    def ranked(self) -> np.ndarray:
        """Every sample's index, most suspect first (ascending label quality, ties in
        data order): the order of ``suspects.csv``."""
        return np.lexsort((np.arange(len(self.label_quality)), self.label_quality))

    @property
    def issues(self) -> np.ndarray:
        """The indices of the samples judged mislabelled, most suspect first."""
        ranked = self.ranked
        return ranked[self.is_label_issue[ranked]]

    def columns(self, ranked: bool = False) -> dict[str, Any]:
        """The per-sample table as a dict of columns (``pandas.DataFrame(...)`` takes
        it), with the class names beside the indices; in data order, or most suspect
        first."""
        order = self.ranked if ranked else np.arange(len(self.ids))
        names = np.asarray(self.classes, dtype=object)
        table: dict[str, Any] = {"id": np.asarray(self.ids, dtype=object)[order]}
        for column in _COLUMNS:
            table[column] = getattr(self, column)[order]
        table["given_name"] = names[self.given_label[order]]
        table["suggested_name"] = names[self.suggested_label[order]]
        return table

    def to_pandas(self, ranked: bool = False) -> Any:
        """The table as a pandas DataFrame (pandas is not a dependency of taks)."""
        import pandas as pd

        return pd.DataFrame(self.columns(ranked))

    def suspects_csv(self) -> str:
        """The ``suspects.csv`` that ``taks audit`` writes for this audit."""
        return self._csv

    def __repr__(self) -> str:
        return (
            f"AuditResult({len(self.ids)} samples, {int(self.is_label_issue.sum())} label issues, "
            f"estimated noise rate {self.estimated_noise_rate:.3f}, k = {self.k})"
        )


def _progress(progress: bool | Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any] | None:
    if callable(progress):
        return progress
    if not progress:
        return None

    def line(epoch: dict[str, Any]) -> None:
        stage = "taks" if epoch["stage"] == "selection" else f"probe {epoch['fold'] + 1}"
        print(
            f"{stage:>8} epoch {epoch['epoch']:>3}: loss {epoch['train_loss']:.4f}  "
            f"agreement with given labels {epoch['agreement'] * 100:.2f}%  "
            f"{epoch['selected']} samples  {epoch['seconds']:.2f}s",
            file=sys.stderr,
            flush=True,
        )

    return line


def audit(
    data: Any,
    labels: Any = None,
    *,
    classes: Sequence[str] | None = None,
    label_column: str = "label",
    model: str | None = None,
    image_size: tuple[int, int] | None = None,
    budget: float = 300.0,
    cache_dir: str | os.PathLike[str] | None = None,
    epochs: int | None = None,
    probe_epochs: int | None = None,
    probe_folds: int | None = None,
    k_ratio: float | None = None,
    eta_ratio: float | None = None,
    seed: int = 0,
    batch_size: int = 128,
    lr: float = 1e-3,
    device: str = "cpu",
    progress: bool | Callable[[dict[str, Any]], Any] = False,
) -> AuditResult:
    """Audit the labels of ``data``.

    ``data`` is a feature matrix ``[n, d]`` (numpy, a CPU tensor, anything numpy reads)
    with ``labels`` ``[n]`` (integer class indices, named by ``classes`` where given); or
    a path as ``taks audit`` takes one: a folder of class sub-folders of images, a CSV
    table (labels in ``label_column``), or a ``.npy`` matrix with ``labels`` the path of
    its labels. The defaults are the command line's; ``device`` is ``"cpu"`` or
    ``"gpu"``. ``progress``: True prints a line per epoch to stderr, a callable gets each
    epoch as a dict. Ctrl-C stops the audit at the end of the epoch it is in.
    """
    options = {
        "epochs": epochs,
        "probe_epochs": probe_epochs,
        "probe_folds": probe_folds,
        "k_ratio": k_ratio,
        "eta_ratio": eta_ratio,
        "seed": seed,
        "batch_size": batch_size,
        "lr": lr,
        "device": device,
    }
    report = _progress(progress)
    if isinstance(data, (str, os.PathLike)):
        if classes is not None:
            raise ValueError("classes are for a feature matrix; a path carries its own")
        path = os.fspath(data)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file or folder")
        if labels is not None:
            labels = os.fspath(labels)
            if not os.path.exists(labels):
                raise FileNotFoundError(f"{labels}: no such file")
        if image_size is not None:
            image_size = (int(image_size[0]), int(image_size[1]))
        cache = None if cache_dir is None else os.fspath(cache_dir)
        fields = audit_path(path, labels, label_column, model, image_size, budget, cache, options, report)
        return AuditResult(fields)
    if labels is None:
        raise ValueError("a feature matrix needs its labels")
    for name, given in (("model", model), ("image_size", image_size), ("cache_dir", cache_dir)):
        if given is not None:
            raise ValueError(f"{name} is for image folders; a feature matrix is audited with the MLP")
    features = _arrays.float32(data, "features", 2)
    label_array = _arrays.labels(labels)
    names = None if classes is None else [str(c) for c in classes]
    return AuditResult(audit_features(features, label_array, names, options, report))


def find_label_issues(
    labels: Any,
    features: Any,
    *,
    return_indices_ranked_by: str | None = None,
    **audit_options: Any,
) -> np.ndarray:
    """cleanlab's ``find_label_issues``, from features instead of predicted
    probabilities: a boolean mask over the samples (True: the label is judged wrong), or
    with ``return_indices_ranked_by="label_quality"`` the indices of those samples, most
    suspect first. ``audit_options`` are :func:`audit`'s."""
    if return_indices_ranked_by not in (None, "label_quality"):
        raise ValueError(
            f"return_indices_ranked_by={return_indices_ranked_by!r}: taks ranks by 'label_quality' (or None for a mask)"
        )
    result = audit(features, labels, **audit_options)
    if return_indices_ranked_by is None:
        return result.is_label_issue
    return result.issues

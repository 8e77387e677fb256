"""Shared fixtures: the `taks` binary the command-line comparisons run (TAKS_BIN, set
by scripts/test.sh), and the bundled digits as a feature matrix with flipped labels."""

import gzip
import os
import pathlib
import shutil
import struct
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def taks_bin() -> str:
    path = os.environ.get("TAKS_BIN") or shutil.which("taks")
    if not path or not os.path.exists(path):
        pytest.fail("set TAKS_BIN to the taks binary (scripts/test.sh does)")
    return path


def read_idx(path: pathlib.Path) -> np.ndarray:
    data = gzip.decompress(path.read_bytes())
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


@pytest.fixture(scope="session")
def noisy_digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first 1,000 bundled training digits as [1000, 784] float32 in [0, 1], their
    labels with 20% flipped to another class (seeded), and the mask of the flipped."""
    folder = ROOT / "core" / "data" / "mnist-digits"
    images = read_idx(folder / "train-images-idx3-ubyte.gz")[:1000]
    truth = read_idx(folder / "train-labels-idx1-ubyte.gz")[:1000].astype(np.int64)
    rng = np.random.default_rng(7)
    flipped = rng.random(len(truth)) < 0.2
    noisy = truth.copy()
    noisy[flipped] = (truth[flipped] + rng.integers(1, 10, flipped.sum())) % 10
    features = images.reshape(len(images), -1).astype(np.float32) / 255.0
    return features, noisy, flipped


def pytest_runtest_logreport(report) -> None:
    """A skipped test is said where scripts/test.sh lists every test that checked nothing
    of its purpose on this machine ($TAKS_SKIPPED), as the Rust tests' skips are."""
    skipped = os.environ.get("TAKS_SKIPPED")
    if report.skipped and skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        python = ".".join(map(str, sys.version_info[:2]))
        with open(skipped, "a") as f:
            f.write(f"python/{report.nodeid} (CPython {python}): {reason}\n")

"""taks.audit on arrays: exactly `taks audit`'s suspects on the same data saved as .npy,
finding the flipped digits; bad input refused as a Python caller expects; progress,
Ctrl-C and the GIL."""

import json
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import taks

SHORT = {"epochs": 4, "probe_epochs": 2, "seed": 3}


@pytest.fixture(scope="module")
def audited(noisy_digits):
    features, noisy, _ = noisy_digits
    return taks.audit(features, noisy, **SHORT)


def test_arrays_give_the_command_lines_suspects(noisy_digits, audited, taks_bin, tmp_path):
    features, noisy, _ = noisy_digits
    np.save(tmp_path / "features.npy", features)
    np.save(tmp_path / "labels.npy", noisy)
    out = tmp_path / "audit"
    subprocess.run(
        [taks_bin, "audit", str(tmp_path / "features.npy"), "--labels", str(tmp_path / "labels.npy"),
         "--device", "cpu", "--epochs", "4", "--probe-epochs", "2", "--seed", "3", "--quiet", "--out", str(out)],
        check=True, capture_output=True,
    )
    assert audited.suspects_csv() == (out / "suspects.csv").read_text()
    by_path = taks.audit(tmp_path / "features.npy", tmp_path / "labels.npy", **SHORT)
    assert by_path.suspects_csv() == audited.suspects_csv()
    # The summary is summary.json's, but for where the data came from, the device's
    # words and the times.
    written = json.loads((out / "summary.json").read_text())
    for summary in (audited.summary, by_path.summary):
        assert summary.keys() == written.keys()
        for key in written.keys() - {"data", "device", "seconds"}:
            assert summary[key] == written[key], key
    assert audited.summary["label_issues"] == int(audited.is_label_issue.sum())
    assert audited.summary["per_class"][3]["samples"] == int((noisy == 3).sum())


def test_it_finds_the_flipped_digits(noisy_digits, audited):
    _, noisy, flipped = noisy_digits
    found = audited.is_label_issue
    precision = (found & flipped).sum() / found.sum()
    recall = (found & flipped).sum() / flipped.sum()
    # 20% flipped: flagging at random gives precision 0.2; four short epochs flag generously.
    assert precision > 0.5 and recall > 0.8, (precision, recall)  # measured 0.66, 0.95
    assert abs(audited.estimated_noise_rate - flipped.mean()) < 0.1
    assert audited.k == int(1000 * audited.k_ratio)
    np.testing.assert_array_equal(audited.given_label, noisy)
    quality = audited.label_quality[audited.ranked]
    assert (np.diff(quality) >= 0).all(), "ranked: ascending label quality"
    assert audited.is_label_issue[audited.issues].all()
    assert [h["stage"] for h in audited.history].count("selection") == 4
    assert [h["stage"] for h in audited.history].count("probe") == 2 * 4


def test_the_table_and_cleanlabs_shape(noisy_digits, audited):
    features, noisy, _ = noisy_digits
    table = audited.columns(ranked=True)
    assert list(table["id"][:3]) == [str(i) for i in audited.ranked[:3]]
    assert (table["given_name"] == np.array([str(c) for c in noisy[audited.ranked]], dtype=object)).all()
    mask = taks.find_label_issues(noisy, features, **SHORT)
    np.testing.assert_array_equal(mask, audited.is_label_issue)
    ranked = taks.find_label_issues(noisy, features, return_indices_ranked_by="label_quality", **SHORT)
    np.testing.assert_array_equal(ranked, audited.issues)


def test_classes_name_the_labels(noisy_digits):
    features, noisy, _ = noisy_digits
    names = [f"digit {c}" for c in range(10)]
    result = taks.audit(features[:200], noisy[:200], classes=names, epochs=1, probe_epochs=1)
    assert result.classes == names
    assert "digit " in result.suspects_csv().splitlines()[1]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda f, y: taks.audit(f.astype(np.int32), y), TypeError, "floating-point"),
        (lambda f, y: taks.audit(f[0], y), ValueError, "2 dimension"),
        (lambda f, y: taks.audit(f, y[:-1]), ValueError, "999 labels for the 1000 rows"),
        (lambda f, y: taks.audit(f, y.astype(float)), TypeError, "integer class indices"),
        (lambda f, y: taks.audit(np.where(np.arange(f.size).reshape(f.shape) == 785, np.nan, f), y), ValueError, "row 1, column 1: NaN"),
        (lambda f, y: taks.audit(f, np.where(np.arange(len(y)) == 5, 12, y), classes=[str(c) for c in range(10)]), ValueError, "label 12 is out of range for 10 classes"),
        (lambda f, y: taks.audit(f, y, k_ratio=0.0), ValueError, r"k_ratio 0 must be in \(0, 1\]"),
        (lambda f, y: taks.audit(f, y, device="tpu"), ValueError, "device 'tpu'"),
        (lambda f, y: taks.audit(f, y, model="cnn"), ValueError, "image folders"),
        (lambda f, y: taks.audit(f, None), ValueError, "needs its labels"),
        (lambda f, y: taks.audit(f[:3], y[:3]), ValueError, "at least 4 samples"),
        (lambda f, y: taks.audit("no/such/folder"), FileNotFoundError, "no/such/folder"),
    ],
)
def test_bad_input_is_refused(noisy_digits, call, error, words):
    features, noisy, _ = noisy_digits
    with pytest.raises(error, match=words):
        call(features, noisy)


def test_a_corrupt_npy_is_a_value_error(tmp_path):
    (tmp_path / "x.npy").write_bytes(b"\x93NUMPY garbage")
    np.save(tmp_path / "y.npy", np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="x.npy"):
        taks.audit(tmp_path / "x.npy", tmp_path / "y.npy")
    with pytest.raises(FileNotFoundError, match="nothing.npy"):
        taks.audit(tmp_path / "x.npy", tmp_path / "nothing.npy")


def test_progress_ctrl_c_and_the_gil(noisy_digits):
    features, noisy, _ = noisy_digits
    seen = []
    taks.audit(features[:200], noisy[:200], epochs=2, probe_epochs=1, progress=seen.append)
    assert [(e["stage"], e["epoch"]) for e in seen][-2:] == [("selection", 1), ("selection", 2)]

    # A real SIGINT during the audit stops it at the end of that epoch. Python's own
    # handler set for the test: a process started in the background (`cmd &` in a
    # shell without job control, nohup) inherits SIGINT ignored, and Python then
    # leaves it so.
    def interrupt(epoch):
        seen.append(epoch)
        os.kill(os.getpid(), signal.SIGINT)

    seen.clear()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            taks.audit(features[:200], noisy[:200], epochs=5, probe_epochs=3, progress=interrupt)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(seen) == 1, "stopped after the first epoch"

    # The GIL is released while it trains: another thread's Python goes on. (The switch
    # interval raised to a minute: an audit that held the GIL would let no tick in.)
    import sys

    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)
    thread = threading.Thread(target=tick)
    thread.start()
    try:
        start = time.perf_counter()
        taks.audit(features, noisy, epochs=2, probe_epochs=1)
        end = time.perf_counter()
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(interval)
    inside = sum(start < t < end for t in ticks)
    assert inside > 0.2 * (end - start) / 0.0011, f"{inside} ticks in {end - start:.2f}s"

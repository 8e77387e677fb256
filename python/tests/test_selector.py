"""taks.Selector: the k-sets and regret of the command line's TAkS, state that survives
torch.save and pickle, and bad input refused with the right exception."""

import csv
import json
import math
import pickle
import subprocess
import threading

import numpy as np
import pytest

import taks


def test_it_starts_and_bounds_as_a_command_line_run(taks_bin, tmp_path):
    """`taks train` on the first 1,000 digits writes its first k-set (selected.csv) and
    the regret bound of every epoch (metrics.csv); a Selector built with the same n,
    k-ratio, eta-ratio, epochs and seed starts from the same set and reports the same
    bound after each step. (The later sets follow from risks the run does not write:
    core/tests/online_run.rs replays a run's risks through the same selection.)"""
    out = tmp_path / "run"
    subprocess.run(
        [taks_bin, "train", "--dataset", "mnist-digits", "--method", "taks", "--device", "cpu",
         "--epochs", "2", "--train-limit", "1000", "--test-limit", "200", "--k-ratio", "0.7",
         "--eta-ratio", "0.05", "--seed", "5", "--save-selections", "--quiet", "--out", str(out)],
        check=True, capture_output=True,
    )
    first = (out / "selected.csv").read_text().splitlines()[1].split(",")
    assert first[0] == "1"
    selector = taks.Selector(n=1000, k_ratio=0.7, eta_ratio=0.05, epochs=2, seed=5)
    assert selector.k == 700
    assert selector.indices.tolist() == [int(i) for i in first[1].split()]
    other = taks.Selector(n=1000, k_ratio=0.7, eta_ratio=0.05, epochs=2, seed=6)
    assert other.indices.tolist() != selector.indices.tolist(), "the seed must matter"
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    rng = np.random.default_rng(0)
    for row in rows:
        step = selector.step(risks=rng.random(1000, dtype=np.float32))
        assert f"{step.regret_bound:.4f}" == row["regret_bound"]
        assert f"{step.paper_bound:.4f}" == row["paper_bound"]


def test_the_next_set_is_the_k_smallest_cumulative_risks_at_eta_zero():
    n, k = 50, 10
    naive = taks.Selector(n=n, k=k, method="naive")
    rng = np.random.default_rng(1)
    total = np.zeros(n, dtype=np.float32)
    for _ in range(3):
        risks = rng.random(n, dtype=np.float32)
        total += risks
        step = naive.step(risks=risks)
        assert step.indices.tolist() == sorted(np.argsort(total, kind="stable")[:k].tolist())
        assert step.regret_bound is None
    np.testing.assert_array_equal(naive.cumulative_risk, total)
    assert naive.mask.sum() == k and naive.mask[naive.indices].all()


def test_logits_are_scored_against_the_labels():
    """theta = (1 - s p) / 2 (paper Eq. 6): a confident right prediction is near 0, a
    confident contradiction near 1, so the greedy set keeps the agreeing samples."""
    labels = np.array([0, 1, 2, 0, 1, 2])
    logits = np.full((6, 3), -10.0, dtype=np.float32)
    logits[np.arange(6), labels] = 10.0  # agree with every label...
    logits[[1, 4], :] = -10.0
    logits[1, 0] = logits[4, 2] = 10.0  # ...but samples 1 and 4
    greedy = taks.Selector(labels, k=4, method="greedy")
    trained = greedy.indices.tolist()
    step = greedy.step(logits)
    assert step.indices.tolist() == [0, 2, 3, 5]
    contradicted = sum(i in (1, 4) for i in trained)
    assert step.selection_risk == pytest.approx(contradicted, abs=1e-3)


def test_state_survives_pickle_and_json_and_goes_on_identically():
    a = taks.Selector(n=200, k_ratio=0.5, eta=1.3, seed=11)
    rng = np.random.default_rng(3)
    a.step(risks=rng.random(200, dtype=np.float32))
    state = a.state_dict()
    json.dumps(state)  # plain Python values only: torch.load(weights_only=True) takes them
    b = pickle.loads(pickle.dumps(a))
    c = taks.Selector.from_state_dict(json.loads(json.dumps(state)))
    for _ in range(3):
        risks = rng.random(200, dtype=np.float32)
        sa, sb, sc = a.step(risks=risks), b.step(risks=risks), c.step(risks=risks)
        assert sa.indices.tolist() == sb.indices.tolist() == sc.indices.tolist()
        assert sa.regret == sb.regret == sc.regret
    with pytest.raises(ValueError, match="k is 100"):
        taks.Selector(n=200, k=99, eta=1.3, seed=11).load_state_dict(state)


def test_float32_input_is_read_in_place():
    from taks import _arrays

    x = np.zeros(10, dtype=np.float32)
    assert _arrays.float32(x, "risks", 1) is x
    assert _arrays.float32(x.astype(np.float64), "risks", 1).dtype == np.float32


@pytest.mark.parametrize(
    "build, error, words",
    [
        (lambda: taks.Selector(n=10, k=11, eta=1.0), ValueError, "k = 11 exceeds the 10"),
        (lambda: taks.Selector(n=10, k_ratio=1.5, eta=1.0), ValueError, "k_ratio 1.5"),
        (lambda: taks.Selector(n=10, k=3), ValueError, "eta"),
        (lambda: taks.Selector(n=10, k=3, eta=-1.0), ValueError, "eta = -1"),
        (lambda: taks.Selector(n=10, k=3, eta=1.0, method="jocor"), ValueError, "method 'jocor'"),
        (lambda: taks.Selector(np.array([0.5, 1.0]), k=1, eta=1.0), TypeError, "integer class indices"),
        (lambda: taks.Selector(np.array([0, -1]), k=1, eta=1.0), ValueError, "label -1 of sample 1"),
    ],
)
def test_bad_settings_are_refused(build, error, words):
    with pytest.raises(error, match=words):
        build()


def test_bad_scores_are_refused_and_change_nothing():
    s = taks.Selector(np.array([0, 1, 2, 0, 1]), k=2, eta=0.5)
    before = s.state_dict()
    nan = np.zeros(5, dtype=np.float32)
    nan[3] = np.nan
    cases = [
        (lambda: s.step(risks=nan), ValueError, "sample 3 is NaN"),
        (lambda: s.step(risks=np.zeros(4, dtype=np.float32)), ValueError, "4 values; 5 expected"),
        (lambda: s.step(risks=np.zeros((5, 1), dtype=np.float32)), ValueError, "1 dimension"),
        (lambda: s.step(risks=np.zeros(5, dtype=np.int32)), TypeError, "floating-point"),
        (lambda: s.step(np.zeros((5, 2), dtype=np.float32)), ValueError, "label 2 is out of range"),
        (lambda: s.step(np.full((5, 3), np.inf, dtype=np.float32)), ValueError, "is inf"),
        (lambda: s.step(), ValueError, "logits or risks"),
        (lambda: taks.Selector(n=5, k=2, eta=0.5).step(np.zeros((5, 3), dtype=np.float32)), ValueError, "labels"),
    ]
    for call, error, words in cases:
        with pytest.raises(error, match=words):
            call()
    assert s.state_dict() == before


def test_a_million_samples_step_without_holding_the_gil():
    """The step releases the GIL: another thread's Python runs while a million risks are
    ranked. The switch interval is raised to a minute, so a step that held the GIL would
    let no tick in between its start and its end."""
    import sys
    import time

    n = 1_000_000
    s = taks.Selector(n=n, k_ratio=0.8, eta_ratio=0.001, epochs=100)
    risks = np.random.default_rng(2).random(n, dtype=np.float32)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0002)  # gives the GIL back at once: the main thread never waits

    interval = sys.getswitchinterval()
    sys.setswitchinterval(60)
    thread = threading.Thread(target=tick)
    thread.start()
    try:
        time.sleep(0.01)
        calls = []
        for _ in range(3):
            start = time.perf_counter()
            s._selection.step_risks(risks)
            calls.append((start, time.perf_counter()))
    finally:
        done.set()
        thread.join()
        sys.setswitchinterval(interval)
    inside = sum(1 for t in ticks for a, b in calls if a < t < b)
    assert s.epoch == 3 and len(s.indices) == 800_000
    assert inside >= 3, f"{inside} ticks of the other thread during the steps"
    assert math.isfinite(s.state_dict()["total_selection_risk"])


def test_torch_keeps_the_state_and_the_sampler_follows_the_steps():
    """Where PyTorch is installed (the test command's environments have none: this one
    then reports itself skipped): torch.load(weights_only=True) takes the state back, and
    a DataLoader built once over KSetSampler serves each step's k-set."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed here")
    import io

    from taks.torch import KSetSampler

    s = taks.Selector(np.arange(40) % 4, k=10, eta=1.0, seed=2)
    sampler = KSetSampler(s, generator=torch.Generator().manual_seed(0))
    first = sorted(sampler)
    assert first == s.indices.tolist() and len(sampler) == 10
    s.step(torch.randn(40, 4))
    assert sorted(sampler) == s.indices.tolist() != first
    buffer = io.BytesIO()
    torch.save(s.state_dict(), buffer)
    buffer.seek(0)
    t = taks.Selector.from_state_dict(torch.load(buffer, weights_only=True))
    x = torch.randn(40, 4)
    assert s.step(x).indices.tolist() == t.step(x).indices.tolist()

#!/usr/bin/env python3
"""Time taks.Selector.step on n samples from Python (the median of --repeats after one
warm-up): by risks [n] and by logits [n, 10], float32 C-contiguous (read in place).
Beside `taks bench-select --devices cpu`, whose CPU figure is the k-selection alone.

    python scripts/python-step-bench.py [--n 1000000] [--k-ratio 0.35] [--repeats 5]
"""

import argparse
import statistics
import time

import numpy as np

import taks


def median_ms(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--k-ratio", type=float, default=0.35)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, args.n)
    risks = rng.random(args.n, dtype=np.float32)
    logits = rng.standard_normal((args.n, 10), dtype=np.float32)
    selector = taks.Selector(labels, k_ratio=args.k_ratio, eta_ratio=0.001, epochs=200)
    by_risks = median_ms(lambda: selector.step(risks=risks), args.repeats)
    by_logits = median_ms(lambda: selector.step(logits), args.repeats)
    print(f"| {args.n} | {selector.k} | taks.Selector.step(risks=[n] float32) | {by_risks:.2f} |")
    print(f"| {args.n} | {selector.k} | taks.Selector.step(logits [n, 10] float32) | {by_logits:.2f} |")


if __name__ == "__main__":
    main()

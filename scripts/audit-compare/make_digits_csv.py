#!/usr/bin/env python3
"""Write scikit-learn's digits (1797 samples, 64 features, bundled, no download) as a CSV
with header f0..f63,label and structured label noise, for `taks audit`.

    python3 make_digits_csv.py OUT_CSV [--rate 0.3] [--seed 0]

Noise: a sample whose true digit is in NOISE_MAP is, with probability R, given the
confusable digit (1<->7, 3<->8, 5<->6, 4<->9); 0 and 2 stay clean. The truth goes to
OUT_CSV with `-truth.csv` in place of `.csv`: id (0-based data row), given_label,
true_label, is_noisy.
"""
import argparse
import csv
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import truth_path_for, write_truth  # noqa: E402

NOISE_MAP = {1: 7, 7: 1, 3: 8, 8: 3, 5: 6, 6: 5, 4: 9, 9: 4}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_csv", type=Path)
    ap.add_argument("--rate", type=float, default=0.3, help="flip probability for confusable digits")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.out_csv.suffix.lower() != ".csv":
        sys.exit("OUT_CSV must end in .csv")

    d = load_digits()
    X, y = d.data.astype(np.int64), d.target.astype(np.int64)
    rng = np.random.default_rng(args.seed)
    flip = rng.random(len(y)) < args.rate
    given = np.array([NOISE_MAP[t] if (f and t in NOISE_MAP) else t for t, f in zip(y, flip)])

    args.out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"f{j}" for j in range(X.shape[1])] + ["label"])
        for row, g in zip(X, given):
            w.writerow([int(v) for v in row] + [int(g)])

    truth = truth_path_for(args.out_csv)
    write_truth(truth, ((i, int(g), int(t)) for i, (g, t) in enumerate(zip(given, y))))
    noisy = int((given != y).sum())
    print(f"wrote {len(y)} rows to {args.out_csv}, {noisy} noisy ({noisy / len(y):.1%}); truth: {truth}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the first N Fashion-MNIST training images as a NumPy feature matrix, the way a
person with embeddings hands them to `taks audit FEATURES.npy --labels LABELS`, with the
same structured (confusable-class) label noise as make_fashion_folder.py.

    python3 make_fashion_npy.py OUT_STEM [--n 20000] [--rate 0.3] [--seed 0]

Writes OUT_STEM.npy (float32 [N, 784], pixels / 255, C order), OUT_STEM-labels.npy
(int64 given labels, 0-9 in Fashion-MNIST's class order), OUT_STEM-labels.txt (the same
labels as class names, one a line) and OUT_STEM-truth.csv (id = the 0-based row,
given_label and true_label as class indices, is_noisy). The noise draws are those of
make_fashion_folder.py with the same --seed, so both describe the same flips.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_truth  # noqa: E402
from make_fashion_folder import CLASSES, DEFAULT_DIR, filed_under, read_idx  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_stem", type=Path)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    args = ap.parse_args()

    images, labels = read_idx(args.data_dir)
    images, labels = images[:args.n], labels[:args.n]
    rng = np.random.default_rng(args.seed)
    flip = rng.random(args.n) < args.rate
    given = np.array([
        CLASSES.index(filed_under(CLASSES[t], flip[i]))
        for i, t in enumerate(labels)
    ], dtype=np.int64)
    stem = args.out_stem
    np.save(f"{stem}.npy", (images.reshape(args.n, -1).astype(np.float32) / 255.0))
    np.save(f"{stem}-labels.npy", given)
    Path(f"{stem}-labels.txt").write_text("".join(CLASSES[g] + "\n" for g in given))
    write_truth(Path(f"{stem}-truth.csv"), [(str(i), str(g), str(t)) for i, (g, t) in enumerate(zip(given, labels))])
    noisy = int((given != labels).sum())
    print(f"wrote {stem}.npy [{args.n}, 784] and its labels, {noisy} noisy ({noisy / args.n:.1%})")


if __name__ == "__main__":
    main()

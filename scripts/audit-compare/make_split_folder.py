#!/usr/bin/env python3
"""Write Fashion-MNIST as a folder in the paper's Clothing1M protocol, for
`taks train --data DIR`: DIR/train (labels noisy, structured as make_fashion_folder.py's),
DIR/val and DIR/test (clean), each of class sub-folders of 28x28 grey PNGs.

    python3 make_split_folder.py DIR [--train 10000] [--val 1000] [--test 2000] [--rate 0.3] [--seed 0] [--npy]

With --npy the same splits go to DIR/<split>.npy and DIR/<split>-labels.npy: embeddings in the
same protocol (here the raw pixels stand in for a backbone's features).

train and val come from the training set (disjoint), test from the test set.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fashion_folder import CLASSES, DEFAULT_DIR, filed_under, open_idx  # noqa: E402


def read(folder: Path, prefix: str):
    img = open_idx(folder, f"{prefix}-images-idx3-ubyte")
    lab = open_idx(folder, f"{prefix}-labels-idx1-ubyte")
    n = int.from_bytes(img[4:8], "big")
    return np.frombuffer(img, np.uint8, offset=16).reshape(n, 28, 28), np.frombuffer(lab, np.uint8, offset=8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--val", type=int, default=1000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--npy", action="store_true",
                    help="write DIR/<split>.npy (float32 pixels / 255) and DIR/<split>-labels.npy instead of PNG folders")
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        sys.exit(f"{args.out} exists and is not empty: pick a new folder")
    images, labels = read(args.data_dir, "train")
    test_images, test_labels = read(args.data_dir, "t10k")
    rng = np.random.default_rng(args.seed)
    flip = rng.random(args.train) < args.rate
    noisy = 0
    parts = [("train", range(args.train), images, labels),
             ("val", range(args.train, args.train + args.val), images, labels),
             ("test", range(args.test), test_images, test_labels)]
    for split, indices, imgs, labs in parts:
        if args.npy:
            args.out.mkdir(parents=True, exist_ok=True)
            given = [filed_under(CLASSES[labs[i]], split == "train" and flip[i]) for i in indices]
            noisy += sum(g != CLASSES[labs[i]] for g, i in zip(given, indices))
            np.save(args.out / f"{split}.npy", imgs[list(indices)].reshape(len(indices), -1).astype(np.float32) / 255.0)
            np.save(args.out / f"{split}-labels.npy", np.array([CLASSES.index(g) for g in given], dtype=np.int64))
            continue
        for c in CLASSES:
            (args.out / split / c).mkdir(parents=True, exist_ok=True)
        for i in indices:
            true = CLASSES[labs[i]]
            given = filed_under(true, split == "train" and flip[i])
            noisy += given != true
            Image.fromarray(imgs[i]).save(args.out / split / given / f"{i:05d}.png")
    print(f"wrote {args.out}: train {args.train} ({noisy} misfiled, {noisy / args.train:.1%}), val {args.val}, test {args.test}")


if __name__ == "__main__":
    main()

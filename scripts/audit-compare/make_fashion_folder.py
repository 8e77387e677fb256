#!/usr/bin/env python3
"""Write the first N Fashion-MNIST training images as a folder of class sub-folders of
28x28 greyscale PNGs, with structured (confusable-class) label noise, for `taks audit`.

    python3 make_fashion_folder.py OUT_DIR [--n 20000] [--rate 0.3] [--seed 0] [--jobs 2] [--no-shift]

N may exceed the 60,000 training images (for the scale benchmarks: 100,000 to 1,000,000
files): image i is then training image i mod 60,000, shifted by a seeded random offset of
up to 2 pixels each way once i >= 60,000, so no two files are the same picture
(`--no-shift`: exact copies instead, each with its own draw of the noise, which a network
can learn by heart; the same flips as without it).

Images go to OUT_DIR/<given-class>/<index:05>.png (index = position in the training set),
and the truth to OUT_DIR/../<basename(OUT_DIR)>-truth.csv, outside the image folder:
id,given_label,true_label,is_noisy with id like `shirt/00017.png`.

Noise: an image whose true class is in NOISE_MAP is, with probability R, filed under the
class it is most often confused with; every other class stays clean.
"""
import argparse
import gzip
import struct
import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from PIL import Image

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import truth_path_for, write_truth  # noqa: E402

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat",
           "sandal", "shirt", "sneaker", "bag", "ankle-boot"]
NOISE_MAP = {"t-shirt": "shirt", "shirt": "t-shirt", "pullover": "coat", "coat": "pullover",
             "sneaker": "ankle-boot", "ankle-boot": "sneaker", "sandal": "sneaker",
             "dress": "coat"}
DEFAULT_DIR = Path("/usr/share/datasets/fashion-mnist")


def filed_under(true: str, flip: bool) -> str:
    """The class an image of class `true` is filed under: its confusable class when the
    flip fires and it has one, else its own (the other scripts use the same rule)."""
    return NOISE_MAP[true] if (flip and true in NOISE_MAP) else true


def open_idx(folder: Path, stem: str) -> bytes:
    for name in (stem, stem + ".gz"):
        p = folder / name
        if p.exists():
            data = p.read_bytes()
            return gzip.decompress(data) if name.endswith(".gz") else data
    sys.exit(f"{folder}: neither {stem} nor {stem}.gz "
             "(install the Debian package dataset-fashion-mnist or pass --data-dir)")


def read_idx(folder: Path):
    img = open_idx(folder, "train-images-idx3-ubyte")
    lab = open_idx(folder, "train-labels-idx1-ubyte")
    magic, n, rows, cols = struct.unpack(">IIII", img[:16])
    assert magic == 0x0803 and (rows, cols) == (28, 28), (magic, rows, cols)
    lmagic, ln = struct.unpack(">II", lab[:8])
    assert lmagic == 0x0801 and ln == n, (lmagic, ln, n)
    images = np.frombuffer(img, dtype=np.uint8, offset=16).reshape(n, 28, 28)
    labels = np.frombuffer(lab, dtype=np.uint8, offset=8)
    return images, labels


def write_pngs(job) -> None:
    """Write the PNGs of the positions in `which`."""
    out, images, shifts, rows, which = job
    for i in which:
        image = images[i % len(images)]
        if i >= len(images):
            image = np.roll(image, tuple(shifts[i]), axis=(0, 1))
        Image.fromarray(image).save(out / rows[i][0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--n", type=int, default=20000, help="N images: the first N training images, cycled with shifts past 60,000 (default 20000)")
    ap.add_argument("--rate", type=float, default=0.3, help="flip probability for confusable classes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--jobs", type=int, default=1, help="processes writing PNGs (default 1)")
    ap.add_argument("--no-shift", action="store_true", help="past 60,000, exact copies instead of shifted ones")
    args = ap.parse_args()

    out = args.out_dir
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: pick a new folder")
    images, labels = read_idx(args.data_dir)
    if args.n < 1:
        sys.exit("--n must be at least 1")

    rng = np.random.default_rng(args.seed)
    flip = rng.random(args.n) < args.rate  # one draw per image, used only for mapped classes
    shifts = rng.integers(-2, 3, size=(args.n, 2))
    if args.no_shift:
        shifts[:] = 0
    for c in CLASSES:
        (out / c).mkdir(parents=True, exist_ok=True)

    rows = []
    for i in range(args.n):
        source = i % len(labels)
        true = CLASSES[labels[source]]
        given = filed_under(true, flip[i])
        rows.append((f"{given}/{i:05d}.png", given, true))
    chunks = [(out, images, shifts, rows, range(j, args.n, args.jobs)) for j in range(args.jobs)]
    if args.jobs == 1:
        write_pngs(chunks[0])
    else:
        with Pool(args.jobs) as pool:
            pool.map(write_pngs, chunks)

    truth = truth_path_for(out)
    write_truth(truth, rows)
    noisy = sum(1 for _, g, t in rows if g != t)
    print(f"wrote {args.n} PNGs under {out}, {noisy} noisy ({noisy / args.n:.1%}); truth: {truth}")


if __name__ == "__main__":
    main()

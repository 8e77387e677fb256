#!/usr/bin/env python3
"""Write Fashion-MNIST images as a real export looks: a folder of class sub-folders whose
files come in three formats and sizes, some of them junk, with structured label noise,
for `taks audit` (issue 16's "mixed export").

    python3 make_mixed_export.py OUT_DIR [--n 3000] [--rate 0.25] [--seed 0] [--all-colour]

Image i goes, by i % 3, to a grey 28x28 PNG, a colour 64x64 JPEG (the grey image
upscaled and tinted with a random colour cast: the colour says nothing about the class)
or a grey 40x40 BMP (with --all-colour: always the JPEG), under its given class: with probability R (default 0.25) a
confusable class for the classes of make_fashion_folder.py's NOISE_MAP (about 20%
overall). Junk beside them: an empty .png, a truncated .png, a text file named .jpg,
a .DS_Store in a class folder and a README.txt at the top. The truth goes to
OUT_DIR/../<name>-truth.csv (id = path relative to OUT_DIR).
"""
import argparse
import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import truth_path_for, write_truth  # noqa: E402
from make_fashion_folder import CLASSES, DEFAULT_DIR, filed_under, read_idx  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rate", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--all-colour", action="store_true", help="every image a tinted colour 64x64 JPEG")
    args = ap.parse_args()
    out = args.out_dir
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: pick a new folder")
    images, labels = read_idx(args.data_dir)
    rng = np.random.default_rng(args.seed)
    flip = rng.random(args.n) < args.rate
    tints = 0.55 + 0.45 * rng.random((args.n, 3))
    for c in CLASSES:
        (out / c).mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(args.n):
        true = CLASSES[labels[i]]
        given = filed_under(true, flip[i])
        grey = Image.fromarray(images[i])
        kind = 1 if args.all_colour else i % 3
        if kind == 0:
            rel = f"{given}/{i:05d}.png"
            grey.save(out / rel)
        elif kind == 1:
            rel = f"{given}/{i:05d}.jpg"
            big = np.asarray(grey.resize((64, 64), Image.BILINEAR), dtype=np.float64)
            rgb = np.clip(big[:, :, None] * tints[i][None, None, :], 0, 255).astype(np.uint8)
            Image.fromarray(rgb, "RGB").save(out / rel, quality=90)
        else:
            rel = f"{given}/{i:05d}.bmp"
            grey.resize((40, 40), Image.BILINEAR).save(out / rel)
        rows.append((rel, given, true))
    (out / "README.txt").write_text("exported from the shop's catalogue\n")
    (out / "shirt" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1" + bytes(64))
    (out / "coat" / "empty.png").write_bytes(b"")
    buffer = io.BytesIO()
    Image.fromarray(images[0]).save(buffer, "PNG")
    png = buffer.getvalue()
    (out / "bag" / "truncated.png").write_bytes(png[: len(png) // 2])
    (out / "dress" / "notes.jpg").write_text("not an image, just a note\n")
    truth = truth_path_for(out)
    write_truth(truth, rows)
    noisy = sum(1 for _, g, t in rows if g != t)
    print(f"wrote {args.n} images under {out}, {noisy} misfiled ({noisy / args.n:.1%}), 5 junk files; truth: {truth}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""cleanlab's standard label-issue workflow on the same inputs as `taks audit`, scored
against the truth file. Run by hand; not part of the project's tests.

    python3 cleanlab_audit.py DATA TRUTH_CSV [--folds 5] [--max-iter 30] [--seed 0]
                              [--jobs 1] [--threads N] [--out cleanlab-suspects.csv]

DATA is a folder of class sub-folders of images (each read with PIL, greyscale,
flattened, float32 / 255; all images must be the same size), a .npy feature matrix with
--labels (used as it is), or a CSV of numeric features plus a `label` column (features standardised inside each fold by a
StandardScaler, since an MLP on raw 0..16 pixel counts trains badly; --no-scale turns it off).

Model: sklearn MLPClassifier(hidden_layer_sizes=(256,)), default Adam, early_stopping=False,
max_iter=30 by default (30 epochs: near convergence on Fashion-MNIST-sized data without
taking long; sklearn warns it did not converge, which we silence). Out-of-fold probabilities
from cross_val_predict(method='predict_proba') with StratifiedKFold(folds, shuffle, seed),
then cleanlab.filter.find_label_issues(labels, pred_probs) with its defaults.

Prints one JSON line: precision/recall/F1 of the flagged set against is_noisy, the number
flagged, the top-m F1 of cleanlab's label_quality (self-confidence, lower = worse), the
accuracy of the out-of-fold predictions against given and true labels, and the timings:
time_total_s = load + cross-validation + find_label_issues (quality scores not included).
"""
import argparse
import csv
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, norm_id, prf, read_truth, top_m_f1  # noqa: E402

IMAGE_EXT = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}


def load_folder(root: Path, resize=None):
    from PIL import Image

    classes = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not classes:
        sys.exit(f"{root}: no class sub-folders")
    ids, X, y, shape = [], [], [], None
    for k, c in enumerate(classes):
        for p in sorted((root / c).rglob("*")):
            if not p.is_file() or p.suffix.lower() not in IMAGE_EXT:
                continue
            try:
                with Image.open(p) as im:
                    grey = im.convert("L")
                    if resize:
                        grey = grey.resize(resize, Image.BILINEAR)
                    a = np.asarray(grey, dtype=np.float32)
            except Exception as e:  # a real export holds junk: skip it, as taks does
                print(f"skipped {p.relative_to(root)}: {e}", file=sys.stderr)
                continue
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                sys.exit(f"{p}: size {a.shape[::-1]} differs from the first image's {shape[::-1]}")
            X.append(a.reshape(-1) / 255.0)
            y.append(k)
            ids.append(p.relative_to(root).as_posix())
    return ids, np.stack(X).astype(np.float32), np.array(y), classes


def load_csv(path: Path):
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = [h.strip() for h in next(r)]
        if "label" not in header:
            sys.exit(f"{path}: no `label` column")
        li = header.index("label")
        X, raw = [], []
        for n, row in enumerate(r):
            if not row:
                continue
            raw.append(row[li].strip())
            try:
                X.append([float(v) for j, v in enumerate(row) if j != li])
            except ValueError as e:
                sys.exit(f"{path}: data row {n}: {e}")
    # Integer labels sort numerically, anything else as text.
    try:
        keys = sorted(set(raw), key=lambda s: (0, int(s)))
        raw = [str(int(s)) for s in raw]
        keys = [str(int(s)) for s in keys]
    except ValueError:
        keys = sorted(set(raw))
    index = {c: k for k, c in enumerate(keys)}
    return [str(i) for i in range(len(raw))], np.array(X, dtype=np.float32), np.array([index[s] for s in raw]), keys


def load_npy(path: Path, labels_path: Path):
    """A .npy feature matrix and its labels (.npy of integers, or names one a line)."""
    X = np.load(path)
    if labels_path.suffix == ".npy":
        raw = np.load(labels_path).astype(np.int64).reshape(-1)
        keys = [str(k) for k in range(int(raw.max()) + 1)]
        y = raw
    else:
        names = labels_path.read_text().splitlines()
        keys = sorted(set(names))
        index = {c: k for k, c in enumerate(keys)}
        y = np.array([index[s] for s in names])
    return [str(i) for i in range(len(y))], X.astype(np.float32), y, keys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("truth", type=Path)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--max-iter", type=int, default=30, help="MLP epochs per fold (default 30)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="folds trained in parallel (cross_val_predict n_jobs)")
    ap.add_argument("--threads", type=int, default=None, help="cap BLAS threads (default: library's own)")
    ap.add_argument("--no-scale", action="store_true", help="CSV: do not standardise features")
    ap.add_argument("--out", type=Path, help="also write cleanlab's verdicts in suspects.csv's format here")
    ap.add_argument("--resize", type=str, help="resize every image to WxH (grey) first, for folders of mixed sizes")
    ap.add_argument("--labels", type=Path, help="the labels of a .npy DATA (.npy of integers or names one a line)")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    import cleanlab
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    os.environ["PYTHONWARNINGS"] = "ignore::sklearn.exceptions.ConvergenceWarning"  # joblib workers
    if args.threads:
        threadpool_limits(args.threads)  # stays in force for the rest of the process

    truth = read_truth(args.truth)

    t0 = time.perf_counter()
    is_npy = args.data.suffix == ".npy"
    is_csv = args.data.is_file() and not is_npy
    if is_npy:
        ids, X, labels, classes = load_npy(args.data, args.labels)
    else:
        resize = tuple(int(v) for v in args.resize.split("x")) if args.resize else None
        ids, X, labels, classes = load_csv(args.data) if is_csv else load_folder(args.data, resize)
    t1 = time.perf_counter()

    ids = [norm_id(i) for i in ids]
    if set(ids) != set(truth):
        sys.exit(f"ids differ from the truth's: {len(set(ids) - set(truth))} only in data, "
                 f"{len(set(truth) - set(ids))} only in truth")
    bad = [i for i, k in zip(ids, labels) if classes[k] != truth[i][0]]
    if bad:
        sys.exit(f"{len(bad)} given labels differ from the truth's given_label, e.g. {bad[:3]}")

    mlp = MLPClassifier(hidden_layer_sizes=(256,), early_stopping=False,
                        max_iter=args.max_iter, random_state=args.seed)
    model = make_pipeline(StandardScaler(), mlp) if (is_csv and not args.no_scale) else mlp
    cv = StratifiedKFold(n_splits=args.folds, shuffle=True, random_state=args.seed)
    pred_probs = cross_val_predict(model, X, labels, cv=cv, method="predict_proba", n_jobs=args.jobs)
    t2 = time.perf_counter()
    issues = find_label_issues(labels, pred_probs)
    t3 = time.perf_counter()

    quality = get_label_quality_scores(labels, pred_probs)
    flagged = {i for i, f in zip(ids, issues) if f}
    pred = pred_probs.argmax(1)
    true_idx = {c: k for k, c in enumerate(classes)}
    true_lab = np.array([true_idx.get(truth[i][1], -1) for i in ids])

    result = {"tool": "cleanlab", "cleanlab_version": cleanlab.__version__, "data": str(args.data),
              "n": len(ids), "classes": len(classes)}
    result.update(prf(flagged, truth))
    result.update(top_m_f1(dict(zip(ids, quality.tolist())), truth))
    result.update({
        "oof_acc_vs_given": round(float((pred == labels).mean()), 4),
        "oof_acc_vs_true": round(float((pred == true_lab).mean()), 4),
        "folds": args.folds, "max_iter": args.max_iter, "seed": args.seed,
        "scaled": bool(is_csv and not args.no_scale),
        "time_load_s": round(t1 - t0, 3), "time_cv_s": round(t2 - t1, 3),
        "time_find_issues_s": round(t3 - t2, 3), "time_total_s": round(t3 - t0, 3),
    })

    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "given_label", "suggested_label", "suggested_confidence",
                        "label_quality", "is_label_issue"])
            for i, k, p, q, flag in zip(ids, labels, pred_probs, quality, issues):
                s = int(p.argmax())
                w.writerow([i, classes[k], classes[s], f"{p[s]:.6f}", f"{q:.6f}",
                            "true" if flag else "false"])
    emit(result)


if __name__ == "__main__":
    main()

"""Shared helpers for the by-hand audit comparison scripts (not part of the project's tests)."""
import csv
import json
import sys
from pathlib import Path


def norm_id(raw: str) -> str:
    """One spelling for a sample id: '/'-separated relative path, or a plain integer row."""
    s = raw.strip().replace("\\", "/")
    while s.startswith("./"):
        s = s[2:]
    try:
        return str(int(s))
    except ValueError:
        return s


def truth_path_for(path: Path) -> Path:
    """`digits.csv` -> `digits-truth.csv`; a folder `fm` -> `fm-truth.csv` beside it."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return path.with_name(path.stem + "-truth.csv")
    return path.resolve().parent / (path.resolve().name + "-truth.csv")


def read_truth(path: Path) -> dict:
    """id -> (given_label, true_label, is_noisy)."""
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            noisy = row["is_noisy"].strip().lower() in ("1", "true", "yes")
            out[norm_id(row["id"])] = (row["given_label"].strip(), row["true_label"].strip(), noisy)
    if not out:
        sys.exit(f"{path}: no rows")
    return out


def write_truth(path: Path, rows) -> None:
    """rows: iterable of (id, given_label, true_label)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "given_label", "true_label", "is_noisy"])
        for id_, given, true in rows:
            w.writerow([id_, given, true, "true" if str(given) != str(true) else "false"])


def prf(flagged: set, truth: dict) -> dict:
    """Precision, recall and F1 of a flagged id set against the truth's is_noisy."""
    noisy = {i for i, (_, _, n) in truth.items() if n}
    tp = len(flagged & noisy)
    p = tp / len(flagged) if flagged else 0.0
    r = tp / len(noisy) if noisy else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"flagged": len(flagged), "true_noisy": len(noisy), "tp": tp,
            "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4)}


def top_m_f1(quality: dict, truth: dict) -> dict:
    """F1 of the m lowest label_quality ids, m = number of truly noisy samples.

    With exactly m picked, precision = recall = F1. Ties are broken by id so the
    result does not depend on file order."""
    m = sum(1 for (_, _, n) in truth.values() if n)
    ranked = sorted(quality.items(), key=lambda kv: (kv[1], kv[0]))
    picked = {i for i, _ in ranked[:m]}
    s = prf(picked, truth)
    return {"top_m": m, "top_m_tp": s["tp"], "top_m_f1": s["f1"]}


def emit(obj: dict) -> None:
    print(json.dumps(obj, sort_keys=False))

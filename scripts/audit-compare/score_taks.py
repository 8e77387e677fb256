#!/usr/bin/env python3
"""Score `taks audit`'s suspects.csv against a truth file. Run by hand.

    python3 score_taks.py SUSPECTS_CSV TRUTH_CSV

Prints one JSON line: precision/recall/F1 of the rows with is_label_issue = true against
the truth's is_noisy, the number flagged, and (for reference) the F1 of the m rows with
the lowest label_quality, m = the number of truly noisy samples (precision = recall = F1
there), and the share of rows whose suggested_label is the true class (how well the
audit's final network knows the data: the ceiling its verdicts work under). Samples
missing from suspects.csv count as not flagged (and are not ranked).
"""
import argparse
import csv
import math
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # keep __pycache__ out of the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, norm_id, prf, read_truth, top_m_f1  # noqa: E402

TRUE = {"true", "1", "yes"}
FALSE = {"false", "0", "no"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suspects", type=Path)
    ap.add_argument("truth", type=Path)
    args = ap.parse_args()

    truth = read_truth(args.truth)
    flagged, quality, unknown, mismatched, suggested_true = set(), {}, [], 0, 0
    with open(args.suspects, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"id", "is_label_issue", "label_quality"} - set(reader.fieldnames or [])
        if missing:
            sys.exit(f"{args.suspects}: missing columns {sorted(missing)}")
        for n, row in enumerate(reader):
            i = norm_id(row["id"])
            if i not in truth:
                unknown.append(i)
                continue
            flag = row["is_label_issue"].strip().lower()
            if flag not in TRUE | FALSE:
                sys.exit(f"{args.suspects}: row {n}: is_label_issue {row['is_label_issue']!r}")
            if flag in TRUE:
                flagged.add(i)
            q = float(row["label_quality"])
            quality[i] = q if not math.isnan(q) else math.inf
            if "given_label" in row and row["given_label"].strip() != truth[i][0]:
                mismatched += 1
            if row.get("suggested_label", "").strip() == truth[i][1]:
                suggested_true += 1
    if unknown:
        sys.exit(f"{len(unknown)} ids not in the truth file, e.g. {unknown[:3]}")

    result = {"tool": "taks", "suspects": str(args.suspects), "n": len(truth), "rows": len(quality)}
    result.update(prf(flagged, truth))
    result.update(top_m_f1(quality, truth))
    result["suggested_accuracy"] = round(suggested_true / len(quality), 4) if quality else 0.0
    if mismatched:
        result["given_label_mismatches"] = mismatched
    emit(result)


if __name__ == "__main__":
    main()

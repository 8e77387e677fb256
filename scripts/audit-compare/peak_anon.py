#!/usr/bin/env python3
"""Run a command and report its wall time and peak anonymous resident memory.

    python3 peak_anon.py [--every 0.1] -- COMMAND [ARGS...]

Samples `RssAnon` (and `RssFile`, for a mapped cache) in /proc/PID/status every
`--every` seconds, summed over the process and its children, and prints one JSON line
after the command's own output: wall_s, peak_anon_mb, peak_file_mb, exit code. Anonymous
memory is the process's own (heap, stacks); file pages (a mapped cache) the kernel can
drop and are reported separately. Linux only.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def family(pid: int) -> list:
    """pid and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = (task / "children").read_text().split()
                todo.extend(int(k) for k in kids)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("give a command after --")
    started = time.monotonic()
    proc = subprocess.Popen(command)
    peak_anon = peak_file = 0
    while proc.poll() is None:
        pids = family(proc.pid)
        peak_anon = max(peak_anon, sum(kb(p, "RssAnon") for p in pids))
        peak_file = max(peak_file, sum(kb(p, "RssFile") for p in pids))
        time.sleep(args.every)
    print(json.dumps({
        "wall_s": round(time.monotonic() - started, 1),
        "peak_anon_mb": round(peak_anon / 1024, 1),
        "peak_file_mb": round(peak_file / 1024, 1),
        "exit": proc.returncode,
    }))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()

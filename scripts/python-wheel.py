#!/usr/bin/env python3
"""Pack the Python package into an abi3 wheel around an extension already built by cargo.

    scripts/python-wheel.py TARGET_DIR/release/lib_taks.so OUT_DIR

Why not maturin here: maturin builds `-p taks-python` alone, whose feature resolution
differs from the workspace's (numpy's crates switch on features of crates burn depends
on), so it would compile burn a second time. scripts/test.sh builds the extension in the
same cargo run as the workspace's tests and packs it with this script instead; a user's
`pip install ./python` goes through maturin (python/pyproject.toml), and both wheels hold
the same files. Standard library only.
"""

import base64
import hashlib
import pathlib
import re
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAG = "cp311-abi3-linux_x86_64"


def version() -> str:
    text = (ROOT / "Cargo.toml").read_text()
    match = re.search(r'\[workspace\.package\][^\[]*?\nversion\s*=\s*"([^"]+)"', text)
    if not match:
        sys.exit("python-wheel: no [workspace.package] version in Cargo.toml")
    return match.group(1)


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    library, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if not library.is_file():
        sys.exit(f"python-wheel: {library}: no such file (build it with cargo first)")
    v = version()
    package = ROOT / "python" / "taks"
    files = {f"taks/{p.name}": p.read_bytes() for p in sorted(package.iterdir()) if p.is_file() and p.suffix in (".py", ".pyi", ".typed")}
    files["taks/_taks.abi3.so"] = library.read_bytes()
    info = f"taks-{v}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: taks\nVersion: {v}\nRequires-Python: >=3.11\n"
        "Requires-Dist: numpy>=1.24\nSummary: TAkS sample selection and the label audit, from the taks Rust core\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: taks scripts/python-wheel.py\nRoot-Is-Purelib: false\nTag: {TAG}\n"
    ).encode()
    record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"taks-{v}-{TAG}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    print(wheel)


if __name__ == "__main__":
    main()

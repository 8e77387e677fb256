#!/usr/bin/env python3
"""Writes the malformed pretrained-weight files of tests/corpus/files/init-* (`--init`).
Needs PyTorch, torchvision and safetensors; the files are committed, this script only
documents how each was made. Every file is tiny: the reader must refuse it for what is
wrong with it (the depth check reads names only, so wrong-depth files hold 1-element
tensors)."""
import argparse, io, json, os, struct, zipfile

import torch, torchvision
from safetensors.torch import save, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "files")


class Shell:
    """What a hostile .pth pickles: calling os.system when torch.load runs it."""

    def __reduce__(self):
        return (os.system, ("echo this ran",))


def tiny(depth):
    names = getattr(torchvision.models, f"resnet{depth}")(weights=None).state_dict().keys()
    return {k: torch.zeros(1) for k in names if not k.endswith("num_batches_tracked")}


def main():
    out = lambda name: os.path.join(OUT, name)
    # A pickled function (os.system) beside a tensor.
    torch.save({"conv1.weight": torch.zeros(1), "hook": Shell()}, out("init-pickled-function.pth"))
    # A training checkpoint that pickles its script's arguments (a class instance).
    torch.save({"args": argparse.Namespace(lr=0.1), "state_dict": {"conv1.weight": torch.zeros(1)}},
               out("init-pickled-class.pth"))
    # ResNet-34 names where ResNet-18 is asked for (and the reverse in cases.tsv).
    save_file(tiny(34), out("init-resnet34-names.safetensors"))
    torch.save(tiny(34), out("init-resnet34-names.pth"))
    # The classifier alone.
    save_file({"fc.weight": torch.zeros(2, 512), "fc.bias": torch.zeros(2)}, out("init-head-only.safetensors"))
    # A SafeTensors file cut in the middle of its data.
    whole = save({"conv1.weight": torch.zeros(64, 3, 7, 7)})
    with open(out("init-truncated.safetensors"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    # A torch file from before PyTorch 1.6 (a bare pickle, not a zip archive).
    torch.save({"conv1.weight": torch.zeros(1)}, out("init-legacy.pth"), _use_new_zipfile_serialization=False)
    # A zip archive that is not torch's.
    with zipfile.ZipFile(out("init-not-torch.zip"), "w") as z:
        z.writestr("readme.txt", "hello")
    # Hostile files that need no torch: a SafeTensors data type that does not exist, a
    # shape its offsets do not hold, and a pickle that nests lists 5,000 deep (taks's
    # reader stops at 128; 200,000 deep once overflowed the stack).
    def safetensors_file(name, header, data):
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(out(name), "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + data)
    safetensors_file("init-safetensors-bad-dtype.safetensors",
                     {"conv1.weight": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, bytes(16))
    safetensors_file("init-safetensors-bad-shape.safetensors",
                     {"conv1.weight": {"dtype": "F32", "shape": [64, 3, 7, 7], "data_offsets": [0, 64]}}, bytes(64))
    with zipfile.ZipFile(out("init-deep-nesting.pth"), "w") as z:
        z.writestr("init-deep-nesting/data.pkl", b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b".")
        z.writestr("init-deep-nesting/byteorder", "little")
    # A pickle of 84 bytes that doubles a list 40 times by DUP and APPEND (2^40 values
    # if every copy were taken), and a SafeTensors header that nests 200,000 deep.
    with zipfile.ZipFile(out("init-pickle-dup-bomb.pth"), "w") as z:
        z.writestr("init-pickle-dup-bomb/data.pkl", b"\x80\x02]" + b"2a" * 40 + b".")
        z.writestr("init-pickle-dup-bomb/byteorder", "little")
    deep = b'{"t":' * 200_000
    with open(out("init-safetensors-deep-header.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(deep)) + deep)


if __name__ == "__main__":
    main()

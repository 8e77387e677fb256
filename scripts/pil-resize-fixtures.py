#!/usr/bin/env python3
"""The fixtures of formats/tests/pil_resize.rs: photographs, and what torchvision and
Pillow make of them, so the Rust tests check taks's resize without Python.

Needs Pillow and torchvision (run by hand, once; the outputs are committed):

  scripts/pil-resize-fixtures.py SKIMAGE_DATA formats/tests/fixtures/pil-resize

SKIMAGE_DATA is scikit-image's `skimage/data` folder (in its wheel), whose photographs
carry no copyright: chelsea.png (CC0, Stefan van der Walt), coffee.png (CC0, Rachel
Michetti) and rocket.jpg (public domain, SpaceX). Written to the fixture folder:

  chelsea.png, coffee.png   crops of the photographs (300x200: its short side grows to
                            256; 400x300: it shrinks), saved as PNG
  rocket.jpg                the JPEG as scikit-image ships it (640x427, its chroma at
                            full resolution), not re-encoded
  chelsea.jpg               the crop of chelsea.png saved by Pillow as JPEG (quality 90,
                            chroma at half resolution, Pillow's default 4:2:0)
  NAME.crop.png             torchvision's ImageNet evaluation transform of each photo,
                            Resize(256) then CenterCrop(224), on the PIL image that
                            torchvision's default loader opens (`.convert("RGB")`)
  NAME.WxH.png              Pillow's resize(BILINEAR) of each photo to two sizes that
                            change its aspect (one side grows, the other shrinks; both
                            shrink), the function Resize calls
  NAME.decoded.png          Pillow's (libjpeg-turbo's) decoding of each JPEG, so the
                            tests can tell the decoder's part from the resize's
"""
import os
import shutil
import sys

from PIL import Image
import torchvision
from torchvision import transforms

SIZES = {"chelsea": [(97, 301), (113, 71)], "coffee": [(531, 64), (250, 189)], "rocket": [(150, 480), (222, 100)]}


def main():
    source, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    Image.open(os.path.join(source, "chelsea.png")).convert("RGB").crop((80, 40, 380, 240)).save(
        os.path.join(out, "chelsea.png"))
    Image.open(os.path.join(source, "coffee.png")).convert("RGB").crop((100, 50, 500, 350)).save(
        os.path.join(out, "coffee.png"))
    shutil.copyfile(os.path.join(source, "rocket.jpg"), os.path.join(out, "rocket.jpg"))
    Image.open(os.path.join(out, "chelsea.png")).save(os.path.join(out, "chelsea.jpg"), quality=90)

    evaluation = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224)])
    for name, ext in [("chelsea", "png"), ("coffee", "png"), ("rocket", "jpg"), ("chelsea", "jpg")]:
        with open(os.path.join(out, f"{name}.{ext}"), "rb") as f:
            photo = Image.open(f).convert("RGB")
        if ext == "jpg":
            photo.save(os.path.join(out, f"{name}.decoded.png"))
            if name != "rocket":
                continue
        evaluation(photo).save(os.path.join(out, f"{name}.crop.png"))
        for w, h in SIZES[name]:
            photo.resize((w, h), Image.BILINEAR).save(os.path.join(out, f"{name}.{w}x{h}.png"))
    print(f"torchvision {torchvision.__version__}, Pillow {Image.__version__}: {out}")


if __name__ == "__main__":
    main()

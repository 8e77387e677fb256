#!/usr/bin/env python3
"""taks's ResNet-18/34/50 against torchvision's, on the same weights and images.

Needs PyTorch, torchvision, safetensors and numpy (run by hand; the tests do not).

  scripts/torchvision-parity.py --fixture core/tests/fixtures/resnet-parity
      Writes PyTorch's eval-mode logits for weights and inputs made by a formula that
      the Rust test (the tests of core/src/nn/pretrained.rs) computes too, so the test checks parity
      without PyTorch. See `formula` below.

  TAKS=path/to/taks scripts/torchvision-parity.py [--images 8] [--timing 10000]
          [--device cpu|gpu] [--depths 18,34,50]
      For each depth: torchvision's random weights (`resnetXX(weights=None)`, batch-norm
      statistics moved off 0 and 1), saved as .pth and as .safetensors; a folder of
      256x256 PNGs; `taks embed` with each file, and the largest difference of taks's
      features from torchvision's (resize 256 is the identity on 256x256, so both see
      the same centre-cropped pixels). With --timing N, also N images through taks embed
      and through PyTorch's eval loop (torchvision transforms, a DataLoader with as many
      workers as cores), each timed in the same run. With --device gpu, taks embeds on
      its wgpu device and PyTorch's timed loop runs on CUDA (its parity reference stays
      on the CPU).

  TAKS=path/to/taks scripts/torchvision-parity.py --photos SKIMAGE_DATA [--depths 18,50]
      The same on photographs of other sizes (180 to 400 pixels on their short side,
      wider and taller), made from scikit-image's CC0 photos in SKIMAGE_DATA (its wheel's
      skimage/data) and saved as PNG and as JPEG (Pillow, quality 90), against
      torchvision's own Resize(256) + CenterCrop(224) + ToTensor + Normalize on the PIL
      image; the largest difference is reported per format.
"""
import argparse, os, shutil, subprocess, sys, tempfile, time

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    """SplitMix64's output for the uint64 array x (wrapping arithmetic)."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(MASK)
    z = x
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(MASK)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(MASK)
    return z ^ (z >> np.uint64(31))


def fnv1a(name):
    h = 0xCBF29CE484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def uniform(name, count):
    """count values in [-1, 1), the same bits as `formula::uniform` in the Rust test."""
    with np.errstate(over="ignore"):
        seeds = np.uint64(fnv1a(name)) + np.arange(count, dtype=np.uint64)
        bits = splitmix64(seeds) >> np.uint64(40)
    return bits.astype(np.float64) / float(1 << 24) * 2.0 - 1.0


def formula(name, shape):
    """A tensor of the fixture's weights: uniform(+-sqrt(3 / fan_in)) for convolutions
    and linear weights (unit variance through each layer), and batch norms that are not
    the identity."""
    count = int(np.prod(shape)) if shape else 1
    u = uniform(name, count)
    last = name.rsplit(".", 1)[-1]
    if last == "weight" and len(shape) > 1:
        fan_in = int(np.prod(shape[1:]))
        v = u * np.sqrt(3.0 / fan_in)
    elif last == "weight":
        v = 1.0 + 0.2 * u
    elif last == "bias":
        v = 0.1 * u
    elif last == "running_mean":
        v = 0.1 * u
    elif last == "running_var":
        v = 1.0 + 0.5 * u
    else:
        raise ValueError(name)
    return v.astype(np.float32).reshape(shape)


def fixture(out):
    import torch, torchvision

    os.makedirs(out, exist_ok=True)
    x = uniform("input", 2 * 3 * 64 * 64).astype(np.float32).reshape(2, 3, 64, 64)
    for depth in (18, 34, 50):
        model = getattr(torchvision.models, f"resnet{depth}")(weights=None, num_classes=10)
        state = {}
        for name, t in model.state_dict().items():
            if name.endswith("num_batches_tracked"):
                state[name] = t
            else:
                state[name] = torch.from_numpy(formula(name, tuple(t.shape)))
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            logits = model(torch.from_numpy(x)).numpy()
        np.save(os.path.join(out, f"resnet{depth}-logits.npy"), logits)
        print(f"resnet{depth}: logits {logits.shape}, max |logit| {np.abs(logits).max():.3f}")


# (photo, width, height) of the photographs --photos makes: short sides 180 to 400.
PHOTOS = [("chelsea.png", 271, 180), ("coffee.png", 320, 213), ("astronaut.png", 300, 300),
          ("rocket.jpg", 400, 267), ("chelsea.png", 240, 360), ("coffee.png", 600, 400)]


def make_photos(source, folder):
    from PIL import Image

    for c in ("a", "b"):
        os.makedirs(os.path.join(folder, c))
    for i, (name, w, h) in enumerate(PHOTOS):
        photo = Image.open(os.path.join(source, name)).convert("RGB").resize((w, h), Image.LANCZOS)
        for ext in ("png", "jpg"):
            photo.save(os.path.join(folder, "ab"[i % 2], f"{i:02}-{w}x{h}.{ext}"), quality=90)


def parity(taks, images, timing, device, depths, photos=None):
    import torch, torchvision
    from PIL import Image
    from safetensors.torch import save_file
    from torchvision import transforms

    work = tempfile.mkdtemp(prefix="taks-parity-")
    rng = np.random.default_rng(0)
    folder = os.path.join(work, "images")
    if photos:
        make_photos(photos, folder)
    else:
        for c in ("a", "b"):
            os.makedirs(os.path.join(folder, c))
        for i in range(images):
            pixels = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, "ab"[i % 2], f"{i:05}.png"))
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    evaluation = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                                     transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    print("| network | file | images | max abs difference of features | scale (max abs feature) |")
    print("|---|---|---|---|---|")
    for depth in depths:
        torch.manual_seed(depth)
        model = getattr(torchvision.models, f"resnet{depth}")(weights=None)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
                    m.weight.uniform_(0.8, 1.2)
                    m.bias.uniform_(-0.1, 0.1)
        model.eval()
        state = model.state_dict()
        pth = os.path.join(work, f"resnet{depth}.pth")
        torch.save(state, pth)
        st = os.path.join(work, f"resnet{depth}.safetensors")
        save_file({k: v.contiguous() for k, v in state.items()}, st)
        backbone = torch.nn.Sequential(*list(model.children())[:-1], torch.nn.Flatten())
        for weights in (pth, st):
            out = os.path.join(work, f"out{depth}")
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run([taks, "embed", folder, "--init", weights, "--out", out, "--device", device],
                           check=True, stdout=subprocess.DEVNULL)
            ours = np.load(os.path.join(out, "embeddings.npy"))
            ids = open(os.path.join(out, "ids.txt")).read().split()
            batch = []
            for id in ids:
                with open(os.path.join(folder, id), "rb") as f:
                    image = Image.open(f).convert("RGB")
                if photos:
                    batch.append(evaluation(image))
                    continue
                img = np.asarray(image)
                t = torch.from_numpy(img[16:240, 16:240].copy()).permute(2, 0, 1).float() / 255
                batch.append((t - mean) / std)
            with torch.no_grad():
                theirs = backbone(torch.stack(batch)).numpy()
            scale = np.abs(theirs).max()
            kinds = sorted({id.rsplit(".", 1)[-1] for id in ids})
            for kind in kinds:
                rows = [i for i, id in enumerate(ids) if id.endswith("." + kind)]
                gap = np.abs(ours[rows] - theirs[rows]).max()
                print(f"| ResNet-{depth} | {os.path.basename(weights)} | {len(rows)} {kind.upper()} "
                      f"| {gap:.2e} | {scale:.3f} |")
    if timing:
        time_embeddings(taks, work, timing, device)
    shutil.rmtree(work)


def time_embeddings(taks, work, n, device):
    import torch, torchvision
    from PIL import Image
    from torchvision import transforms

    folder = os.path.join(work, "timing")
    rng = np.random.default_rng(1)
    for c in ("a", "b"):
        os.makedirs(os.path.join(folder, c))
    for i in range(n):
        pixels = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, "ab"[i % 2], f"{i:05}.png"))
    model = torchvision.models.resnet18(weights=None)
    model.fc = torch.nn.Identity()
    model.eval()
    cuda = device == "gpu"
    if cuda:
        model = model.cuda()
    weights = os.path.join(work, "timing.pth")
    torch.save(torchvision.models.resnet18(weights=None).state_dict(), weights)
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = torchvision.datasets.ImageFolder(folder, tf)
    loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=os.cpu_count(), pin_memory=cuda)
    start = time.time()
    with torch.no_grad():
        rows = 0
        for x, _ in loader:
            y = model(x.cuda(non_blocking=True) if cuda else x)
            rows += y.shape[0]
        if cuda:
            torch.cuda.synchronize()
    torch_s = time.time() - start
    def embed(data, out):
        """taks embed's seconds and peak resident memory (MB, by GNU time; nan without it)."""
        gnu_time = ["/usr/bin/time", "-f", "%M"] if os.path.exists("/usr/bin/time") else []
        start = time.time()
        done = subprocess.run(gnu_time + [taks, "embed", data, "--init", weights, "--out", out,
                                          "--device", device],
                              check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.time() - start
        return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024 if gnu_time else float("nan")

    taks_s, taks_mb = embed(folder, os.path.join(work, "timing-out"))
    # A tenth of the images, for the memory's dependence on n.
    small = os.path.join(work, "timing-tenth")
    for c in ("a", "b"):
        os.makedirs(os.path.join(small, c))
        for f in sorted(os.listdir(os.path.join(folder, c)))[: n // 20]:
            os.link(os.path.join(folder, c, f), os.path.join(small, c, f))
    _, small_mb = embed(small, os.path.join(work, "timing-tenth-out"))
    where = torch.cuda.get_device_name() if cuda else f"{torch.get_num_threads()} threads"
    print(f"\n{n} 224x224 PNGs, ResNet-18 features, {os.cpu_count()} cores, torch {torch.__version__} "
          f"({where}), taks on --device {device}:")
    print("| | seconds | images/s |")
    print("|---|---|---|")
    print(f"| PyTorch eval loop | {torch_s:.1f} | {rows / torch_s:.1f} |")
    print(f"| taks embed | {taks_s:.1f} | {n / taks_s:.1f} |")
    print(f"taks / PyTorch: {taks_s / torch_s:.2f}")
    print(f"taks embed's peak memory: {taks_mb:.0f} MB for {n} images, {small_mb:.0f} MB for {2 * (n // 20)}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fixture", help="write the test's golden logits into this folder")
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--timing", type=int, default=0, help="also time N images, taks against PyTorch")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--depths", default="18,34,50", help="the ResNets to check, e.g. 18")
    p.add_argument("--photos", help="scikit-image's data folder: photographs of other sizes")
    a = p.parse_args()
    if a.fixture:
        fixture(a.fixture)
    else:
        depths = [int(d) for d in a.depths.split(",")]
        parity(os.environ.get("TAKS", "taks"), a.images, a.timing, a.device, depths, a.photos)

#!/usr/bin/env python3
"""Writes the malformed inputs of tests/corpus/files/ (run from anywhere; the files are
committed, this script only documents how each was made). Every file is tiny: the
readers must reject it for what is wrong with it, whatever its size."""
import gzip, json, os, struct, shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "files")


def idx(dims, values, type_byte=0x08):
    return bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + bytes(values)


def mnist(name, train_images=None, train_labels=None, test_images=None, test_labels=None, drop=None, gz=False):
    """A folder of the four IDX files of 4 grey 2x2 images; any part may be replaced."""
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    good_images = idx([4, 2, 2], range(16))
    good_labels = idx([4], [0, 1, 2, 3])
    files = {
        "train-images-idx3-ubyte": train_images if train_images is not None else good_images,
        "train-labels-idx1-ubyte": train_labels if train_labels is not None else good_labels,
        "t10k-images-idx3-ubyte": test_images if test_images is not None else good_images,
        "t10k-labels-idx1-ubyte": test_labels if test_labels is not None else good_labels,
    }
    for stem, data in files.items():
        if stem == drop:
            continue
        if gz:
            with open(os.path.join(d, stem + ".gz"), "wb") as f:
                f.write(gzip.compress(data) if stem != "train-images-idx3-ubyte" else data)
        else:
            with open(os.path.join(d, stem), "wb") as f:
                f.write(data)


def cifar10(name, records=None, drop=None):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    good = bytes([3]) + bytes(3072)
    for stem in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch"]:
        if stem == drop:
            continue
        with open(os.path.join(d, stem + ".bin"), "wb") as f:
            f.write(records.get(stem, good) if records else good)


def safetensors(metadata, tensors=()):
    header = {"__metadata__": metadata} if metadata is not None else {}
    offset, body = 0, b""
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        body += data
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + body


def run_folder(name, config_text, checkpoint=None):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(config_text)
    if checkpoint is not None:
        with open(os.path.join(d, "checkpoint.safetensors"), "wb") as f:
            f.write(checkpoint)


def npy(descr, shape, data, fortran=False, version=(1, 0)):
    """An .npy file as numpy's format spec lays it out (a header dict padded to 64 bytes)."""
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape)
    size = 4 if version[0] >= 2 else 2
    while (8 + size + len(header) + 1) % 64:
        header += " "
    header += "\n"
    length = struct.pack("<I" if size == 4 else "<H", len(header))
    return b"\x93NUMPY" + bytes(version) + length + header.encode() + data


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    labels = idx([4], [0, 1, 2, 3])
    # IDX (MNIST-format folders).
    mnist("idx-bad-magic", train_labels=bytes([8, 8, 8, 1]) + bytes(8))
    mnist("idx-truncated-labels", train_labels=idx([4], [0, 1, 2, 3])[:-1])
    mnist("idx-trailing-bytes", train_labels=labels + b"\x00")
    mnist("idx-count-mismatch", train_labels=idx([3], [0, 1, 2]))
    mnist("idx-label-out-of-range", train_labels=idx([4], [0, 1, 2, 10]))
    mnist("idx-wrong-rank", train_labels=idx([4, 1, 1], [0, 1, 2, 3]))
    mnist("idx-element-type", train_images=idx([4, 2, 2], range(16), type_byte=0x0D))
    mnist("idx-empty-file", train_images=b"")
    mnist("idx-short-header", train_images=bytes([0, 0, 8, 3, 0, 0]))
    mnist("idx-lying-dimensions", train_images=idx([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF], []))
    mnist("idx-huge-dimensions", train_images=idx([65535, 65535, 255], []))
    mnist("idx-zero-width", train_images=idx([4, 2, 0], []))
    mnist("idx-missing-file", drop="t10k-labels-idx1-ubyte")
    mnist("idx-shape-mismatch", test_images=idx([4, 3, 3], range(36)))
    mnist("idx-corrupt-gzip", gz=True)
    with open(os.path.join(OUT, "idx-corrupt-gzip", "train-images-idx3-ubyte.gz"), "wb") as f:
        f.write(bytes([0x1F, 0x8B, 8, 0, 1, 2, 3]))
    mnist("idx-no-samples", train_images=idx([0, 2, 2], []), train_labels=idx([0], []))
    # CIFAR binary.
    cifar10("cifar-partial-record", records={"data_batch_2": bytes([1]) + bytes(100)})
    cifar10("cifar-label-out-of-range", records={"test_batch": bytes([10]) + bytes(3072)})
    cifar10("cifar-missing-file", drop="data_batch_3")
    cifar10("cifar-empty-file", records={"data_batch_1": b""})
    d = os.path.join(OUT, "cifar100-label-out-of-range")
    os.makedirs(d)
    for stem in ["train", "test"]:
        with open(os.path.join(d, stem + ".bin"), "wb") as f:
            f.write(bytes([0, 100 if stem == "train" else 5]) + bytes(3072))
    with open(os.path.join(OUT, "not-a-folder"), "w") as f:
        f.write("a file where a folder belongs\n")
    # Run folders for --resume.
    config = {"config": {"dataset": "mnist-digits", "noise": "symmetric", "noise_rate": 0.5,
                         "method": "taks", "k_ratio": 0.35, "eta_ratio": 0.001, "epochs": 2,
                         "seed": 0, "batch_size": 128, "eval_batch_size": 4096,
                         "learning_rate": 0.001, "decay_start": 80, "train_limit": 200,
                         "test_limit": 100, "architecture": "mlp",
                         "selection_engine": "wgsl", "forget_rate": 0.5, "co_lambda": 0.9,
                         "init_epoch": 0}}
    good_config = json.dumps(config)
    run_folder("resume-config-not-json", "{ this is not json")
    run_folder("resume-config-no-settings", json.dumps({"taks_version": "0.1.0"}))
    bad = json.loads(good_config)
    bad["config"]["k_ratio"] = 7
    run_folder("resume-config-bad-setting", json.dumps(bad))
    bad = json.loads(good_config)
    bad["config"]["method"] = "coteach"
    run_folder("resume-config-unknown-method", json.dumps(bad))
    run_folder("resume-checkpoint-garbage", good_config, b"definitely not a checkpoint")
    run_folder("resume-checkpoint-empty", good_config, b"")
    run_folder("resume-checkpoint-foreign", good_config,
               safetensors(None, [("w", "F32", [1], bytes(4))]))
    run_folder("resume-checkpoint-version", good_config,
               safetensors({"format": "taks-checkpoint", "version": "99", "state": "{}"}))
    run_folder("resume-checkpoint-no-state", good_config,
               safetensors({"format": "taks-checkpoint", "version": "1"}))
    run_folder("resume-checkpoint-state-not-json", good_config,
               safetensors({"format": "taks-checkpoint", "version": "1", "state": "{oops"}))
    run_folder("resume-checkpoint-state-foreign", good_config,
               safetensors({"format": "taks-checkpoint", "version": "1", "state": "{\"epoch\": 1}"}))
    run_folder("resume-checkpoint-f16", good_config,
               safetensors({"format": "taks-checkpoint", "version": "1", "state": "{}"},
                           [("w", "F16", [1], bytes(2))]))
    lying = bytearray(safetensors({"format": "taks-checkpoint", "version": "1", "state": "{}"}))
    lying[0:8] = struct.pack("<Q", 1 << 60)
    run_folder("resume-checkpoint-lying-header", good_config, bytes(lying))
    run_folder("resume-checkpoint-truncated", good_config,
               safetensors({"format": "taks-checkpoint", "version": "1", "state": "{}"},
                           [("w", "F32", [4], bytes(16))])[:-3])
    # A folder for `table`: metrics and config that do not belong together.
    d = os.path.join(OUT, "table-garbage-run")
    os.makedirs(d)
    with open(os.path.join(d, "metrics.csv"), "w") as f:
        f.write("epoch,train_loss\nnot,numbers\n")
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write("[]")

    audit_inputs()


def png(width, height, grey):
    """A valid greyscale PNG (no imaging library needed)."""
    import zlib
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\0" + bytes([grey]) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write(path, data):
    path = os.path.join(OUT, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def audit_inputs():
    """Inputs of `taks audit` and `taks predict`."""
    # No class folders: only a hidden file (git keeps no empty folder).
    write("audit-empty-folder/.keep", "")
    for i in range(4):
        write(f"audit-one-class/cat/{i}.png", png(4, 4, 40 * i))
    write("audit-no-images/cat/notes.txt", "not an image")
    write("audit-no-images/dog/list.csv", "a,b\n")
    write("audit-undecodable/cat/a.png", b"\x89PNG\r\n\x1a\n broken")
    write("audit-undecodable/dog/b.jpg", b"\xff\xd8\xff garbage")
    write("audit-csv-no-label.csv", "a,b\n1,2\n3,4\n")
    write("audit-csv-ragged.csv", "a,label\n1,x\n2\n")
    write("audit-csv-word.csv", "a,label\n1,x\nlots,y\n")
    write("audit-csv-nan.csv", "a,label\n1,x\nNaN,y\n")
    write("audit-csv-blank-cell.csv", "a,b,label\n1,,x\n")
    write("audit-csv-empty.csv", "")
    write("audit-csv-header-only.csv", "a,label\n")
    write("audit-csv-one-class.csv", "a,label\n1,x\n2,x\n3,x\n4,x\n5,x\n")
    write("audit-csv-not-utf8.csv", b"a,label\n1,\xff\xfe\n")
    write("audit-csv-duplicate-column.csv", "a,a,label\n1,2,x\n3,4,y\n")
    for i in range(4):
        write(f"audit-one-readable-class/cat/{i}.png", png(4, 4, 40 * i))
    write("audit-one-readable-class/dog/broken.png", b"\x89PNG\r\n\x1a\n broken")
    # Model folders for `predict`.
    card = {"format": "taks-model", "version": 1, "architecture": "mlp", "classes": ["a", "b"],
            "input": {"kind": "table", "features": ["x", "y"]},
            "normalisation": {"mean": [0, 0], "std": [1, 1]}, "pytorch": ""}
    write("model-no-weights/model.json", json.dumps(card))
    write("model-corrupt-weights/model.json", json.dumps(card))
    write("model-corrupt-weights/model.safetensors", b"\x10\0\0\0\0\0\0\0{not json}")
    write("model-wrong-shapes/model.json", json.dumps(card))
    write("model-wrong-shapes/model.safetensors",
          safetensors(None, [("0.weight", "F32", [256, 3], bytes(256 * 3 * 4)), ("0.bias", "F32", [256], bytes(1024)),
                             ("2.weight", "F32", [2, 256], bytes(2048)), ("2.bias", "F32", [2], bytes(8))]))
    # A valid (all-zero) MLP for two features, to reach the input checks.
    write("model-valid-table/model.json", json.dumps(card))
    write("model-valid-table/model.safetensors",
          safetensors(None, [("0.weight", "F32", [256, 2], bytes(256 * 2 * 4)), ("0.bias", "F32", [256], bytes(1024)),
                             ("2.weight", "F32", [2, 256], bytes(2048)), ("2.bias", "F32", [2], bytes(8))]))
    write("model-card-garbage/model.json", "{oops")
    # A card whose unknown key nests 200,000 objects deep (and never closes them): the
    # card's fields are read by their types, and an unknown key's value is skipped
    # without recursion, so this is a clean error, not a stack overflow.
    write("model-card-deep/model.json", '{"x":' * 200_000)
    write("model-card-cnn-not-square/model.json", json.dumps(dict(
        card, architecture="cnn", input={"kind": "image", "channels": 1, "height": 32, "width": 16},
        normalisation={"mean": [0], "std": [1]})))
    write("model-card-no-features/model.json", json.dumps(dict(
        card, input={"kind": "table", "features": []}, normalisation={"mean": [], "std": []})))
    write("model-card-version/model.json", json.dumps(dict(card, version=7)))
    # Version 2 is the centre-cropped card: without the crop, and the crop on a table.
    write("model-card-version-2/model.json", json.dumps(dict(card, version=2)))
    write("model-card-crop-on-table/model.json",
          json.dumps(dict(card, version=2, centre_crop={"resize": 256})))
    write("model-card-bad-normalisation/model.json",
          json.dumps(dict(card, normalisation={"mean": [0], "std": [1]})))
    # A card whose network would be 12.9 billion parameters (an MLP over 4096x4096
    # colour images), beside the small valid weights: refused before it is built.
    write("model-card-huge/model.json", json.dumps(dict(
        card, input={"kind": "image", "channels": 3, "height": 4096, "width": 4096},
        normalisation={"mean": [0, 0, 0], "std": [1, 1, 1]})))
    write("model-card-huge/model.safetensors",
          safetensors(None, [("0.weight", "F32", [256, 2], bytes(256 * 2 * 4)), ("0.bias", "F32", [256], bytes(1024)),
                             ("2.weight", "F32", [2, 256], bytes(2048)), ("2.bias", "F32", [2], bytes(8))]))
    # .npy features (4 rows, 2 columns) and labels for `taks audit FEATURES --labels`.
    f4 = struct.pack("<8f", 1, 2, 3, 4, 5, 6, 7, 8)
    write("npy-features.npy", npy("<f4", "(4, 2)", f4))
    write("npy-truncated.npy", npy("<f4", "(4, 2)", f4[:20]))
    write("npy-trailing.npy", npy("<f4", "(4, 2)", f4 + b"\0\0\0\0"))
    write("npy-fortran.npy", npy("<f4", "(4, 2)", f4, fortran=True))
    write("npy-int-features.npy", npy("<i4", "(4, 2)", f4))
    write("npy-3d.npy", npy("<f4", "(2, 2, 2)", f4))
    write("npy-nan.npy", npy("<f4", "(4, 2)", struct.pack("<8f", 1, 2, 3, float("nan"), 5, 6, 7, 8)))
    write("npy-version-9.npy", npy("<f4", "(4, 2)", f4, version=(9, 0)))
    write("npy-bad-header.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4 }\n")
    write("npy-not-numpy.npy", b"\x89PNG\r\n\x1a\n not numpy")
    write("npy-labels.npy", npy("<i8", "(4,)", struct.pack("<4q", 0, 1, 0, 1)))
    write("npy-labels-three.npy", npy("<i8", "(3,)", struct.pack("<3q", 0, 1, 0)))
    write("npy-labels-float.npy", npy("<f8", "(4,)", struct.pack("<4d", 0, 1, 0, 1)))
    write("npy-labels-negative.npy", npy("<i2", "(4,)", struct.pack("<4h", 0, -1, 0, 1)))
    write("npy-labels-blank-line.txt", "cat\n\ndog\ncat\n")
    # Folders in the Clothing1M protocol for `taks train --data DIR`.
    for split in ("train", "val", "test"):
        for c, grey in (("cat", 40), ("dog", 200)):
            for i in range(2):
                write(f"split-ok/{split}/{c}/{i}.png", png(4, 4, grey + i))
                if split != "val":
                    write(f"split-no-val/{split}/{c}/{i}.png", png(4, 4, grey + i))
                write(f"split-classes-differ/{split}/{c if split != 'val' else c + 's'}/{i}.png", png(4, 4, grey + i))
                if split != "test":
                    write(f"split-empty-test/{split}/{c}/{i}.png", png(4, 4, grey + i))
    write("split-empty-test/test/cat/notes.txt", "no images here")
    # Embeddings in the same protocol: DIR/<split>.npy and DIR/<split>-labels.(npy|txt).
    rows = struct.pack("<8f", 1, 2, 3, 4, 5, 6, 7, 8)
    for name, changes in [("emb-no-val", {"val.npy": None}), ("emb-mixed-labels", {"val-labels.npy": None, "val-labels.txt": "cat\ndog\ncat\ndog\n"}),
                          ("emb-val-class", {"val-labels.txt": "cat\nbird\ncat\ndog\n"}), ("emb-width", {"test.npy": npy("<f4", "(2, 4)", rows)})]:
        files = {f"{s}.npy": npy("<f4", "(4, 2)", rows) for s in ("train", "val", "test")}
        txt = name in ("emb-val-class",)
        for s in ("train", "val", "test"):
            if txt:
                files[f"{s}-labels.txt"] = "cat\ndog\ncat\ndog\n"
            else:
                files[f"{s}-labels.npy"] = npy("<i8", "(4,)", struct.pack("<4q", 0, 1, 0, 1))
        files.update(changes)
        for f, data in files.items():
            if data is not None:
                write(f"{name}/{f}", data)
    write("predict-rows.csv", "x,y\n1,2\n")
    write("predict-rows-missing-column.csv", "x,z\n1,2\n")


if __name__ == "__main__":
    main()

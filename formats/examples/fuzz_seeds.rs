//! Writes the seeds of the IDX, CIFAR, checkpoint and NumPy readers' mutation test
//! (`tests/mutations.rs`) and fuzz targets (`fuzz/`): small valid inputs of each
//! format, so that mutations start from files that get past the headers. The other
//! seeds are made by hand (`tests/seeds/README.md`).
//!
//!     cargo run -p taks-formats --example fuzz_seeds -- formats/tests/seeds
//!
//! The seeds are committed; rerun this only when a format changes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use taks_formats::checkpoint::{Checkpoint, Tensor};
use taks_formats::cifar::PIXELS;
use taks_formats::idx;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let dir = dir.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn main() {
    let out = std::env::args().nth(1).expect("usage: fuzz_seeds <folder>");
    let out = Path::new(&out);

    // IDX: a label file, an image file, both gzip'd, and the pair as the idx target
    // reads it (a first byte giving the image file's length, then the two files).
    let labels = idx::encode(&[3], &[0, 9, 4]);
    let images = idx::encode(&[3, 2, 2], &(0..12).map(|i| i * 21).collect::<Vec<u8>>());
    write(out, "idx", "labels.idx1", &labels);
    write(out, "idx", "images.idx3", &images);
    write(out, "idx", "labels.idx1.gz", &gzip(&labels));
    write(out, "idx", "images.idx3.gz", &gzip(&images));
    let mut pair = vec![images.len() as u8];
    pair.extend_from_slice(&images);
    pair.extend_from_slice(&labels);
    write(out, "idx", "pair", &pair);

    // CIFAR: two CIFAR-10 records, and one CIFAR-100 record.
    let record = |labels: &[u8], fill: u8| {
        let mut r = labels.to_vec();
        r.extend((0..PIXELS).map(|i| fill.wrapping_add(i as u8)));
        r
    };
    write(
        out,
        "cifar",
        "cifar10.bin",
        &[record(&[3], 0), record(&[9], 128)].concat(),
    );
    write(out, "cifar", "cifar100.bin", &record(&[4, 57], 1));

    // Checkpoints: one with F32, U32 and empty tensors and a state of the kinds a run
    // keeps (counts, generator states, float history), and one with no tensors.
    let mut tensors = BTreeMap::new();
    tensors.insert(
        "net.conv1.weight".to_string(),
        Tensor::f32(vec![2, 3], vec![0.5, -1.25, 0.0, -0.0, 1e-40, f32::NAN]),
    );
    tensors.insert(
        "selected".to_string(),
        Tensor::u32(vec![4], vec![0, 3, 7, u32::MAX]),
    );
    tensors.insert("optim.empty".to_string(), Tensor::f32(vec![0, 5], vec![]));
    let full = Checkpoint {
        state: serde_json::json!({
            "epoch": 3,
            "rng": [u64::MAX, 12345],
            "history": [{"loss": 0.1, "accuracy": 0.987_654_321_012_345_6}],
            "method": "taks",
        }),
        tensors,
    };
    write(out, "checkpoint", "full.safetensors", &full.encode());
    let bare = Checkpoint {
        state: serde_json::json!({}),
        tensors: BTreeMap::new(),
    };
    write(out, "checkpoint", "bare.safetensors", &bare.encode());
}

//! The CIFAR-10 and CIFAR-100 "binary version" files.
//!
//! CIFAR-10: records of 1 label byte + 3072 pixel bytes (1024 red, 1024 green, 1024
//! blue, row-major 32x32), in `data_batch_1.bin` .. `data_batch_5.bin` and
//! `test_batch.bin`. CIFAR-100: records of a coarse label byte, a fine label byte and
//! the same 3072 pixels, in `train.bin` and `test.bin`; we train on the 100 fine labels.
//! The channel-major record layout is exactly the [C, H, W] layout the CNN takes, so
//! records are copied without reordering.

use std::path::Path;

use crate::{FormatError as Error, Result};

pub const PIXELS: usize = 3 * 32 * 32;

/// Which of the two variants a file holds (it decides the record layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Cifar10,
    Cifar100,
}

impl Variant {
    fn label_bytes(self) -> usize {
        match self {
            Variant::Cifar10 => 1,
            Variant::Cifar100 => 2,
        }
    }

    pub fn classes(self) -> usize {
        match self {
            Variant::Cifar10 => 10,
            Variant::Cifar100 => 100,
        }
    }

    /// File names of the (train, test) parts inside the dataset folder.
    pub fn files(self) -> (Vec<&'static str>, &'static str) {
        match self {
            Variant::Cifar10 => (
                vec![
                    "data_batch_1.bin",
                    "data_batch_2.bin",
                    "data_batch_3.bin",
                    "data_batch_4.bin",
                    "data_batch_5.bin",
                ],
                "test_batch.bin",
            ),
            Variant::Cifar100 => (vec!["train.bin"], "test.bin"),
        }
    }
}

/// Decode one binary file into raw pixel bytes and labels, appending to the outputs.
pub fn parse(
    bytes: &[u8],
    variant: Variant,
    path: &Path,
    pixels: &mut Vec<u8>,
    labels: &mut Vec<u32>,
) -> Result<()> {
    let record = variant.label_bytes() + PIXELS;
    if bytes.is_empty() || !bytes.len().is_multiple_of(record) {
        return Err(Error::malformed(
            path,
            format!(
                "{} bytes is not a whole number of {record}-byte CIFAR records",
                bytes.len()
            ),
        ));
    }
    // Every label is checked before anything is appended, so a bad file leaves the
    // outputs as they were.
    let label_of = |rec: &[u8]| rec[variant.label_bytes() - 1] as u32;
    let out_of_range = bytes
        .chunks_exact(record)
        .map(label_of)
        .enumerate()
        .find(|&(_, label)| label as usize >= variant.classes());
    if let Some((i, label)) = out_of_range {
        return Err(Error::LabelOutOfRange {
            path: path.into(),
            index: labels.len() + i,
            label,
            classes: variant.classes(),
        });
    }
    labels.extend(bytes.chunks_exact(record).map(label_of));
    pixels.reserve(bytes.len() / record * PIXELS);
    for rec in bytes.chunks_exact(record) {
        pixels.extend_from_slice(&rec[variant.label_bytes()..]);
    }
    Ok(())
}

/// Read and concatenate the given files of one folder.
pub fn read_files(dir: &Path, names: &[&str], variant: Variant) -> Result<(Vec<u8>, Vec<u32>)> {
    let (mut pixels, mut labels) = (Vec::new(), Vec::new());
    for name in names {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        parse(&bytes, variant, &path, &mut pixels, &mut labels)?;
    }
    Ok((pixels, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_layouts() {
        let mut rec10 = vec![7u8];
        rec10.extend((0..PIXELS).map(|i| (i % 256) as u8));
        let (mut px, mut lb) = (vec![], vec![]);
        parse(
            &rec10.repeat(2),
            Variant::Cifar10,
            Path::new("a"),
            &mut px,
            &mut lb,
        )
        .unwrap();
        assert_eq!(lb, vec![7, 7]);
        assert_eq!(px.len(), 2 * PIXELS);
        assert_eq!(px[PIXELS + 5], 5);

        let mut rec100 = vec![3u8, 99];
        rec100.extend(std::iter::repeat_n(1u8, PIXELS));
        let (mut px, mut lb) = (vec![], vec![]);
        parse(&rec100, Variant::Cifar100, Path::new("b"), &mut px, &mut lb).unwrap();
        assert_eq!(lb, vec![99]);
    }

    #[test]
    fn rejects_partial_records_and_bad_labels() {
        let (mut px, mut lb) = (vec![], vec![]);
        let err = parse(
            &[0u8; 100],
            Variant::Cifar10,
            Path::new("a"),
            &mut px,
            &mut lb,
        );
        assert!(err.unwrap_err().to_string().contains("whole number"));
        let mut rec = vec![10u8];
        rec.extend(std::iter::repeat_n(0u8, PIXELS));
        let err = parse(&rec, Variant::Cifar10, Path::new("a"), &mut px, &mut lb);
        assert!(err.unwrap_err().to_string().contains("label 10"));
    }

    /// The smallest inputs of each kind in the fuzz corpus (`fuzz/`, target `cifar`).
    #[test]
    fn fuzzed_inputs_give_their_error() {
        let message = |bytes: &[u8], variant| {
            let (mut px, mut lb) = (vec![], vec![]);
            let err = parse(bytes, variant, Path::new("b.bin"), &mut px, &mut lb);
            err.unwrap_err().to_string()
        };
        assert_eq!(
            message(b"\x00", Variant::Cifar10),
            "b.bin: 1 bytes is not a whole number of 3073-byte CIFAR records"
        );
        assert_eq!(
            message(b"\x00", Variant::Cifar100),
            "b.bin: 1 bytes is not a whole number of 3074-byte CIFAR records"
        );
        assert!(message(b"", Variant::Cifar10).contains("0 bytes is not a whole number"));
    }

    /// The crash the fuzzer found: a file whose second record has a bad label (223)
    /// used to leave the first record's label and pixels appended to the outputs, so
    /// they no longer matched each other. Now a failed parse leaves them as they were,
    /// and the sample index counts the samples already there.
    #[test]
    fn a_bad_label_leaves_the_outputs_as_they_were() {
        let mut file = vec![3u8];
        file.extend(std::iter::repeat_n(0u8, PIXELS));
        file.push(223);
        file.extend(std::iter::repeat_n(0u8, PIXELS));
        let (mut px, mut lb) = (vec![9u8; PIXELS], vec![1u32]);
        let err = parse(
            &file,
            Variant::Cifar10,
            Path::new("b.bin"),
            &mut px,
            &mut lb,
        );
        let err = err.unwrap_err().to_string();
        assert_eq!(
            err,
            "b.bin: label 223 at sample 2 is out of range for 10 classes"
        );
        assert_eq!(lb, vec![1]);
        assert_eq!(px, vec![9u8; PIXELS]);
    }
}

//! The CIFAR-10 / CIFAR-100 binary reader (`taks_formats::cifar::parse`), with both
//! variants. Checks, for any bytes, that `parse` never panics; that on success it
//! appended one label below the class count and the 3072 pixel bytes of every record,
//! and nothing else; that on failure it left the outputs as they were; and that every
//! error is one line naming the file. The outputs start non-empty, so the sample
//! index in a label error must count the samples already there.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use taks_formats::cifar::{self, PIXELS, Variant};

const PATH: &str = "fuzz_batch.bin";
/// Samples already in the outputs before the file is parsed.
const BEFORE: usize = 2;

fuzz_target!(|data: &[u8]| {
    for (variant, label_bytes) in [(Variant::Cifar10, 1), (Variant::Cifar100, 2)] {
        let mut pixels = vec![7u8; BEFORE * PIXELS];
        let mut labels = vec![1u32; BEFORE];
        match cifar::parse(data, variant, Path::new(PATH), &mut pixels, &mut labels) {
            Ok(()) => {
                let record = label_bytes + PIXELS;
                assert_eq!(data.len() % record, 0);
                let n = data.len() / record;
                assert!(n > 0);
                assert_eq!(labels.len(), BEFORE + n);
                assert_eq!(pixels.len(), (BEFORE + n) * PIXELS);
                for (i, rec) in data.chunks_exact(record).enumerate() {
                    let label = labels[BEFORE + i];
                    assert_eq!(label, rec[label_bytes - 1] as u32);
                    assert!((label as usize) < variant.classes());
                    let at = (BEFORE + i) * PIXELS;
                    assert_eq!(&pixels[at..at + PIXELS], &rec[label_bytes..]);
                }
            }
            Err(e) => {
                assert_eq!(
                    labels,
                    vec![1u32; BEFORE],
                    "labels changed by a failed parse"
                );
                assert_eq!(
                    pixels.len(),
                    BEFORE * PIXELS,
                    "pixels changed by a failed parse"
                );
                let msg = e.to_string();
                assert!(
                    !msg.contains('\n') && msg.contains(PATH),
                    "bad error: {msg:?}"
                );
                if let taks_formats::FormatError::LabelOutOfRange { index, .. } = e {
                    assert!(
                        index >= BEFORE,
                        "sample index {index} ignores earlier samples"
                    );
                }
            }
        }
    }
});

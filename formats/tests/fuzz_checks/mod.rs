//! What every reader of a user's file must do with any bytes at all, one function per
//! reader: never panic, give errors of one line that name the file, and return only what
//! holds together (counts that match shapes, labels inside their classes, round trips
//! that give back the same bits). Shared by the seeded mutation test of this crate
//! (`tests/mutations.rs`, stable toolchain, every test run) and the coverage-guided fuzz
//! targets (`fuzz/fuzz_targets/`, nightly, `scripts/fuzz.sh`), so both check the same
//! properties. Each function panics when a property fails, and returns whether the
//! reader accepted the input (the mutation test requires that of every seed, so that
//! the mutations start from files that get past the readers' checks).

#![allow(dead_code)]

use std::path::Path;

use taks_formats::FormatError;

/// An error message fit for a user: one line, naming one of `paths` (the file it is
/// about).
fn one_line(e: impl std::fmt::Display, paths: &[&str]) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error on several lines: {msg:?}");
    assert!(
        paths.iter().any(|p| msg.contains(p)),
        "error names no file ({paths:?}): {msg:?}"
    );
}

/// Class names as a reader returns them: none twice.
fn distinct(classes: &[String]) {
    let mut sorted = classes.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), classes.len(), "classes repeat");
}

pub mod idx {
    //! Checks of the `idx` reader.

    use super::*;
    use taks_formats::idx;

    const IMAGES: &str = "fuzz-images.idx";
    const LABELS: &str = "fuzz-labels.idx";

    fn parse(bytes: &[u8], rank: usize, path: &str) -> Option<idx::IdxArray> {
        match idx::parse(bytes, rank, Path::new(path)) {
            Ok(array) => {
                assert_eq!(array.dims.len(), rank);
                // Accepted bytes are exactly the array written back.
                assert_eq!(idx::encode(&array.dims, &array.values), bytes);
                Some(array)
            }
            Err(e) => {
                one_line(&e, &[path]);
                None
            }
        }
    }

    /// The IDX reader of MNIST-like sets (`taks_formats::idx`). Checks, for any bytes, that:
    /// - `parse` as rank 1 and as rank 3 never panics, and accepts only bytes that are
    ///   exactly the header it reports followed by exactly the values its dimensions need;
    /// - when the input (after its first byte, which gives where to cut) splits into an
    ///   image array and a label array that both parse, `decode_pair` with 10 classes never
    ///   panics, and what it returns agrees with them (labels below 10, pixels in [0, 1]);
    /// - `gunzip_if_gzip` never panics, never returns more than `MAX_DECOMPRESSED` bytes,
    ///   passes non-gzip bytes through unchanged, and its output goes through `parse` too;
    /// - every error is one line that names the file.
    ///
    /// Run under `-malloc_limit_mb`, an allocation driven by a lying header is a crash too.
    pub fn check(data: &[u8]) -> bool {
        let mut accepted = parse(data, 1, LABELS).is_some() | parse(data, 3, IMAGES).is_some();

        if let Some((&cut, rest)) = data.split_first() {
            let (images, labels) = rest.split_at((cut as usize).min(rest.len()));
            if let (Some(img), Some(lab)) = (parse(images, 3, IMAGES), parse(labels, 1, LABELS)) {
                let n = img.dims[0];
                match idx::decode_pair(img, lab, 10, Path::new(IMAGES), Path::new(LABELS)) {
                    Ok((pixels, labels, rows, cols)) => {
                        accepted = true;
                        assert_eq!(labels.len(), n);
                        assert_eq!(pixels.len(), n * rows * cols);
                        assert!(labels.iter().all(|&l| l < 10));
                        assert!(pixels.iter().all(|p| (0.0..=1.0).contains(p)));
                    }
                    Err(e) => one_line(&e, &[IMAGES, LABELS]),
                }
            }
        }

        match idx::gunzip_if_gzip(data.to_vec(), Path::new(IMAGES)) {
            Ok(out) => {
                assert!(out.len() <= idx::MAX_DECOMPRESSED);
                if !data.starts_with(&[0x1f, 0x8b]) {
                    assert_eq!(out, data);
                }
                accepted |= parse(&out, 1, LABELS).is_some() | parse(&out, 3, IMAGES).is_some();
            }
            Err(e) => one_line(&e, &[IMAGES]),
        }
        accepted
    }
}

pub mod cifar {
    //! Checks of the `cifar` reader.

    use super::*;
    use taks_formats::cifar::{self, PIXELS, Variant};

    const PATH: &str = "fuzz_batch.bin";
    /// Samples already in the outputs before the file is parsed.
    const BEFORE: usize = 2;

    /// The CIFAR-10 / CIFAR-100 binary reader (`taks_formats::cifar::parse`), with both
    /// variants. Checks, for any bytes, that `parse` never panics; that on success it
    /// appended one label below the class count and the 3072 pixel bytes of every record,
    /// and nothing else; that on failure it left the outputs as they were; and that every
    /// error is one line naming the file. The outputs start non-empty, so the sample
    /// index in a label error must count the samples already there.
    pub fn check(data: &[u8]) -> bool {
        let mut accepted = false;
        for (variant, label_bytes) in [(Variant::Cifar10, 1), (Variant::Cifar100, 2)] {
            let mut pixels = vec![7u8; BEFORE * PIXELS];
            let mut labels = vec![1u32; BEFORE];
            match cifar::parse(data, variant, Path::new(PATH), &mut pixels, &mut labels) {
                Ok(()) => {
                    accepted = true;
                    // What was there before is untouched.
                    assert!(
                        labels[..BEFORE].iter().all(|&l| l == 1),
                        "earlier labels changed"
                    );
                    assert!(
                        pixels[..BEFORE * PIXELS].iter().all(|&p| p == 7),
                        "earlier pixels changed"
                    );
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
                    assert!(
                        pixels.len() == BEFORE * PIXELS && pixels.iter().all(|&p| p == 7),
                        "pixels changed by a failed parse"
                    );
                    one_line(&e, &[PATH]);
                    if let FormatError::LabelOutOfRange { index, .. } = e {
                        assert!(
                            index >= BEFORE,
                            "sample index {index} ignores earlier samples"
                        );
                    }
                }
            }
        }
        accepted
    }
}

pub mod checkpoint {
    //! Checks of the `checkpoint` reader.

    use super::*;
    use taks_formats::checkpoint::{Checkpoint, Values};

    const PATH: &str = "fuzz/checkpoint.safetensors";

    fn check_error(e: &FormatError) {
        one_line(e, &[PATH]);
    }

    /// Values as bits, so that equality is exact for every f32.
    fn bits(values: &Values) -> (bool, Vec<u32>) {
        match values {
            Values::F32(v) => (true, v.iter().map(|x| x.to_bits()).collect()),
            Values::U32(v) => (false, v.clone()),
        }
    }

    fn same(a: &Checkpoint, b: &Checkpoint) -> bool {
        // The state as text: unlike `Value`'s `==`, it tells -0.0 from 0.0.
        let (state_a, state_b) = (a.state.to_string(), b.state.to_string());
        state_a == state_b
            && a.tensors.len() == b.tensors.len()
            && a.tensors
                .iter()
                .zip(&b.tensors)
                .all(|((na, ta), (nb, tb))| {
                    na == nb && ta.shape == tb.shape && bits(&ta.values) == bits(&tb.values)
                })
    }

    /// The run checkpoint container (`taks_formats::checkpoint`, SafeTensors with
    /// metadata). Checks, for any bytes, that `Checkpoint::decode` never panics and gives
    /// one-line errors naming the file; and that whatever it accepts
    /// - has a JSON object as its state and tensors whose value count matches their shape,
    /// - round-trips: `encode` then `decode` gives the same state and the same tensors,
    ///   bit for bit (f32 compared by bits, so NaN payloads and -0.0 count),
    /// - hands every tensor out through `take_f32`/`take_u32` with its own shape, and
    ///   refuses it with the other type, a different shape or once it has been taken.
    pub fn check(data: &[u8]) -> bool {
        let path = Path::new(PATH);
        let checkpoint = match Checkpoint::decode(data, path) {
            Ok(c) => c,
            Err(e) => {
                check_error(&e);
                return false;
            }
        };
        assert!(checkpoint.state.is_object());
        for t in checkpoint.tensors.values() {
            let count: usize = t.shape.iter().product();
            assert_eq!(bits(&t.values).1.len(), count);
        }

        let again = Checkpoint::decode(&checkpoint.encode(), path)
            .unwrap_or_else(|e| panic!("an accepted checkpoint, re-encoded, is refused: {e}"));
        assert!(
            same(&checkpoint, &again),
            "round trip changed the checkpoint"
        );

        let mut taken = checkpoint.clone();
        for (name, tensor) in &checkpoint.tensors {
            let shape = &tensor.shape;
            let (is_f32, want) = bits(&tensor.values);
            // The wrong type, and a shape one element longer, are refused (on a copy:
            // a refused take still removes the tensor).
            let mut other = checkpoint.clone();
            let wrong = if is_f32 {
                other.take_u32(name, shape, path).map(drop)
            } else {
                other.take_f32(name, shape, path).map(drop)
            };
            check_error(&wrong.expect_err("a tensor taken with the wrong type"));
            let mut longer = shape.clone();
            longer.push(1);
            let mut other = checkpoint.clone();
            check_error(
                &other
                    .take_f32(name, &longer, path)
                    .expect_err("a wrong shape"),
            );

            let got = if is_f32 {
                let v = taken
                    .take_f32(name, shape, path)
                    .expect("its own tensor, type and shape");
                Values::F32(v)
            } else {
                Values::U32(
                    taken
                        .take_u32(name, shape, path)
                        .expect("its own tensor, type and shape"),
                )
            };
            assert_eq!(bits(&got).1, want);
            check_error(
                &taken
                    .take_f32(name, shape, path)
                    .expect_err("a tensor taken twice"),
            );
        }
        assert!(taken.tensors.is_empty());
        true
    }
}

pub mod csv_table {
    //! Checks of the `csv_table` reader.

    use super::*;
    use taks_formats::csv_table;

    const PATH: &str = "fuzz_table.csv";

    /// The CSV table reader of `taks audit` (`taks_formats::csv_table::parse`). Checks, for
    /// any bytes, that `parse` never panics; that on success every feature value is finite,
    /// there is one row of values per label, every label indexes a class and the classes
    /// are distinct; and that every error is one line naming the file.
    pub fn check(data: &[u8]) -> bool {
        match csv_table::parse(data, "label", Path::new(PATH)) {
            Ok(table) => {
                assert!(!table.features.is_empty());
                assert!(table.rows() > 0);
                assert_eq!(table.values.len(), table.rows() * table.features.len());
                assert!(table.values.iter().all(|v| v.is_finite()));
                assert!(
                    table
                        .labels
                        .iter()
                        .all(|&l| (l as usize) < table.classes.len())
                );
                distinct(&table.classes);
                true
            }
            Err(e) => {
                one_line(&e, &[PATH]);
                false
            }
        }
    }
}

pub mod npy {
    //! Checks of the `npy` reader.

    use super::*;
    use taks_formats::{labels, npy};

    const PATH: &str = "fuzz_features.npy";

    /// The NumPy readers of `taks audit FEATURES.npy --labels LABELS`
    /// (`taks_formats::npy::parse_matrix`, `parse_labels`, and the text labels of
    /// `taks_formats::labels::parse_names`). Checks, for any bytes, that none panics or
    /// allocates beyond what the bytes hold; that a matrix has rows * cols finite values;
    /// that names give one in-range class index per line and distinct classes; and that
    /// every error is one line naming the file.
    pub fn check(data: &[u8]) -> bool {
        let path = Path::new(PATH);
        let mut accepted = false;
        match npy::parse_matrix(data, path) {
            Ok(m) => {
                accepted = true;
                assert!(m.rows > 0 && m.cols > 0);
                assert_eq!(m.values.len(), m.rows * m.cols);
                assert!(m.values.iter().all(|v| v.is_finite()));
            }
            Err(e) => one_line(e, &[PATH]),
        }
        match npy::parse_labels(data, path) {
            Ok(_) => accepted = true,
            Err(e) => one_line(e, &[PATH]),
        }
        match labels::parse_names(data, path) {
            Ok((classes, labels)) => {
                accepted = true;
                assert!(!labels.is_empty());
                assert!(labels.iter().all(|&l| (l as usize) < classes.len()));
                distinct(&classes);
            }
            Err(e) => one_line(e, &[PATH]),
        }
        accepted
    }

    /// The same bytes as a file at `path`, through the readers that stream one (the
    /// training folders' `train.npy`: `npy::read_file_header`, which reads a header of
    /// any claimed length without reading the values, and `npy::read_matrix`, which then
    /// reads the values in chunks): each agrees with its in-memory twin on these bytes,
    /// the same header or matrix or an error from both, and every error is one line
    /// naming the file. Accepted: the matrix was read.
    pub fn file(data: &[u8], path: &Path) -> bool {
        std::fs::write(path, data).expect("writing the input");
        let name = path.display().to_string();
        agree(
            "header",
            npy::read_file_header(path),
            npy::parse_header(data, path),
            &name,
        );
        agree(
            "matrix",
            npy::read_matrix(path),
            npy::parse_matrix(data, path),
            &name,
        )
    }

    /// Whether both readers accepted; panics where one did and the other did not, or
    /// where they read different things.
    fn agree<T: PartialEq + std::fmt::Debug>(
        what: &str,
        streamed: Result<T, FormatError>,
        in_memory: Result<T, FormatError>,
        name: &str,
    ) -> bool {
        match (streamed, in_memory) {
            (Ok(a), Ok(b)) => {
                assert!(a == b, "the {what} streamed differs from the one in memory");
                true
            }
            (Err(a), Err(b)) => {
                one_line(a, &[name]);
                one_line(b, &[name]);
                false
            }
            (a, b) => panic!("the {what}: streamed {a:?}, in memory {b:?}"),
        }
    }
}

pub mod pickle {
    //! Checks of the pickle reader inside a torch `.pth` (`taks_formats::pickle::read`).

    /// The safe pickle reader, which builds values and runs nothing: for any bytes it
    /// never panics (a pickle nested deeper than its limit included) and its error is
    /// one line (the `.pth` reader puts the file's name before it).
    pub fn check(data: &[u8]) -> bool {
        match taks_formats::pickle::read(data) {
            Ok(_) => true,
            Err(e) => {
                assert!(!e.contains('\n'), "error on several lines: {e:?}");
                assert!(!e.is_empty(), "an empty error");
                false
            }
        }
    }
}

pub mod state_dict {
    //! Checks of the state_dict readers of pretrained weights
    //! (`taks_formats::state_dict::safetensors`, `taks_formats::pth::read`).

    use super::*;
    use taks_formats::weights::{StateDict, Weight};

    const SAFETENSORS: &str = "fuzz-weights.safetensors";

    /// Every floating tensor holds as many values as its shape has elements (true: the
    /// input was accepted).
    fn holds_together(dict: &StateDict) -> bool {
        for (name, weight) in &dict.tensors {
            if let Weight::Float { shape, values } = weight {
                let count: usize = shape.iter().product();
                assert_eq!(
                    values.len(),
                    count,
                    "{name}: {shape:?} with {} values",
                    values.len()
                );
            }
        }
        true
    }

    /// A SafeTensors state_dict from any bytes: no panic, a one-line error naming the
    /// file, and tensors whose values match their shapes.
    pub fn safetensors(data: &[u8]) -> bool {
        match taks_formats::state_dict::safetensors(data, Path::new(SAFETENSORS)) {
            Ok(dict) => holds_together(&dict),
            Err(e) => {
                one_line(e, &[SAFETENSORS]);
                false
            }
        }
    }

    /// A torch `.pth` archive from any bytes, written to `path` first (the reader opens
    /// a file: a zip archive is read by seeking): the same properties.
    pub fn pth(data: &[u8], path: &Path) -> bool {
        std::fs::write(path, data).expect("writing the input");
        let name = path.display().to_string();
        match taks_formats::pth::read(path) {
            Ok(dict) => holds_together(&dict),
            Err(e) => {
                one_line(e, &[&name]);
                false
            }
        }
    }
}

pub mod image {
    //! Checks of the image-folder reader (`taks_formats::image_folder`), on files given
    //! in memory as the browser's audit page gives them.

    use taks_formats::image_folder::{self, Fit};

    /// Any bytes as one image file of a class folder, beside a good one of another
    /// class: the scan never panics and either reads the file's header or skips it
    /// with a one-line reason; decoding what it read, resized and as torchvision's
    /// centre crop, never panics and gives `C * H * W` bytes per decoded file, the
    /// others skipped with a one-line reason; the good file is read and decoded every
    /// time. Accepted: the file was decoded each way.
    pub fn check(data: &[u8], good: &[u8]) -> bool {
        let entries = vec![
            ("cat/fuzz.png".to_string(), data.to_vec()),
            ("dog/good.png".to_string(), good.to_vec()),
        ];
        let scan = match image_folder::scan_memory(entries) {
            Ok(scan) => scan,
            Err(e) => panic!("two class folders refused: {e}"),
        };
        assert_eq!(scan.classes, ["cat", "dog"]);
        assert_eq!(scan.files.len() + scan.skipped.len(), 2);
        let read = |files: &[image_folder::ImageFile], id: &str| files.iter().any(|f| f.id == id);
        assert!(
            read(&scan.files, "dog/good.png"),
            "the good file was not read"
        );
        let mut accepted = read(&scan.files, "cat/fuzz.png");
        for skipped in &scan.skipped {
            assert!(!skipped.reason.contains('\n'), "{:?}", skipped.reason);
        }
        for (shape, fit) in [
            ([3, 4, 5], Fit::Resize),
            ([1, 6, 6], Fit::Resize),
            ([3, 4, 4], Fit::CentreCrop { resize: 5 }),
        ] {
            let decoded = image_folder::decode_as(scan.files.clone(), shape, fit);
            let per_file: usize = shape.iter().product();
            assert_eq!(decoded.pixels.len(), decoded.files.len() * per_file);
            assert_eq!(
                decoded.files.len() + decoded.skipped.len(),
                scan.files.len()
            );
            for skipped in &decoded.skipped {
                assert!(!skipped.reason.contains('\n'), "{:?}", skipped.reason);
            }
            assert!(
                read(&decoded.files, "dog/good.png"),
                "the good file was not decoded"
            );
            accepted &= read(&decoded.files, "cat/fuzz.png");
        }
        accepted
    }
}

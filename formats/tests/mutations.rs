//! Every reader of a user's file against 10,000 mutations of each of its committed seeds
//! (`tests/seeds/READER/`): the properties of `fuzz_checks` hold for every input, so no
//! hostile file makes a reader panic, give an error of several lines or return what
//! does not hold together; and every seed itself is accepted, so the mutations start
//! past the readers' checks. The mutations are drawn from a fixed seed, so a failure
//! names the input that caused it and repeats on every run; the failing input is
//! written to the system's temporary folder for `fuzz/` to replay. Memory is bounded
//! too: the test binary's allocator counts what each thread holds, and an input whose
//! reading held more than [`MEMORY_BOUND`] at once fails by name, so a lying length
//! that makes a reader allocate gigabytes for a small file is caught where it happens. An
//! abort (an allocation the machine refuses, a stack overflow) still ends the test
//! binary unnamed; `scripts/fuzz.sh`, under libFuzzer's memory limits, is where those
//! show. This is the stable toolchain's share of the fuzzing; `scripts/fuzz.sh` runs
//! the same checks coverage-guided (nightly).

mod fuzz_checks;
mod support;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use support::crate_dir;

/// The most a reader may hold at once while it reads one mutated input, counted on its
/// own thread by `allocation_counter` (the test binary's allocator): the seeds are a few
/// kilobytes, and every reader checks a header's sizes against the bytes it has before
/// it allocates for them (the most any input held on 2026-12-03 was 1.0 MiB, a NumPy
/// file read as a whole), so 16 MiB already means a length was believed.
const MEMORY_BOUND: u64 = 16 << 20;

/// Mutated inputs per seed file.
const MUTATIONS: usize = 10_000;

/// SplitMix64: a small generator whose stream is fixed by its seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values that sit on the edges parsers get wrong: zero, one, the sign bit, all ones.
const EDGES: [u64; 8] = [0, 1, 0x7f, 0x80, 0xff, 0x7fff_ffff, 0xffff_ffff, u64::MAX];

/// One mutated copy of `seed`: one to four edits, each a bit flip, a byte set to an
/// edge or random value, an integer of 2, 4 or 8 bytes overwritten with an edge value
/// (a length or a dimension, in most headers), bytes inserted, a range deleted or
/// repeated, or the input cut short.
fn mutate(seed: &[u8], draw: &mut Draw) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + draw.below(4) {
        let len = data.len();
        match draw.below(8) {
            0 if len > 0 => {
                let at = draw.below(len);
                data[at] ^= 1 << draw.below(8);
            }
            1 if len > 0 => {
                let at = draw.below(len);
                data[at] = if draw.below(2) == 0 {
                    EDGES[draw.below(EDGES.len())] as u8
                } else {
                    draw.next() as u8
                };
            }
            2 if len > 0 => {
                let width = [2, 4, 8][draw.below(3)].min(len);
                let at = draw.below(len - width + 1);
                let value = EDGES[draw.below(EDGES.len())].to_le_bytes();
                data[at..at + width].copy_from_slice(&value[..width]);
            }
            3 => {
                let at = draw.below(len + 1);
                let count = 1 + draw.below(16);
                let bytes: Vec<u8> = (0..count).map(|_| draw.next() as u8).collect();
                data.splice(at..at, bytes);
            }
            4 if len > 0 => {
                let at = draw.below(len);
                let end = (at + 1 + draw.below(32)).min(len);
                data.drain(at..end);
            }
            5 if len > 0 => {
                let at = draw.below(len);
                let end = (at + 1 + draw.below(64)).min(len);
                let copy = data[at..end].to_vec();
                let to = draw.below(len + 1);
                data.splice(to..to, copy);
            }
            6 if len > 0 => data.truncate(draw.below(len)),
            _ => {
                // A random byte appended: trailing data after a complete file.
                data.push(draw.next() as u8);
            }
        }
    }
    data
}

/// The committed seed files of `reader`, by name.
fn seeds(reader: &str) -> Vec<(String, Vec<u8>)> {
    let dir = crate_dir().join("tests/seeds").join(reader);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).expect("a seed"))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    files
}

/// A scratch file of this test process.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("taks-mutations-{}-{name}", std::process::id()))
}

/// `check` on every seed of `reader` as it is, then on `MUTATIONS` mutations of each.
/// The first input that fails is written out and named in the failure.
fn run(reader: &str, check: impl Fn(&[u8]) -> bool) {
    for (index, (name, seed)) in seeds(reader).into_iter().enumerate() {
        let mut draw = Draw(0x7a6b_0000 + index as u64);
        for i in 0..=MUTATIONS {
            let input = if i == 0 {
                seed.clone()
            } else {
                mutate(&seed, &mut draw)
            };
            let mut outcome = Ok(false);
            let peak = allocation_counter::measure(|| {
                outcome = catch_unwind(AssertUnwindSafe(|| check(&input)));
            })
            .bytes_max;
            let outcome = match outcome {
                Ok(_) if peak > MEMORY_BOUND => Err(format!(
                    "held {peak} bytes at once, over the bound of {MEMORY_BOUND}"
                )),
                Ok(false) if i == 0 => panic!("{reader}: the seed {name} itself is refused"),
                Ok(_) => Ok(()),
                Err(panic) => Err(panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()),
            };
            match outcome {
                Ok(()) => {}
                Err(message) => {
                    let kept = scratch(&format!("{reader}-{name}-{i}"));
                    std::fs::write(&kept, &input).expect("keeping the failing input");
                    panic!(
                        "{reader}: mutation {i} of seed {name} ({} bytes, kept at {}): {message}",
                        input.len(),
                        kept.display()
                    );
                }
            }
        }
    }
}

#[test]
fn idx_files() {
    run("idx", fuzz_checks::idx::check);
}

#[test]
fn cifar_batches() {
    run("cifar", fuzz_checks::cifar::check);
}

#[test]
fn checkpoints() {
    run("checkpoint", fuzz_checks::checkpoint::check);
}

#[test]
fn csv_tables() {
    run("csv_table", fuzz_checks::csv_table::check);
}

#[test]
fn npy_files_and_label_lists() {
    let path = scratch("features.npy");
    run("npy", |data| {
        let in_memory = fuzz_checks::npy::check(data);
        fuzz_checks::npy::file(data, &path) || in_memory
    });
    let _ = std::fs::remove_file(path);
}

#[test]
fn pickles() {
    run("pickle", fuzz_checks::pickle::check);
}

#[test]
fn safetensors_weights() {
    run("safetensors", fuzz_checks::state_dict::safetensors);
}

#[test]
fn torch_archives() {
    let path = scratch("weights.pth");
    run("pth", |data| fuzz_checks::state_dict::pth(data, &path));
    let _ = std::fs::remove_file(path);
}

#[test]
fn image_files() {
    let good = std::fs::read(crate_dir().join("tests/seeds/image/rgb.png")).expect("the PNG seed");
    run("image", |data| fuzz_checks::image::check(data, &good));
}

/// The harness itself: a check that fails on some mutation is caught and named, its
/// input kept (the default panic hook prints the message once more as it happens), so a
/// reader that panicked on a mutation could not pass unseen; a refused seed fails; and
/// the mutations are many distinct inputs, shorter and longer than the seed.
#[test]
fn the_harness_catches_a_failing_check_and_mutates() {
    // A check the seeds pass and some mutation fails (random bytes are inserted).
    let caught = catch_unwind(|| {
        run("csv_table", |data| {
            assert!(!data.contains(&b'#'), "a hash");
            true
        });
    });
    let message = caught.expect_err("a check that fails on some mutation");
    let message = message.downcast_ref::<String>().expect("a message");
    assert!(
        message.contains("csv_table: mutation ")
            && !message.contains("mutation 0 ")
            && message.contains("a hash"),
        "{message}"
    );
    // The failing input is kept where the message says.
    let kept = message
        .split("kept at ")
        .nth(1)
        .and_then(|rest| rest.split("): ").next())
        .expect("the kept input's path");
    let input = std::fs::read(kept).expect("the kept input");
    assert!(input.contains(&b'#'));
    std::fs::remove_file(kept).expect("removing the kept input");

    // A reader that holds more than the bound for some input fails by name, though it
    // returns; one that holds the bound's worth in pieces freed as it goes passes.
    let caught = catch_unwind(|| {
        run("csv_table", |data| {
            if data.contains(&b'#') {
                std::hint::black_box(vec![1u8; MEMORY_BOUND as usize + 1]);
            }
            for _ in 0..4 {
                std::hint::black_box(vec![1u8; MEMORY_BOUND as usize / 2]);
            }
            true
        });
    });
    let message = caught.expect_err("a check that holds too much for some mutation");
    let message = message.downcast_ref::<String>().expect("a message");
    assert!(message.contains("over the bound of"), "{message}");
    let kept = message
        .split("kept at ")
        .nth(1)
        .and_then(|rest| rest.split("): ").next())
        .expect("the kept input's path");
    std::fs::remove_file(kept).expect("removing the kept input");

    // A reader that refuses its own seed is a failure, not a pass.
    let refused = catch_unwind(|| run("csv_table", |_| false));
    let message = refused.expect_err("a seed refused");
    let message = message.downcast_ref::<String>().expect("a message");
    assert!(message.contains("itself is refused"), "{message}");

    let seed = b"label,x\ncat,1.5\ndog,2.5\n";
    let mut draw = Draw(1);
    let inputs: std::collections::BTreeSet<Vec<u8>> =
        (0..1000).map(|_| mutate(seed, &mut draw)).collect();
    // Small edits of a short seed collide now and then (882 distinct here).
    assert!(
        inputs.len() > 800,
        "only {} distinct inputs of 1000",
        inputs.len()
    );
    assert!(
        inputs.iter().any(|i| i.len() < seed.len()),
        "nothing cut or deleted"
    );
    assert!(
        inputs.iter().any(|i| i.len() > seed.len()),
        "nothing inserted"
    );
}

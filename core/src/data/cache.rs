//! The decoded cache: a folder's images, decoded and resized once, kept in a file that
//! later epochs and later runs map from disk instead of holding in memory.
//!
//! Decoded bytes that fit the memory budget (`--memory-budget`, 500 MB by default) stay in
//! memory and nothing is written. Larger ones are decoded a block at a time into
//! `<cache dir>/<key>.bin`, and every batch reads its samples from that file: the pages
//! are the kernel's page cache, kept while memory allows and dropped under pressure,
//! and the process's own (anonymous) memory does not grow with n. The key hashes every
//! file's id, size, modification time and class with the input shape and the format
//! version, so a changed, added or removed file, another size or a new taks gives a new
//! key: a stale cache is never read, only left behind.
//!
//! The file is written as `<key>.<process id>.partial` (two audits of one folder at once
//! each write their own) and renamed when complete, with its magic written last; on
//! reading, the header, the length and a checksum of the pixels are checked, and a file
//! that fails (damaged, truncated, another version) is rebuilt with a note. A write that fails (a full disk) removes the partial file, says so, and
//! decodes into memory instead: nothing is lost but the cache.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::samples::{ByteSource, Samples};
use crate::formats::image_folder::{self, Fit, ImageFile, Skipped};
use crate::{Error, Result};

/// Bumped whenever the file layout or the decoding changes.
const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"TAKSDEC\0";
/// magic, version, key, channels, height, width, kept, files, footer length, checksum.
const HEADER: usize = 8 + 4 + 8 + 4 * 3 + 8 + 8 + 8 + 8;
/// About how many bytes of decoded images one block of the build holds.
const BLOCK_BYTES: usize = 64 << 20;

/// The default memory budget, in megabytes (`taks audit --memory-budget`).
pub const DEFAULT_BUDGET_MB: u64 = 500;

/// Where the cache lives and when it is used.
#[derive(Debug, Clone, PartialEq)]
pub struct Cache {
    pub dir: PathBuf,
    /// Decoded bytes up to this stay in memory.
    pub budget_bytes: u64,
}

impl Cache {
    /// The default folder and budget.
    pub fn with_defaults() -> Self {
        Cache {
            dir: Self::default_dir(),
            budget_bytes: DEFAULT_BUDGET_MB * 1_000_000,
        }
    }

    /// `$XDG_CACHE_HOME/taks/decoded`, else `~/.cache/taks/decoded`, else a folder in the
    /// system's temporary directory.
    pub fn default_dir() -> PathBuf {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        base.join("taks").join("decoded")
    }
}

/// Decoded images as samples, with the files they came from and those skipped.
pub struct DecodedFolder {
    pub samples: Samples,
    pub files: Vec<ImageFile>,
    pub skipped: Vec<Skipped>,
}

/// Decode `files` at `[channels, height, width]`: in memory when they fit `cache`'s
/// budget (or there is no cache), else through the cache file. `note` hears what the
/// cache did.
pub fn decode(
    files: Vec<ImageFile>,
    [channels, height, width]: [usize; 3],
    fit: Fit,
    cache: Option<&Cache>,
    note: &mut dyn FnMut(String),
) -> Result<DecodedFolder> {
    let size = channels * height * width;
    let in_memory = |files: Vec<ImageFile>| {
        let d = image_folder::decode_as(files, [channels, height, width], fit);
        DecodedFolder {
            samples: Samples::from_bytes(d.pixels, size),
            files: d.files,
            skipped: d.skipped,
        }
    };
    let Some(cache) = cache.filter(|c| (files.len() as u64) * size as u64 > c.budget_bytes) else {
        return Ok(in_memory(files));
    };
    let shape = [channels, height, width];
    let key = key(&files, shape, fit);
    let path = cache.dir.join(format!("{key:016x}.bin"));
    if path.exists() {
        match open(&path, key, shape, &files, Pixels::Check) {
            Ok((bytes, kept)) => {
                note(format!(
                    "read the decoded images from the cache {}",
                    path.display()
                ));
                return Ok(split_files(files, kept, bytes, size));
            }
            Err(why) => {
                note(format!(
                    "the decoded cache {} is unusable ({why}): rebuilt",
                    path.display()
                ));
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    match build(&path, key, shape, fit, &files) {
        Ok(()) => {
            // Just hashed while written: reading the pixels back to check them again
            // would only read the whole file once more.
            let (bytes, kept) = open(&path, key, shape, &files, Pixels::Trust)
                .map_err(|why| Error::Config(format!("{}: just written, {why}", path.display())))?;
            note(format!(
                "decoded {} images into the cache {} ({:.0} MB, over the {:.0} MB memory budget)",
                files.len(),
                path.display(),
                bytes.len() as f64 / 1e6,
                cache.budget_bytes as f64 / 1e6
            ));
            Ok(split_files(files, kept, bytes, size))
        }
        Err(why) => {
            note(format!(
                "could not write the decoded cache {} ({why}); decoding into memory instead",
                path.display()
            ));
            Ok(in_memory(files))
        }
    }
}

/// The samples of a cache file and the files it holds (`kept[i]`: whether file `i`
/// decoded), the others skipped with their reasons.
fn split_files(
    files: Vec<ImageFile>,
    kept: Vec<Option<String>>,
    bytes: CachedPixels,
    size: usize,
) -> DecodedFolder {
    let mut out = DecodedFolder {
        samples: Samples::from_bytes(bytes, size),
        files: Vec::with_capacity(files.len()),
        skipped: Vec::new(),
    };
    for (file, failure) in files.into_iter().zip(kept) {
        match failure {
            None => out.files.push(file),
            Some(reason) => out.skipped.push(Skipped {
                id: file.id,
                reason,
            }),
        }
    }
    out
}

/// FNV-1a over everything that decides the decoded bytes.
fn key(files: &[ImageFile], shape: [usize; 3], fit: Fit) -> u64 {
    let mut h = Fnv::new();
    h.add(&VERSION.to_le_bytes());
    for d in shape {
        h.add(&(d as u64).to_le_bytes());
    }
    // A resized folder keeps the key it had before crops existed.
    if let Fit::CentreCrop { resize } = fit {
        h.add(b"centre-crop");
        h.add(&resize.to_le_bytes());
    }
    for f in files {
        h.add(f.id.as_bytes());
        h.add(&[0]);
        h.add(&f.label.to_le_bytes());
        h.add(&f.bytes.to_le_bytes());
        h.add(&f.modified_ns.to_le_bytes());
    }
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A fast checksum of the pixels, eight bytes at a time.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0x9E37_79B9_7F4A_7C15u64 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(23);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Decode `files` block by block into `path` (via [`partial_path`]).
fn build(
    path: &Path,
    key: u64,
    shape: [usize; 3],
    fit: Fit,
    files: &[ImageFile],
) -> std::result::Result<(), String> {
    let [channels, height, width] = shape;
    let size = channels * height * width;
    std::fs::create_dir_all(path.parent().expect("a file in a folder"))
        .map_err(|e| e.to_string())?;
    // Named for this process: two audits of one folder at once each write their own.
    let partial = partial_path(path);
    let written = (|| -> std::io::Result<()> {
        let mut out = BufWriter::new(File::create(&partial)?);
        out.write_all(&[0u8; HEADER])?;
        let block = (BLOCK_BYTES / size).max(1);
        let mut failures: Vec<(u64, String)> = Vec::new();
        let mut kept = 0u64;
        // Pixels are hashed in BLOCK_BYTES pieces from the start, as `open` reads them.
        let mut pending: Vec<u8> = Vec::new();
        let mut sums = Vec::new();
        for (b, part) in files.chunks(block).enumerate() {
            let decoded = image_folder::decode_as(part.to_vec(), shape, fit);
            pending.extend_from_slice(&decoded.pixels);
            while pending.len() >= BLOCK_BYTES {
                sums.push(checksum(&pending[..BLOCK_BYTES]));
                out.write_all(&pending[..BLOCK_BYTES])?;
                pending.drain(..BLOCK_BYTES);
            }
            kept += decoded.files.len() as u64;
            // Skipped ids are in order: find each one's index within the block.
            let mut at = 0;
            for s in decoded.skipped {
                while part[at].id != s.id {
                    at += 1;
                }
                failures.push(((b * block + at) as u64, s.reason));
                at += 1;
            }
        }
        if !pending.is_empty() {
            sums.push(checksum(&pending));
            out.write_all(&pending)?;
        }
        let mut footer = Vec::new();
        for (index, reason) in &failures {
            footer.extend_from_slice(&index.to_le_bytes());
            footer.extend_from_slice(&(reason.len() as u64).to_le_bytes());
            footer.extend_from_slice(reason.as_bytes());
        }
        out.write_all(&footer)?;
        let mut file = out.into_inner().map_err(|e| e.into_error())?;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(&[0u8; 8]);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&key.to_le_bytes());
        for d in shape {
            header.extend_from_slice(&(d as u32).to_le_bytes());
        }
        header.extend_from_slice(&kept.to_le_bytes());
        header.extend_from_slice(&(files.len() as u64).to_le_bytes());
        header.extend_from_slice(&(footer.len() as u64).to_le_bytes());
        header.extend_from_slice(&combine(&sums).to_le_bytes());
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header)?;
        file.sync_all()?;
        // The magic last: a file without it was never finished.
        file.seek(SeekFrom::Start(0))?;
        file.write_all(MAGIC)?;
        file.sync_all()?;
        std::fs::rename(&partial, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        e.to_string()
    })
}

/// Where this process writes the cache at `path` before renaming it into place.
fn partial_path(path: &Path) -> PathBuf {
    path.with_extension(format!("{}.partial", std::process::id()))
}

/// One checksum from those of the pixels' [`BLOCK_BYTES`] pieces.
fn combine(blocks: &[u64]) -> u64 {
    let mut h = Fnv::new();
    for b in blocks {
        h.add(&b.to_le_bytes());
    }
    h.0
}

/// A cache file's pixels, read as batches need them.
#[derive(Debug)]
struct CachedPixels {
    file: File,
    len: usize,
    failed: Mutex<Option<String>>,
}

impl ByteSource for CachedPixels {
    fn len(&self) -> usize {
        self.len
    }

    fn read_at(&self, offset: usize, out: &mut [u8]) {
        if let Err(e) = read_exact_at(&self.file, (HEADER + offset) as u64, out) {
            out.fill(0);
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert_with(|| format!("reading the decoded cache: {e}"));
        }
    }

    fn error(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, out, offset)
}

#[cfg(not(any(unix, windows)))]
fn read_exact_at(_: &File, _: u64, _: &mut [u8]) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut offset: u64, mut out: &mut [u8]) -> std::io::Result<()> {
    while !out.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, out, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                out = &mut out[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// Whether [`open`] reads the pixels to check their checksum.
#[derive(Clone, Copy, PartialEq)]
enum Pixels {
    Check,
    /// The caller has just written and hashed them.
    Trust,
}

/// Open and check the cache at `path`: its pixels and, per file, `None` when it decoded
/// or the reason it did not.
fn open(
    path: &Path,
    key: u64,
    shape: [usize; 3],
    files: &[ImageFile],
    pixels: Pixels,
) -> std::result::Result<(CachedPixels, Vec<Option<String>>), String> {
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let total = file.metadata().map_err(|e| e.to_string())?.len();
    let mut header = [0u8; HEADER];
    if total < HEADER as u64 || file.read_exact(&mut header).is_err() || &header[..8] != MAGIC {
        return Err("not a finished taks cache file".into());
    }
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != VERSION {
        return Err(format!(
            "written by cache version {version}, this taks reads {VERSION}"
        ));
    }
    let stored_shape = [
        u32_at(20) as usize,
        u32_at(24) as usize,
        u32_at(28) as usize,
    ];
    if u64_at(12) != key || stored_shape != shape || u64_at(40) != files.len() as u64 {
        return Err("its key, shape or file count does not match the folder".into());
    }
    let size = shape.iter().product::<usize>() as u64;
    let (kept, footer) = (u64_at(32), u64_at(48));
    let len = kept
        .checked_mul(size)
        .filter(|&len| {
            (HEADER as u64)
                .checked_add(len)
                .and_then(|l| l.checked_add(footer))
                == Some(total)
        })
        .ok_or_else(|| "its length does not match its header (truncated?)".to_string())?;
    if pixels == Pixels::Check {
        let mut sums = Vec::new();
        let mut block = vec![0u8; BLOCK_BYTES];
        let mut left = len;
        while left > 0 {
            let piece = left.min(BLOCK_BYTES as u64) as usize;
            file.read_exact(&mut block[..piece])
                .map_err(|e| e.to_string())?;
            sums.push(checksum(&block[..piece]));
            left -= piece as u64;
        }
        if combine(&sums) != u64_at(56) {
            return Err("its pixels do not match their checksum".into());
        }
    } else {
        file.seek(SeekFrom::Start(HEADER as u64 + len))
            .map_err(|e| e.to_string())?;
    }
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).map_err(|e| e.to_string())?;
    let mut failures: Vec<Option<String>> = vec![None; files.len()];
    let mut at = 0;
    let mut failed = 0u64;
    while at < rest.len() {
        let bad = || "its list of skipped files is damaged".to_string();
        let number = |at: usize| -> Option<usize> {
            Some(u64::from_le_bytes(rest.get(at..at + 8)?.try_into().ok()?) as usize)
        };
        let (index, reason_len) = (number(at).ok_or_else(bad)?, number(at + 8).ok_or_else(bad)?);
        let reason = rest
            .get(at + 16..(at + 16).saturating_add(reason_len))
            .and_then(|r| std::str::from_utf8(r).ok())
            .ok_or_else(bad)?;
        *failures.get_mut(index).ok_or_else(bad)? = Some(reason.to_string());
        failed += 1;
        at += 16 + reason_len;
    }
    if failed + kept != files.len() as u64 {
        return Err("its counts of kept and skipped files disagree".into());
    }
    let pixels = CachedPixels {
        file,
        len: len as usize,
        failed: Mutex::new(None),
    };
    Ok((pixels, failures))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::image_folder::scan;

    /// A class folder of `n` 4x4 grey PNGs of distinct values, a second class, and a PNG
    /// that breaks after its header (skipped when decoded, between good files).
    fn folder(name: &str, n: u8) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("taks-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for class in ["a", "b"] {
            std::fs::create_dir_all(dir.join(class)).unwrap();
        }
        for i in 0..n {
            let class = if i % 2 == 0 { "a" } else { "b" };
            image::GrayImage::from_fn(4, 4, |x, y| image::Luma([i * 16 + (x + y) as u8]))
                .save(dir.join(format!("{class}/{i:02}.png")))
                .unwrap();
        }
        let good = std::fs::read(dir.join("a/00.png")).unwrap();
        std::fs::write(dir.join("a/01-broken.png"), &good[..good.len() - 20]).unwrap();
        dir
    }

    /// A cache over a budget of 0 in a fresh folder beside `dir`.
    fn empty_cache(dir: &Path) -> Cache {
        let cache = Cache {
            dir: dir.with_extension("cache"),
            budget_bytes: 0,
        };
        let _ = std::fs::remove_dir_all(&cache.dir);
        cache
    }

    /// The one cache file written so far.
    fn only_file(cache: &Cache) -> PathBuf {
        let mut files = std::fs::read_dir(&cache.dir).unwrap();
        let file = files.next().unwrap().unwrap().path();
        assert!(files.next().is_none());
        file
    }

    fn pixels(d: &DecodedFolder) -> Vec<u8> {
        (0..d.samples.len())
            .flat_map(|i| d.samples.bytes_of(i).unwrap())
            .collect()
    }

    fn run(dir: &Path, cache: &Cache) -> (DecodedFolder, Vec<String>) {
        let mut notes = Vec::new();
        let files = scan(dir).unwrap().files;
        let d = decode(files, [1, 4, 4], Fit::Resize, Some(cache), &mut |n| {
            notes.push(n)
        })
        .unwrap();
        assert_eq!(d.samples.read_error(), None);
        (d, notes)
    }

    #[test]
    fn over_the_budget_the_cache_gives_what_memory_gives_and_is_reused() {
        let dir = folder("reuse", 6);
        let cache = empty_cache(&dir);
        let memory = decode(
            scan(&dir).unwrap().files,
            [1, 4, 4],
            Fit::Resize,
            None,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(memory.samples.len(), 6);
        assert_eq!(memory.skipped.len(), 1, "{:?}", memory.skipped);
        let (built, notes) = run(&dir, &cache);
        assert!(
            notes[0].starts_with("decoded 7 images into the cache"),
            "{notes:?}"
        );
        let (read, notes) = run(&dir, &cache);
        assert!(
            notes[0].starts_with("read the decoded images from the cache"),
            "{notes:?}"
        );
        for d in [&built, &read] {
            assert_eq!(pixels(d), pixels(&memory));
            assert_eq!(d.files, memory.files);
            assert_eq!(d.skipped, memory.skipped);
        }
        // The third decoded image is file a/04 (the broken file's place closed up).
        assert_eq!(read.samples.bytes_of(2).unwrap()[0], 4 * 16);
        // A changed file is another key: a new cache file, the old one left alone.
        image::GrayImage::from_pixel(4, 4, image::Luma([1]))
            .save(dir.join("b/03.png"))
            .unwrap();
        let (changed, notes) = run(&dir, &cache);
        assert!(notes[0].starts_with("decoded 7"), "{notes:?}");
        assert_eq!(changed.samples.bytes_of(4).unwrap(), [1; 16], "b/03");
        assert_eq!(std::fs::read_dir(&cache.dir).unwrap().count(), 2);
        // Within the budget nothing is written.
        let roomy = Cache {
            budget_bytes: 1 << 20,
            ..cache.clone()
        };
        let (_, notes) = run(&dir, &roomy);
        assert!(notes.is_empty(), "{notes:?}");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&cache.dir).unwrap();
    }

    #[test]
    fn a_damaged_or_foreign_cache_is_rebuilt_with_a_note() {
        let dir = folder("damaged", 4);
        let cache = empty_cache(&dir);
        let (good, _) = run(&dir, &cache);
        // Read now: `good` reads its file as it goes, and the damage is written into it.
        let (good_pixels, good_skipped) = (pixels(&good), good.skipped);
        let file = only_file(&cache);
        let original = std::fs::read(&file).unwrap();
        type Damage = Box<dyn Fn(&mut Vec<u8>)>;
        let damage: [(&str, Damage); 5] = [
            (
                "its pixels do not match their checksum",
                Box::new(|b| b[HEADER + 5] ^= 1),
            ),
            (
                "its length does not match its header",
                Box::new(|b| b.truncate(b.len() - 3)),
            ),
            ("written by cache version 99", Box::new(|b| b[8] = 99)),
            ("not a finished taks cache file", Box::new(|b| b[0] = 0)),
            (
                "its list of skipped files is damaged",
                Box::new(|b| {
                    let n = b.len();
                    b[n - 3] = 0xff; // the reason is no longer UTF-8
                }),
            ),
        ];
        for (why, damage) in damage {
            let mut bytes = original.clone();
            damage(&mut bytes);
            std::fs::write(&file, &bytes).unwrap();
            let (rebuilt, notes) = run(&dir, &cache);
            assert!(
                notes[0].contains(why) && notes[0].ends_with("rebuilt"),
                "{notes:?}"
            );
            assert!(notes[1].starts_with("decoded 5 images"), "{notes:?}");
            assert_eq!(pixels(&rebuilt), good_pixels);
            assert_eq!(rebuilt.skipped, good_skipped);
            assert_eq!(std::fs::read(&file).unwrap(), original, "rebuilt the same");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&cache.dir).unwrap();
    }

    /// A write that fails (here a real ENOSPC: the partial file is a link to /dev/full)
    /// leaves no partial file, says so, and the images are decoded into memory.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_loses_only_the_cache() {
        let dir = folder("full", 4);
        let cache = empty_cache(&dir);
        let (good, _) = run(&dir, &cache);
        let file = only_file(&cache);
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/dev/full", partial_path(&file)).unwrap();
        let (memory, notes) = run(&dir, &cache);
        assert!(
            notes[0].contains("could not write the decoded cache"),
            "{notes:?}"
        );
        assert!(notes[0].contains("No space left on device"), "{notes:?}");
        assert!(
            notes[0].ends_with("decoding into memory instead"),
            "{notes:?}"
        );
        assert_eq!(pixels(&memory), pixels(&good));
        assert_eq!(
            std::fs::read_dir(&cache.dir).unwrap().count(),
            0,
            "no partial file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&cache.dir).unwrap();
    }

    /// A cache file cut short while a run reads it: zeros, not a panic, and the error
    /// for the training loop to report.
    #[test]
    fn a_read_that_fails_is_reported_not_a_panic() {
        let dir = folder("cut", 4);
        let cache = empty_cache(&dir);
        let (d, _) = run(&dir, &cache);
        let file = only_file(&cache);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(HEADER as u64 + 20)
            .unwrap();
        assert_eq!(d.samples.bytes_of(3).unwrap(), [0; 16]);
        let failed = d.samples.read_error().unwrap();
        assert!(failed.starts_with("reading the decoded cache"), "{failed}");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&cache.dir).unwrap();
    }
}

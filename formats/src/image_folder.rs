//! A folder of class sub-folders holding images: the way people sort photos by hand.
//!
//! `DATA/<class>/<any sub-folders>/<file>`: the class is the name of the top-level
//! folder a file sits under, classes are ordered by name, and a sample's id is its path
//! relative to `DATA` with `/` separators (what a person searches for in a file
//! browser). PNG, JPEG and BMP are read, and WebP, GIF and TIFF where the `more-images`
//! feature is on (the command line's build; [`FORMATS`]), by content rather than by
//! extension, through the `image` crate with only those codecs compiled in. A folder
//! entry that is not a regular file (a named pipe, a socket, a device) is skipped with
//! what it is and never opened.
//!
//! Reading is two passes, both spread over the available cores and both keeping the
//! files' order: [`scan`] lists the files and reads only their headers (size and colour),
//! so the caller can choose one input size and channel count before any pixel is
//! decoded; [`decode`] then decodes each file once and resizes it straight into the
//! output, so memory holds only the resized samples, never the originals. A file that
//! cannot be read at either pass is returned as a [`Skipped`] with its reason: listed,
//! never silently dropped, and never the end of the whole read.
//!
//! The files may also arrive in memory, as (relative path, bytes) pairs: a browser's
//! folder picker gives exactly that. [`scan_memory`] applies the same rules to them
//! (hidden names left out, loose files at the top listed, classes in name order, files
//! in path order), so the page and `taks audit` read one folder into the same samples
//! in the same order.

use std::collections::BTreeMap;
use std::io::{BufRead, Cursor, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use image::{ColorType, ImageReader};

use crate::{FormatError, Result, resample};

/// One image file found under a class folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageFile {
    /// Path relative to the data folder, `/`-separated.
    pub id: String,
    pub path: PathBuf,
    /// Index into [`Scan::classes`].
    pub label: u32,
    pub width: u32,
    pub height: u32,
    /// Whether the file stores colour (grey files can still be read as RGB).
    pub colour: bool,
    /// The file's length and modification time (nanoseconds since 1970; 0 where the
    /// system has none), read with its header: what tells a decoded cache it is stale.
    pub bytes: u64,
    pub modified_ns: u128,
    /// The file's content when it was given in memory ([`scan_memory`]); `None` for a
    /// file on disk, read from `path` when decoded.
    pub data: Option<Arc<[u8]>>,
}

/// The image formats this build reads, as a person names them.
pub const FORMATS: &str = if cfg!(feature = "more-images") {
    "PNG, JPEG, BMP, WebP, GIF or TIFF"
} else {
    "PNG, JPEG or BMP"
};

/// Why a folder holds nothing to read, on disk or in memory.
const NO_CLASS_FOLDERS: &str = "no class folders (expected DATA/<class>/<image files>)";

/// A file left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub id: String,
    /// One line: a decoder's message may end in or hold line breaks (a cut JPEG's does),
    /// which [`Skipped::decoding`] folds into spaces.
    pub reason: String,
}

impl Skipped {
    /// A file the decoder refused, with the decoder's message as one line.
    fn decoding(id: String, reason: String) -> Self {
        let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
        Self { id, reason }
    }
}

/// The skipped files counted by kind, most first: their extension (`3 .heic`), or what
/// they are when they have none. One line for a run to print beside the count, so a
/// person sees at once that a folder's phone photos (HEIC) or notes were left out.
pub fn skipped_kinds(skipped: &[Skipped]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in skipped {
        let name = s.id.rsplit('/').next().unwrap_or(&s.id);
        let kind = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => {
                format!(".{}", ext.to_lowercase())
            }
            _ => "without an extension".to_string(),
        };
        *counts.entry(kind).or_default() += 1;
    }
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What [`scan`] found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Class names (the sub-folder names), sorted.
    pub classes: Vec<String>,
    /// Readable image files, ordered by class then path.
    pub files: Vec<ImageFile>,
    pub skipped: Vec<Skipped>,
}

impl Scan {
    /// The most common (width, height) among the files (ties: the smaller area), or None
    /// when there are no files.
    pub fn most_common_size(&self) -> Option<(u32, u32)> {
        let mut counts: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        for f in &self.files {
            *counts.entry((f.width, f.height)).or_default() += 1;
        }
        counts
            .into_iter()
            .max_by_key(|&((w, h), c)| (c, std::cmp::Reverse(w as u64 * h as u64)))
            .map(|(size, _)| size)
    }

    /// Whether any file is in colour.
    pub fn any_colour(&self) -> bool {
        self.files.iter().any(|f| f.colour)
    }
}

/// List the class folders of `dir` and read every file's image header. Errors only for
/// what makes the folder unusable as a whole (missing, a folder that cannot be listed,
/// no class folders); each bad file is a [`Skipped`].
pub fn scan(dir: &Path) -> Result<Scan> {
    let mut classes = Vec::new();
    let mut skipped = Vec::new();
    for (name, entry, is_dir) in visible_entries(dir)? {
        if is_dir {
            classes.push((name, entry));
        } else {
            skipped.push(Skipped {
                id: name,
                reason: "not inside a class folder".into(),
            });
        }
    }
    if classes.is_empty() {
        return Err(FormatError::malformed(dir, NO_CLASS_FOLDERS));
    }
    let mut candidates = Vec::new();
    for (label, (name, path)) in classes.iter().enumerate() {
        for (relative, file) in files_under(path)? {
            candidates.push((format!("{name}/{relative}"), file, label as u32));
        }
    }
    let headers = in_parallel(&candidates, |(_, path, _)| read_header(path));
    let mut files = Vec::with_capacity(candidates.len());
    for ((id, path, label), header) in candidates.into_iter().zip(headers) {
        match header {
            Ok(header) => files.push(header.file(id, path, label, None)),
            Err(reason) => skipped.push(Skipped::decoding(id, reason)),
        }
    }
    Ok(Scan {
        classes: classes.into_iter().map(|(name, _)| name).collect(),
        files,
        skipped,
    })
}

/// [`scan`] over files given in memory: `(path, bytes)` with `/`-separated paths
/// relative to the chosen folder (a browser's `webkitRelativePath` without its first
/// part). The rules are [`scan`]'s: a path with a part starting with `.` is left out, a
/// file directly in the folder is skipped as not inside a class folder, the class is
/// the first part, and the order is the order a walk of the same folder on disk gives
/// (each folder's entries by name). A class folder holding no files does not exist
/// here: a browser lists files, not folders.
pub fn scan_memory(entries: Vec<(String, Vec<u8>)>) -> Result<Scan> {
    let mut visible: Vec<(Vec<String>, Vec<u8>)> = entries
        .into_iter()
        .map(|(path, bytes)| {
            let parts = path
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>();
            (parts, bytes)
        })
        .filter(|(parts, _)| !parts.is_empty() && !parts.iter().any(|p| p.starts_with('.')))
        .collect();
    visible.sort_by(|a, b| a.0.cmp(&b.0));
    let mut skipped = Vec::new();
    let mut classes: Vec<String> = Vec::new();
    let mut candidates = Vec::new();
    for (parts, bytes) in visible {
        let id = parts.join("/");
        if parts.len() == 1 {
            skipped.push(Skipped {
                id,
                reason: "not inside a class folder".into(),
            });
            continue;
        }
        if classes.last() != Some(&parts[0]) {
            classes.push(parts[0].clone());
        }
        candidates.push((id, Arc::<[u8]>::from(bytes), classes.len() as u32 - 1));
    }
    if classes.is_empty() {
        return Err(FormatError::malformed(
            "the chosen folder",
            NO_CLASS_FOLDERS,
        ));
    }
    let mut files = Vec::with_capacity(candidates.len());
    for (id, bytes, label) in candidates {
        match header_of(Cursor::new(&bytes[..]), bytes.len() as u64, 0) {
            Ok(header) => {
                files.push(header.file(id.clone(), PathBuf::from(&id), label, Some(bytes)))
            }
            Err(reason) => skipped.push(Skipped::decoding(id, reason)),
        }
    }
    Ok(Scan {
        classes,
        files,
        skipped,
    })
}

/// The decoded samples of [`decode`].
#[derive(Debug, Clone)]
pub struct Decoded {
    /// `n * C * H * W` bytes, sample-major, [C, H, W] inside a sample.
    pub pixels: Vec<u8>,
    /// The files decoded, in order (a subset of the input).
    pub files: Vec<ImageFile>,
    pub skipped: Vec<Skipped>,
}

/// How a decoded image is brought to a sample's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Resized to the sample's width and height (Pillow's bilinear, [`resample`]; the
    /// aspect ratio is not kept, as torchvision's `Resize((h, w))`).
    Resize,
    /// torchvision's ImageNet evaluation crop: RGB, the shorter side resized to `resize`,
    /// the centre square of the sample's side cut out ([`decode_centre_crop`]).
    CentreCrop { resize: u32 },
}

/// Decode `files`, convert to `channels` (1: grey, 3: RGB) and resize each to
/// `width` x `height` (Pillow's bilinear, [`resample`]; the aspect ratio is not kept,
/// as torchvision's `Resize((h, w))`). A file that fails to decode is skipped with its reason.
pub fn decode(files: Vec<ImageFile>, channels: usize, width: u32, height: u32) -> Decoded {
    decode_as(
        files,
        [channels, height as usize, width as usize],
        Fit::Resize,
    )
}

/// Decode `files` into samples of `shape` [channels, height, width] as `fit` says.
///
/// Each image is decoded straight into its place in the one output buffer (the failed
/// ones' places are closed up afterwards), so a million images need their bytes once,
/// not once per image and again for the whole.
pub fn decode_as(files: Vec<ImageFile>, shape: [usize; 3], fit: Fit) -> Decoded {
    let [channels, height, width] = shape;
    let (width, height) = (width as u32, height as u32);
    assert!(channels == 1 || channels == 3, "channels must be 1 or 3");
    if let Fit::CentreCrop { .. } = fit {
        assert!(
            channels == 3 && width == height,
            "a centre crop is an RGB square"
        );
    }
    let size = channels * (width * height) as usize;
    let mut pixels = vec![0u8; files.len() * size];
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = files.len().div_ceil(workers).max(1);
    let decode_part = |part: &[ImageFile], out: &mut [u8]| -> Vec<Option<String>> {
        part.iter()
            .zip(out.chunks_exact_mut(size))
            .map(
                |(f, out)| match decode_file(f, channels, width, height, fit) {
                    Ok(bytes) => {
                        out.copy_from_slice(&bytes);
                        None
                    }
                    Err(reason) => Some(reason),
                },
            )
            .collect()
    };
    let parts: Vec<_> = files
        .chunks(chunk)
        .zip(pixels.chunks_mut(chunk * size))
        .collect();
    let failures = each_on_a_thread(parts, |(part, out)| decode_part(part, out));
    let mut kept = Vec::with_capacity(files.len());
    let mut skipped = Vec::new();
    for (i, (file, failure)) in files.into_iter().zip(failures).enumerate() {
        match failure {
            None => {
                let w = kept.len();
                if w != i {
                    pixels.copy_within(i * size..(i + 1) * size, w * size);
                }
                kept.push(file);
            }
            Some(reason) => skipped.push(Skipped::decoding(file.id, reason)),
        }
    }
    pixels.truncate(kept.len() * size);
    Decoded {
        pixels,
        files: kept,
        skipped,
    }
}

/// One file of a scan, from memory or from disk: [`decode_one`] or
/// [`decode_centre_crop`].
fn decode_file(
    file: &ImageFile,
    channels: usize,
    width: u32,
    height: u32,
    fit: Fit,
) -> std::result::Result<Vec<u8>, String> {
    match (&file.data, fit) {
        (Some(bytes), Fit::Resize) => convert(
            ImageReader::new(Cursor::new(&bytes[..])),
            channels,
            width,
            height,
        ),
        (Some(bytes), Fit::CentreCrop { resize }) => {
            centre_crop(ImageReader::new(Cursor::new(&bytes[..])), resize, width)
        }
        (None, Fit::Resize) => decode_one(&file.path, channels, width, height),
        (None, Fit::CentreCrop { resize }) => decode_centre_crop(&file.path, resize, width),
    }
}

/// One file: decoded, converted and resized, as [C, H, W] bytes.
pub fn decode_one(
    path: &Path,
    channels: usize,
    width: u32,
    height: u32,
) -> std::result::Result<Vec<u8>, String> {
    convert(reader_of(path)?, channels, width, height)
}

/// One file as torchvision's ImageNet evaluation prepares it: RGB, resized (Pillow's
/// bilinear, [`resample`]) so its shorter side is `resize`, then the centre `crop` x
/// `crop` cut out, as `Resize(resize)` + `CenterCrop(crop)` do: [3, crop, crop] bytes.
/// An image already `resize` on its shorter side is not resampled.
pub fn decode_centre_crop(
    path: &Path,
    resize: u32,
    crop: u32,
) -> std::result::Result<Vec<u8>, String> {
    centre_crop(reader_of(path)?, resize, crop)
}

/// [`decode_centre_crop`] of what `reader` holds.
fn centre_crop<R: BufRead + Seek>(
    reader: ImageReader<R>,
    resize: u32,
    crop: u32,
) -> std::result::Result<Vec<u8>, String> {
    let rgb = open_image(reader)?.into_rgb8();
    let (w, h) = rgb.dimensions();
    // torchvision: the shorter side becomes `resize`, the longer int(resize * long / short).
    let (nw, nh) = if w <= h {
        (resize, (resize as u64 * h as u64 / w as u64) as u32)
    } else {
        ((resize as u64 * w as u64 / h as u64) as u32, resize)
    };
    if nw < crop || nh < crop {
        return Err(format!("{w}x{h} is too small to crop {crop}x{crop} from"));
    }
    let rgb = resized_rgb(rgb, nw, nh);
    // CenterCrop: top = round((h - crop) / 2), left likewise, Python's round (half to even).
    let top = ((nh - crop) as f64 / 2.0).round_ties_even() as u32;
    let left = ((nw - crop) as f64 / 2.0).round_ties_even() as u32;
    Ok(planar(
        image::imageops::crop_imm(&rgb, left, top, crop, crop).to_image(),
    ))
}

/// Decode what `reader` holds, whatever its format.
fn open_image<R: BufRead + Seek>(
    reader: ImageReader<R>,
) -> std::result::Result<image::DynamicImage, String> {
    reader
        .with_guessed_format()
        .map_err(|e| e.to_string())?
        .decode()
        .map_err(|e| e.to_string())
}

/// Interleaved RGB -> planar [3, H, W] bytes.
fn planar(rgb: image::RgbImage) -> Vec<u8> {
    let plane = (rgb.width() * rgb.height()) as usize;
    let raw = rgb.into_raw();
    let mut planar = vec![0u8; 3 * plane];
    for (i, px) in raw.chunks_exact(3).enumerate() {
        for c in 0..3 {
            planar[c * plane + i] = px[c];
        }
    }
    planar
}

/// Decode what `reader` holds, convert to `channels` and resize: [C, H, W] bytes.
fn convert<R: BufRead + Seek>(
    reader: ImageReader<R>,
    channels: usize,
    width: u32,
    height: u32,
) -> std::result::Result<Vec<u8>, String> {
    let image = open_image(reader)?;
    Ok(if channels == 1 {
        let grey = image.into_luma8();
        let size = (grey.width() as usize, grey.height() as usize);
        resample::resize(grey.as_raw(), 1, size, (width as usize, height as usize))
    } else {
        planar(resized_rgb(image.into_rgb8(), width, height))
    })
}

/// `rgb` resized to `width` x `height` as Pillow resizes (what torchvision's `Resize` does
/// to a PIL image: [`resample`]).
fn resized_rgb(rgb: image::RgbImage, width: u32, height: u32) -> image::RgbImage {
    if rgb.dimensions() == (width, height) {
        return rgb;
    }
    let size = (rgb.width() as usize, rgb.height() as usize);
    let pixels = resample::resize(rgb.as_raw(), 3, size, (width as usize, height as usize));
    image::RgbImage::from_raw(width, height, pixels).expect("resize returns width x height pixels")
}

/// A PNG of one sample (`channels` 1 or 3, [C, H, W] bytes) scaled down to fit `side` x
/// `side` (aspect ratio kept), for a report a person reviews.
pub fn thumbnail_png(
    planar: &[u8],
    channels: usize,
    width: u32,
    height: u32,
    side: u32,
) -> Vec<u8> {
    let plane = (width * height) as usize;
    assert_eq!(planar.len(), channels * plane, "one [C, H, W] sample");
    let rgb: Vec<u8> = (0..plane)
        .flat_map(|i| (0..3).map(move |c| planar[(c % channels) * plane + i]))
        .collect();
    let image = image::DynamicImage::ImageRgb8(
        image::RgbImage::from_raw(width, height, rgb).expect("sized above"),
    );
    let small = if width > side || height > side {
        image.thumbnail(side, side)
    } else {
        image
    };
    let mut bytes = Vec::new();
    small
        .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
        .expect("PNG encoding into memory cannot fail");
    bytes
}

/// What [`scan`] reads of a file: (width, height, colour) from the header alone.
struct Header {
    width: u32,
    height: u32,
    colour: bool,
    bytes: u64,
    modified_ns: u128,
}

impl Header {
    fn file(self, id: String, path: PathBuf, label: u32, data: Option<Arc<[u8]>>) -> ImageFile {
        ImageFile {
            id,
            path,
            label,
            width: self.width,
            height: self.height,
            colour: self.colour,
            bytes: self.bytes,
            modified_ns: self.modified_ns,
            data,
        }
    }
}

/// Open `path` for reading if it is a regular file (through links), else say what it
/// is. Opening a named pipe waits until something writes into it, which a folder of
/// photos never will (`mkfifo cat/x.png` hung the audit); a device (`/dev/zero` behind
/// a link) reads forever or not at all; a socket cannot be opened. So their kind is
/// read from the file system first and they are skipped with it, never opened.
fn open_regular(path: &Path) -> std::result::Result<std::fs::File, String> {
    let kind = std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .file_type();
    if !kind.is_file() {
        return Err(format!("{}, not a file", what_is(kind)));
    }
    std::fs::File::open(path).map_err(|e| e.to_string())
}

/// What a file system entry that is not a regular file is, in a user's words.
fn what_is(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        } else if kind.is_socket() {
            return "a socket";
        } else if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else {
        "a special file"
    }
}

/// An image reader over the regular file at `path` ([`open_regular`]).
fn reader_of(
    path: &Path,
) -> std::result::Result<ImageReader<std::io::BufReader<std::fs::File>>, String> {
    Ok(ImageReader::new(std::io::BufReader::new(open_regular(
        path,
    )?)))
}

fn read_header(path: &Path) -> std::result::Result<Header, String> {
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    header_of(std::io::BufReader::new(file), meta.len(), modified_ns)
}

/// The header of the image `reader` holds (`bytes` long, modified at `modified_ns`).
fn header_of<R: BufRead + Seek>(
    reader: R,
    bytes: u64,
    modified_ns: u128,
) -> std::result::Result<Header, String> {
    let reader = ImageReader::new(reader)
        .with_guessed_format()
        .map_err(|e| e.to_string())?;
    if reader.format().is_none() {
        return Err(format!("not a {FORMATS} image"));
    }
    let decoder = reader.into_decoder().map_err(|e| e.to_string())?;
    let (width, height) = image::ImageDecoder::dimensions(&decoder);
    if width == 0 || height == 0 {
        return Err(format!("empty image ({width}x{height})"));
    }
    let colour = !matches!(
        image::ImageDecoder::color_type(&decoder),
        ColorType::L8 | ColorType::La8 | ColorType::L16 | ColorType::La16
    );
    Ok(Header {
        width,
        height,
        colour,
        bytes,
        modified_ns,
    })
}

/// How many folders below the one given [`files_under`] walks: a class folder of images is one or two
/// levels, an archive unpacked inside one a few more. Deeper is a hostile or mistaken
/// tree, refused with its path rather than walked until the stack gives out.
pub const MAX_FOLDER_DEPTH: usize = 64;

/// Every file under `dir`, recursively, as (path relative to `dir` with `/`
/// separators, path), in sorted order; names starting with `.` are left out. Links are
/// followed, so each folder is walked once: a link back to a folder above it, or a second
/// way into a folder already walked (links fanning out, 30 levels of two links each
/// would be 2^30 walks), is an error that names both paths; so is a tree deeper than
/// [`MAX_FOLDER_DEPTH`].
pub fn files_under(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    struct Walk {
        /// The folders from `dir` down to the one being walked, canonical.
        above: Vec<PathBuf>,
        /// Every folder walked so far, canonical, with the path it was reached by.
        seen: std::collections::HashMap<PathBuf, PathBuf>,
        out: Vec<(String, PathBuf)>,
    }
    fn walk(dir: &Path, prefix: &str, state: &mut Walk) -> Result<()> {
        let here = std::fs::canonicalize(dir).map_err(|e| FormatError::io(dir, e))?;
        if let Some(ancestor) = state.above.iter().find(|a| **a == here) {
            return Err(FormatError::malformed(
                dir,
                format!(
                    "a link back to {}, a folder above it: remove the link, or audit a copy without it",
                    ancestor.display()
                ),
            ));
        }
        if let Some(first) = state.seen.get(&here) {
            return Err(FormatError::malformed(
                dir,
                format!(
                    "the folder {} once more, already read as {}: its files would count twice; remove one of the links",
                    here.display(),
                    first.display()
                ),
            ));
        }
        if state.above.len() > MAX_FOLDER_DEPTH {
            return Err(FormatError::malformed(
                dir,
                format!("folders nest more than {MAX_FOLDER_DEPTH} deep here"),
            ));
        }
        state.seen.insert(here.clone(), dir.to_path_buf());
        state.above.push(here);
        for (name, entry, is_dir) in visible_entries(dir)? {
            let relative = match prefix {
                "" => name,
                _ => format!("{prefix}/{name}"),
            };
            if is_dir {
                walk(&entry, &relative, state)?;
            } else {
                state.out.push((relative, entry));
            }
        }
        state.above.pop();
        Ok(())
    }
    let mut state = Walk {
        above: Vec::new(),
        seen: std::collections::HashMap::new(),
        out: Vec::new(),
    };
    walk(dir, "", &mut state)?;
    Ok(state.out)
}

/// The entries of `dir` as (name, path, is a folder), sorted by name, without those
/// whose name starts with `.` (`.DS_Store`, `.git`, editors' files). Whether an entry is
/// a folder comes from the directory listing itself where the file system says (no
/// `stat` per file: a million-file folder is listed in seconds); a link is followed.
fn visible_entries(dir: &Path) -> Result<Vec<(String, PathBuf, bool)>> {
    let read = std::fs::read_dir(dir).map_err(|e| FormatError::io(dir, e))?;
    let mut entries = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| FormatError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_dir() => true,
            Ok(t) if t.is_file() => false,
            _ => path.is_dir(),
        };
        entries.push((name, path, is_dir));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// Threads that read file headers, at least: reading a header is mostly waiting for the
/// disk when the files are not in the page cache (a folder's first audit), and a disk
/// serves many requests at once far faster than one at a time. On the million-file folder
/// of `scripts/audit-compare/scale.sh`, page cache dropped, 2 threads (one per core)
/// took 125 s to list and read it and 16 took 56 s; with the files in the page cache,
/// 40-48 s and 22 s.
const HEADER_THREADS: usize = 16;

/// `f` over `items` on [`HEADER_THREADS`] threads or one per core if more, results in
/// the items' order.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(HEADER_THREADS);
    if workers <= 1 || items.len() < 2 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(workers);
    let parts: Vec<&[T]> = items.chunks(chunk).collect();
    each_on_a_thread(parts, |part| part.iter().map(&f).collect())
}

/// `f` over each of `parts`, each on a scoped thread of its own (a single part on this
/// thread), the results concatenated in order; a panic is passed on.
fn each_on_a_thread<P: Send, R: Send>(parts: Vec<P>, f: impl Fn(P) -> Vec<R> + Sync) -> Vec<R> {
    if parts.len() <= 1 {
        return parts.into_iter().flat_map(&f).collect();
    }
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || f(part)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("taks-imgs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A named pipe, a socket, a link to a device and a link to nothing, each named like
    /// an image, beside a real image: scanned and decoded without waiting on any of them
    /// (opening the pipe would wait for a writer forever), each skipped with what it is.
    #[test]
    #[cfg(unix)]
    fn entries_that_are_not_files_are_skipped_unopened() {
        let dir = folder("special");
        std::fs::create_dir_all(dir.join("cat")).unwrap();
        image::GrayImage::from_pixel(4, 2, image::Luma([200]))
            .save(dir.join("cat/a.png"))
            .unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.join("cat/pipe.png"))
            .status()
            .unwrap();
        assert!(made.success());
        let _socket = std::os::unix::net::UnixListener::bind(dir.join("cat/socket.png")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("cat/zero.png")).unwrap();
        std::os::unix::fs::symlink(dir.join("gone.png"), dir.join("cat/nothing.png")).unwrap();
        let scan = scan(&dir).unwrap();
        let ids: Vec<_> = scan.files.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["cat/a.png"]);
        let skipped: Vec<_> = scan
            .skipped
            .iter()
            .map(|s| (s.id.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        for (id, reason) in [
            ("cat/pipe.png", "a named pipe, not a file"),
            ("cat/socket.png", "a socket, not a file"),
            ("cat/zero.png", "a device, not a file"),
        ] {
            assert!(skipped.contains(&(id, reason)), "{id}: {skipped:?}");
        }
        assert!(
            skipped
                .iter()
                .any(|(id, r)| *id == "cat/nothing.png" && r.contains("No such file")),
            "{skipped:?}"
        );
        // Decoding a file the scan kept that has since become a pipe: skipped, not a hang.
        let mut kept = scan.files[0].clone();
        kept.path = dir.join("cat/pipe.png");
        let decoded = decode(vec![kept], 1, 4, 2);
        assert_eq!(decoded.skipped[0].reason, "a named pipe, not a file");
        assert_eq!(
            decode_centre_crop(&dir.join("cat/zero.png"), 8, 4).unwrap_err(),
            "a device, not a file"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn classes_files_and_skips() {
        let dir = folder("scan");
        std::fs::create_dir_all(dir.join("cat/more")).unwrap();
        std::fs::create_dir_all(dir.join("dog")).unwrap();
        image::GrayImage::from_pixel(4, 2, image::Luma([200]))
            .save(dir.join("cat/a.png"))
            .unwrap();
        image::RgbImage::from_pixel(3, 3, image::Rgb([255, 0, 0]))
            .save(dir.join("cat/more/b.bmp"))
            .unwrap();
        image::RgbImage::from_pixel(4, 2, image::Rgb([0, 0, 255]))
            .save(dir.join("dog/c.jpg"))
            .unwrap();
        std::fs::write(dir.join("dog/notes.txt"), "hello").unwrap();
        std::fs::write(dir.join("dog/broken.png"), b"\x89PNG\r\n\x1a\nbad").unwrap();
        std::fs::write(dir.join("stray.png"), b"x").unwrap();
        let scan = scan(&dir).unwrap();
        assert_eq!(scan.classes, ["cat", "dog"]);
        let ids: Vec<_> = scan.files.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["cat/a.png", "cat/more/b.bmp", "dog/c.jpg"]);
        assert_eq!(
            scan.files.iter().map(|f| f.label).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        assert!(!scan.files[0].colour && scan.files[1].colour);
        let skipped: Vec<_> = scan.skipped.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(skipped, ["stray.png", "dog/broken.png", "dog/notes.txt"]);
        assert!(
            scan.skipped[2].reason.contains("not a PNG"),
            "{:?}",
            scan.skipped
        );
        assert_eq!(scan.most_common_size(), Some((4, 2)));

        let rgb = decode(scan.files.clone(), 3, 2, 2);
        assert_eq!(rgb.files.len(), 3);
        assert_eq!(rgb.pixels.len(), 3 * 3 * 4);
        // The grey file is grey in every plane; the red BMP is red in plane 0 only.
        assert!(rgb.pixels[..12].iter().all(|&p| p == 200));
        assert!(rgb.pixels[12..16].iter().all(|&p| p == 255));
        assert!(rgb.pixels[16..24].iter().all(|&p| p == 0));
        let grey = decode(scan.files[..1].to_vec(), 1, 4, 2);
        assert_eq!(grey.pixels, vec![200; 8]);
        // A thumbnail is a real PNG of the sample, scaled to fit.
        let png = thumbnail_png(&rgb.pixels[12..24], 3, 2, 2, 1);
        let back = image::load_from_memory(&png).unwrap().into_rgb8();
        assert_eq!((back.width(), back.height()), (1, 1));
        assert_eq!(back.get_pixel(0, 0).0, [255, 0, 0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every file under `dir` as `scan_memory` takes it, in the order given (shuffled
    /// here, as a browser may list them).
    fn in_memory(dir: &Path) -> Vec<(String, Vec<u8>)> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
                if entry.path().is_dir() {
                    walk(&entry.path(), &format!("{name}/"), out);
                } else {
                    out.push((name, std::fs::read(entry.path()).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, "", &mut out);
        out.reverse();
        out
    }

    #[test]
    fn files_in_memory_read_as_the_same_folder_on_disk() {
        let dir = folder("memory");
        for sub in ["shirt/b", "coat", ".git"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let grey = image::GrayImage::from_fn(6, 4, |x, y| image::Luma([(x * 40 + y) as u8]));
        grey.save(dir.join("shirt/z.png")).unwrap();
        grey.save(dir.join("shirt/b/a.png")).unwrap();
        image::RgbImage::from_pixel(6, 4, image::Rgb([9, 200, 30]))
            .save(dir.join("coat/c.bmp"))
            .unwrap();
        std::fs::write(dir.join("coat/empty.png"), b"").unwrap();
        std::fs::write(dir.join("coat/notes.jpg"), "not a picture").unwrap();
        std::fs::write(dir.join("coat/.DS_Store"), b"\0\0\0\x01Bud1").unwrap();
        std::fs::write(dir.join(".git/HEAD"), "ref").unwrap();
        std::fs::write(dir.join("README.txt"), "exported").unwrap();
        let disk = scan(&dir).unwrap();
        let memory = scan_memory(in_memory(&dir)).unwrap();
        assert_eq!(memory.classes, ["coat", "shirt"]);
        assert_eq!(memory.classes, disk.classes);
        let ids = |s: &Scan| {
            s.files
                .iter()
                .map(|f| (f.id.clone(), f.label))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&memory), ids(&disk));
        assert_eq!(
            ids(&memory),
            [
                ("coat/c.bmp".to_string(), 0),
                ("shirt/b/a.png".into(), 1),
                ("shirt/z.png".into(), 1)
            ]
        );
        assert_eq!(memory.skipped, disk.skipped);
        assert_eq!(memory.skipped[0].id, "README.txt");
        assert_eq!(memory.skipped.len(), 3, "{:?}", memory.skipped);
        // Decoded from memory, the pixels are the disk's, byte for byte.
        let a = decode(memory.files.clone(), 3, 5, 3);
        let b = decode(disk.files.clone(), 3, 5, 3);
        assert_eq!(a.pixels, b.pixels);
        assert_eq!(a.pixels.len(), 3 * 3 * 15);
        assert!(memory.files.iter().all(|f| f.data.is_some()));
        let err = scan_memory(vec![("loose.png".into(), vec![1])]).unwrap_err();
        assert!(err.to_string().contains("no class folders"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_breaks_after_its_header_is_skipped_not_fatal() {
        let dir = folder("trunc");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        let good = dir.join("a/good.png");
        image::GrayImage::from_pixel(8, 8, image::Luma([7]))
            .save(&good)
            .unwrap();
        let bytes = std::fs::read(&good).unwrap();
        std::fs::write(dir.join("a/cut.png"), &bytes[..bytes.len() - 20]).unwrap();
        let scan = scan(&dir).unwrap();
        assert_eq!(scan.files.len(), 2, "{:?}", scan.skipped);
        let out = decode(scan.files.clone(), 1, 8, 8);
        assert_eq!(out.files.len(), 1);
        assert_eq!(out.skipped.len(), 1);
        assert_eq!(out.skipped[0].id, "a/cut.png");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_folder_without_class_folders_is_an_error() {
        let dir = folder("flat");
        std::fs::write(dir.join("x.png"), b"x").unwrap();
        let err = scan(&dir).unwrap_err().to_string();
        assert!(err.contains("no class folders"), "{err}");
        assert!(scan(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_back_up_the_tree_is_an_error_not_an_endless_walk() {
        let root = std::env::temp_dir().join(format!("taks-loop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("cat")).unwrap();
        std::fs::write(root.join("cat/a.png"), b"x").unwrap();
        std::os::unix::fs::symlink(&root, root.join("cat/up")).unwrap();
        let err = files_under(&root).unwrap_err().to_string();
        std::fs::remove_dir_all(&root).unwrap();
        assert!(err.contains("cat/up: a link back to"), "{err}");
        assert!(err.contains("a folder above it"), "{err}");
    }

    /// Links that fan out without looping: each level holds two links to the level
    /// below, so 30 levels are 2^30 paths to the last folder. The second way into a
    /// folder is refused, naming both; a tree one level deeper than the limit is refused.
    #[cfg(unix)]
    #[test]
    fn a_folder_reached_twice_or_too_deep_is_an_error() {
        let root = std::env::temp_dir().join(format!("taks-fan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for level in 0..30 {
            std::fs::create_dir_all(root.join(format!("l{level}"))).unwrap();
        }
        std::fs::write(root.join("l29/a.png"), b"x").unwrap();
        for level in 0..29 {
            let below = root.join(format!("l{}", level + 1));
            for link in ["x", "y"] {
                let at = root.join(format!("l{level}/{link}"));
                std::os::unix::fs::symlink(&below, at).unwrap();
            }
        }
        let err = files_under(&root.join("l0")).unwrap_err().to_string();
        assert!(err.contains("once more, already read as"), "{err}");
        assert!(
            err.contains("/x/y: the folder") && err.contains("l29 once more"),
            "{err}"
        );
        std::fs::remove_dir_all(&root).unwrap();

        let deep = std::env::temp_dir().join(format!("taks-deep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&deep);
        let mut at = deep.clone();
        for _ in 0..MAX_FOLDER_DEPTH {
            at.push("d");
        }
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("a.png"), b"x").unwrap();
        assert_eq!(
            files_under(&deep).unwrap().len(),
            1,
            "the limit itself is walked"
        );
        std::fs::create_dir_all(at.join("d")).unwrap();
        let err = files_under(&deep).unwrap_err().to_string();
        assert!(err.contains("nest more than 64 deep"), "{err}");
        std::fs::remove_dir_all(&deep).unwrap();
    }
}

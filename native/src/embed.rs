//! `taks embed DIR --init FILE --out OUT`: the features a pretrained ResNet gives each
//! image of a folder, for `taks audit OUT/embeddings.npy --labels OUT/labels.txt` and
//! for numpy.
//!
//! DIR holds class sub-folders of images, as for `taks audit`. Each image is prepared
//! as torchvision prepares ImageNet inputs ([`taks_core::nn::pretrained::PREPROCESSING`])
//! and the pooled features before the classifier are written, one row per image:
//! `embeddings.npy` [n, 512] (ResNet-18, -34) or [n, 2048] (ResNet-50), f32;
//! `labels.npy` (i64 class indices) and `labels.txt` (class names), one a row;
//! `ids.txt`, each image's path under DIR; `config.json`, the network, the weights and
//! the preprocessing. Images are decoded ahead on every core but one while the network
//! runs, at most one batch per decoding thread, whatever n is. An image that
//! cannot be decoded is named on stderr and left out (its row with it).

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;

use anyhow::{Result, bail};
use burn::tensor::{Tensor, TensorData};
use clap::Args;
use taks_core::formats::atomic::write_atomically;
use taks_core::formats::image_folder::{self, ImageFile, decode_centre_crop};
use taks_core::formats::npy_write::{MatrixWriter, write_i64_vector};
use taks_core::nn::pretrained::{self, CROP, PREPROCESSING, RESIZE, imagenet_input};
use taks_core::nn::{Architecture, Classifier};

use crate::device::{self, DeviceChoice};
use crate::out_dir;

#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// A folder of class sub-folders of images (DIR/<class>/<image files>).
    pub data: PathBuf,
    /// The pretrained weights: a torchvision or timm ResNet-18, -34 or -50 state_dict, as
    /// .safetensors or as a torch .pth (read without running any of its code).
    #[arg(long, value_name = "FILE")]
    pub init: PathBuf,
    /// The output folder (refused if it already holds embeddings.npy).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The network; by default the one the weights are for.
    #[arg(long, value_enum)]
    pub model: Option<Architecture>,
    /// Images per forward pass.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Compute device: cpu (the default here), gpu, or auto (as for `taks train`).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    pub device: DeviceChoice,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// The file `out_dir::prepare` looks for: a folder with it holds finished embeddings.
const MARKER: &str = "embeddings.npy";

/// What [`embed`] wrote.
pub struct Embedded {
    pub dir: PathBuf,
    pub architecture: Architecture,
    pub rows: usize,
    pub width: usize,
    pub classes: usize,
    pub skipped: usize,
}

impl Embedded {
    pub fn matrix(&self) -> PathBuf {
        self.dir.join(MARKER)
    }

    pub fn labels(&self) -> PathBuf {
        self.dir.join("labels.txt")
    }
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let e = embed(&args)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{} images x {} features ({}, {} classes{}) -> {}",
        e.rows,
        e.width,
        e.architecture.name(),
        e.classes,
        match e.skipped {
            0 => String::new(),
            n => format!(", {n} files skipped"),
        },
        e.matrix().display()
    )?;
    writeln!(
        stdout,
        "audit them: taks audit {} --labels {}",
        e.matrix().display(),
        e.labels().display()
    )?;
    Ok(())
}

/// Embed the folder `args.data` into `args.out` (see the module doc).
pub fn embed(args: &EmbedArgs) -> Result<Embedded> {
    if args.batch == 0 {
        bail!("--batch must be at least 1");
    }
    if !args.data.is_dir() {
        bail!("{}: no such folder", args.data.display());
    }
    let state = pretrained::read(&args.init)?;
    let architecture = match args.model {
        Some(a) => a,
        None => match pretrained::depth_of(&state) {
            Some(Ok(a)) => a,
            // check_depth below says what is wrong with it.
            _ => Architecture::ResNet18,
        },
    };
    pretrained::check_depth(&state, architecture, &args.init)?;
    let scan = image_folder::scan(&args.data)?;
    if scan.files.is_empty() {
        bail!("{}: no readable images", args.data.display());
    }
    let chosen = device::choose(args.device)?;
    let side = CROP as usize;
    let network = Classifier::new(architecture, [3, side, side], 1, &chosen.device).with_backbone(
        architecture,
        &state,
        &args.init,
    )?;
    drop(state);
    let out = out_dir::prepare(args.out.as_deref(), "embeddings", MARKER, "embeddings")?;
    let width = if architecture == Architecture::ResNet50 {
        2048
    } else {
        512
    };
    let mut matrix = MatrixWriter::create(&out.join(MARKER), width)?;
    let features = Features {
        network: &network,
        device: &chosen.device,
        width,
        init: &args.init,
    };
    let (kept, skipped) = embed_files(args, &scan.files, &features, &mut matrix)?;
    if kept.is_empty() {
        bail!(
            "{}: none of the images could be decoded",
            args.data.display()
        );
    }
    let kept: Vec<&ImageFile> = kept.iter().map(|&i| &scan.files[i]).collect();
    let skipped = skipped + scan.skipped.len();
    write_sidecars(
        &out,
        args,
        &scan.classes,
        &kept,
        architecture,
        width,
        skipped,
    )?;
    // Only now is the matrix complete and in place.
    let rows = matrix.finish()?;
    Ok(Embedded {
        dir: out,
        architecture,
        rows,
        width,
        classes: scan.classes.len(),
        skipped,
    })
}

/// The backbone that turns a batch of crops into features, where it runs.
struct Features<'a> {
    network: &'a Classifier,
    device: &'a burn::tensor::Device,
    /// Features per image.
    width: usize,
    /// The weights file, for a message.
    init: &'a std::path::Path,
}

/// Every file of `files` decoded, cropped and embedded in file order, its features
/// appended to `matrix`: the indices of the files kept, and how many were skipped (each
/// with a line).
fn embed_files(
    args: &EmbedArgs,
    files: &[ImageFile],
    features: &Features,
    matrix: &mut MatrixWriter,
) -> Result<(Vec<usize>, usize)> {
    let bar = crate::progress::bar(files.len(), args.quiet, crate::progress::IMAGES);
    let mut kept: Vec<usize> = Vec::new();
    let mut skipped = 0usize;
    let sample = 3 * CROP as usize * CROP as usize;
    std::thread::scope(|scope| -> Result<()> {
        // Decoding runs ahead of the network on every core but one: decoder w takes
        // batches w, w + W, w + 2W, ... and holds at most one finished batch, so at most
        // W + 1 batches are in memory whatever the folder's size. On a GPU the network
        // outruns one decoding core many times over.
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .clamp(1, 16);
        let batch = args.batch;
        let batches = files.len().div_ceil(batch);
        let mut queues = Vec::with_capacity(workers);
        for w in 0..workers {
            let (send, receive) = sync_channel::<Vec<(usize, Result<Vec<f32>, String>)>>(1);
            queues.push(receive);
            scope.spawn(move || {
                for b in (w..batches).step_by(workers) {
                    let chunk = &files[b * batch..((b + 1) * batch).min(files.len())];
                    let decoded = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, f)| {
                            let pixels = decode_centre_crop(&f.path, RESIZE, CROP);
                            (b * batch + i, pixels.map(|p| imagenet_input(&p)))
                        })
                        .collect();
                    if send.send(decoded).is_err() {
                        return;
                    }
                }
            });
        }
        // In file order: batch b from decoder b % W.
        let receive = (0..batches).map_while(|b| queues[b % workers].recv().ok());
        for decoded in receive {
            let mut values = Vec::with_capacity(decoded.len() * sample);
            for (i, result) in decoded {
                match result {
                    Ok(v) => {
                        values.extend(v);
                        kept.push(i);
                    }
                    Err(reason) => {
                        skipped += 1;
                        eprintln!("skipped {}: {reason}", files[i].id);
                    }
                }
                if let Some(bar) = &bar {
                    bar.inc(1);
                }
            }
            let rows = values.len() / sample;
            if rows > 0 {
                let row_id = |row: usize| &files[kept[kept.len() - rows + row]].id;
                matrix.push(&features.of(values, rows, sample, row_id)?)?;
            }
        }
        Ok(())
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok((kept, skipped))
}

impl Features<'_> {
    /// The features of `rows` crops (`values`, `sample` each), refused where one is not
    /// finite (`id` names the image of a row).
    fn of<'f>(
        &self,
        values: Vec<f32>,
        rows: usize,
        sample: usize,
        id: impl Fn(usize) -> &'f String,
    ) -> Result<Vec<f32>> {
        let x = Tensor::<2>::from_data(TensorData::new(values, [rows, sample]), self.device);
        let features = self.network.features(x).expect("a ResNet has features");
        let features: Vec<f32> = features
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| anyhow::anyhow!("reading the features: {e:?}"))?;
        if let Some(bad) = features.iter().position(|v| !v.is_finite()) {
            bail!(
                "{}: the features of {} are not finite (are the weights?)",
                self.init.display(),
                id(bad / self.width)
            );
        }
        Ok(features)
    }
}

/// Beside the matrix: each row's label (`labels.npy`, and its class name in
/// `labels.txt`), its image (`ids.txt`), and how the features were made (`config.json`).
fn write_sidecars(
    out: &std::path::Path,
    args: &EmbedArgs,
    classes: &[String],
    kept: &[&ImageFile],
    architecture: Architecture,
    width: usize,
    skipped: usize,
) -> Result<()> {
    let labels: Vec<i64> = kept.iter().map(|f| f.label as i64).collect();
    write_i64_vector(&out.join("labels.npy"), &labels)?;
    let lines = |f: &dyn Fn(&ImageFile) -> String| -> Vec<u8> {
        kept.iter()
            .map(|file| f(file) + "\n")
            .collect::<String>()
            .into_bytes()
    };
    write_atomically(
        &out.join("labels.txt"),
        &lines(&|f| classes[f.label as usize].clone()),
    )?;
    write_atomically(&out.join("ids.txt"), &lines(&|f| f.id.clone()))?;
    let config = serde_json::json!({
        "architecture": architecture.name(),
        "init": out_dir::absolute(&args.init),
        "data": out_dir::absolute(&args.data),
        "preprocessing": PREPROCESSING,
        "features": width,
        "rows": kept.len(),
        "classes": classes,
        "skipped": skipped,
    });
    write_atomically(
        &out.join("config.json"),
        serde_json::to_string_pretty(&config)?.as_bytes(),
    )?;
    Ok(())
}

//! A folder's features from a pretrained ResNet: what `taks embed` writes, and what
//! `taks audit --init` audits.
//!
//! The folder holds class sub-folders of images, as for an audit. Each image is prepared
//! as torchvision prepares ImageNet inputs ([`crate::nn::pretrained::PREPROCESSING`]) and
//! the pooled features before the classifier are written, one row per image:
//! `embeddings.npy` [n, 512] (ResNet-18, -34) or [n, 2048] (ResNet-50), f32;
//! `labels.npy` (i64 class indices) and `labels.txt` (class names), one a row;
//! `ids.txt`, each image's path under the folder; `config.json`, the network, the weights
//! and the preprocessing. Images are decoded ahead on every core but one while the
//! network runs, at most one batch per decoding thread, whatever n is. An image that
//! cannot be decoded is named (a line handed to the caller) and left out, its row with it.
//!
//! Why in the core: the command line's `embed` and its audit's `--init`, and Python, all
//! embed a folder; each front end only says where and shows the progress. Reading is in
//! three steps, so that everything about the input is checked ([`ToEmbed::read`]) and the
//! network loaded ([`ToEmbed::on`]) before an output folder is made
//! ([`OnDevice::embed_into`]).

use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;

use burn::tensor::{Device, Tensor, TensorData};

use crate::error::refuse;
use crate::formats::atomic::write_atomically;
use crate::formats::image_folder::{self, ImageFile, Scan, decode_centre_crop};
use crate::formats::npy_write::{MatrixWriter, write_i64_vector};
use crate::formats::state_dict::StateDict;
use crate::nn::pretrained::{self, CROP, PREPROCESSING, RESIZE, imagenet_input};
use crate::nn::{Architecture, Classifier};
use crate::{Error, Result};

/// The features file: a folder holding it holds finished embeddings.
pub const MARKER: &str = "embeddings.npy";

/// What [`OnDevice::embed_into`] wrote.
pub struct Embedded {
    pub dir: PathBuf,
    pub architecture: Architecture,
    pub rows: usize,
    pub width: usize,
    pub classes: usize,
    pub skipped: usize,
}

impl Embedded {
    /// The features, one row per image kept.
    pub fn matrix(&self) -> PathBuf {
        self.dir.join(MARKER)
    }

    /// Each row's class name.
    pub fn labels(&self) -> PathBuf {
        self.dir.join("labels.txt")
    }
}

/// A folder scanned and a pretrained network's weights read and checked: all that can be
/// known before a device is opened.
pub struct ToEmbed {
    state: StateDict,
    architecture: Architecture,
    scan: Scan,
    data: PathBuf,
    init: PathBuf,
    batch: usize,
}

impl ToEmbed {
    /// The folder `data` and the weights `init` (of `model`, or of the network the
    /// weights are for), to be embedded `batch` images a pass.
    pub fn read(
        data: &Path,
        init: &Path,
        model: Option<Architecture>,
        batch: usize,
    ) -> Result<Self> {
        if batch == 0 {
            return refuse("--batch must be at least 1".into());
        }
        if !data.is_dir() {
            return refuse(format!("{}: no such folder", data.display()));
        }
        let state = pretrained::read(init)?;
        let architecture = match model {
            Some(a) => a,
            None => match pretrained::depth_of(&state) {
                Some(Ok(a)) => a,
                // check_depth below says what is wrong with it.
                _ => Architecture::ResNet18,
            },
        };
        pretrained::check_depth(&state, architecture, init)?;
        let scan = image_folder::scan(data)?;
        if scan.files.is_empty() {
            return refuse(format!("{}: no readable images", data.display()));
        }
        Ok(Self {
            state,
            architecture,
            scan,
            data: data.to_path_buf(),
            init: init.to_path_buf(),
            batch,
        })
    }

    /// The images to embed (those the scan could read).
    pub fn images(&self) -> usize {
        self.scan.files.len()
    }

    /// The network with the weights, on `device`: the last check before an output
    /// folder is made.
    pub fn on(self, device: &Device) -> Result<OnDevice> {
        let side = CROP as usize;
        let network = Classifier::new(self.architecture, [3, side, side], 1, device)
            .with_backbone(self.architecture, &self.state, &self.init)?;
        Ok(OnDevice {
            network,
            device: device.clone(),
            folder: self,
        })
    }
}

/// A [`ToEmbed`] loaded on its device, ready to embed.
pub struct OnDevice {
    network: Classifier,
    device: Device,
    folder: ToEmbed,
}

impl OnDevice {
    /// The images to embed (those the scan could read).
    pub fn images(&self) -> usize {
        self.folder.images()
    }

    /// Embed every image into the folder `out` (which must exist), calling `tick` once
    /// an image is done and `say` with the line of each one left out. The features file
    /// is complete and in place only when this returns.
    pub fn embed_into(
        self,
        out: &Path,
        tick: &mut dyn FnMut(),
        say: &mut dyn FnMut(String),
    ) -> Result<Embedded> {
        let this = self.folder;
        let width = if this.architecture == Architecture::ResNet50 {
            2048
        } else {
            512
        };
        let mut matrix = MatrixWriter::create(&out.join(MARKER), width)?;
        let features = Features {
            network: &self.network,
            device: &self.device,
            width,
            init: &this.init,
        };
        let files = &this.scan.files;
        let (kept, skipped) = embed_files(files, this.batch, &features, &mut matrix, tick, say)?;
        if kept.is_empty() {
            return refuse(format!(
                "{}: none of the images could be decoded",
                this.data.display()
            ));
        }
        let kept: Vec<&ImageFile> = kept.iter().map(|&i| &files[i]).collect();
        let skipped = skipped + this.scan.skipped.len();
        let sidecars = Sidecars {
            classes: &this.scan.classes,
            kept: &kept,
            architecture: this.architecture,
            width,
            skipped,
        };
        sidecars.write(out, &this.data, &this.init)?;
        // Only now is the matrix complete and in place.
        let rows = matrix.finish()?;
        Ok(Embedded {
            dir: out.to_path_buf(),
            architecture: this.architecture,
            rows,
            width,
            classes: this.scan.classes.len(),
            skipped,
        })
    }
}

/// The backbone that turns a batch of crops into features, where it runs.
struct Features<'a> {
    network: &'a Classifier,
    device: &'a Device,
    /// Features per image.
    width: usize,
    /// The weights file, for a message.
    init: &'a Path,
}

impl Features<'_> {
    /// The features of the crops `values` (`sample` each), refused where one is not
    /// finite (`id` names the image of a row).
    fn of<'f>(
        &self,
        values: Vec<f32>,
        sample: usize,
        id: impl Fn(usize) -> &'f String,
    ) -> Result<Vec<f32>> {
        let rows = values.len() / sample;
        let x = Tensor::<2>::from_data(TensorData::new(values, [rows, sample]), self.device);
        let features = self.network.features(x).expect("a ResNet has features");
        let features: Vec<f32> = features
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| Error::Device(format!("reading the features: {e:?}")))?;
        if let Some(bad) = features.iter().position(|v| !v.is_finite()) {
            return refuse(format!(
                "{}: the features of {} are not finite (are the weights?)",
                self.init.display(),
                id(bad / self.width)
            ));
        }
        Ok(features)
    }
}

/// Every file of `files` decoded, cropped and embedded in file order, `batch` a pass,
/// its features appended to `matrix`: the indices of the files kept, and how many were
/// skipped (each with a line to `say`).
fn embed_files(
    files: &[ImageFile],
    batch: usize,
    features: &Features,
    matrix: &mut MatrixWriter,
    tick: &mut dyn FnMut(),
    say: &mut dyn FnMut(String),
) -> Result<(Vec<usize>, usize)> {
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
                        say(format!("skipped {}: {reason}", files[i].id));
                    }
                }
                tick();
            }
            let rows = values.len() / sample;
            if rows > 0 {
                let row_id = |row: usize| &files[kept[kept.len() - rows + row]].id;
                matrix.push(&features.of(values, sample, row_id)?)?;
            }
        }
        Ok(())
    })?;
    Ok((kept, skipped))
}

/// What is written beside the matrix: each row's label (`labels.npy`, and its class name
/// in `labels.txt`), its image (`ids.txt`), and how the features were made
/// (`config.json`).
struct Sidecars<'a> {
    classes: &'a [String],
    kept: &'a [&'a ImageFile],
    architecture: Architecture,
    width: usize,
    skipped: usize,
}

impl Sidecars<'_> {
    /// Write them into `out`, for the folder `data` and the weights `init`.
    fn write(&self, out: &Path, data: &Path, init: &Path) -> Result<()> {
        let labels: Vec<i64> = self.kept.iter().map(|f| f.label as i64).collect();
        write_i64_vector(&out.join("labels.npy"), &labels)?;
        let lines = |f: &dyn Fn(&ImageFile) -> String| -> Vec<u8> {
            self.kept
                .iter()
                .map(|file| f(file) + "\n")
                .collect::<String>()
                .into_bytes()
        };
        write_atomically(
            &out.join("labels.txt"),
            &lines(&|f| self.classes[f.label as usize].clone()),
        )?;
        write_atomically(&out.join("ids.txt"), &lines(&|f| f.id.clone()))?;
        let config = serde_json::json!({
            "architecture": self.architecture.name(),
            "init": crate::absolute(init),
            "data": crate::absolute(data),
            "preprocessing": PREPROCESSING,
            "features": self.width,
            "rows": self.kept.len(),
            "classes": self.classes,
            "skipped": self.skipped,
        });
        let text = serde_json::to_string_pretty(&config)
            .map_err(|e| Error::Input(format!("writing config.json: {e}")))?;
        write_atomically(&out.join("config.json"), text.as_bytes())?;
        Ok(())
    }
}

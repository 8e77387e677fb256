//! `taks predict --model DIR INPUTS...`: the kept model of an audit or of a `taks train`
//! run, on new inputs.
//!
//! Inputs are prepared exactly as `model.json` says the run prepared its data (resized,
//! or centre-cropped as torchvision does for a network fine-tuned from pretrained weights). For an
//! image model, an input is an image file or a folder searched recursively for images;
//! for a table model, a CSV file with the model's feature columns (any label column is
//! ignored), or for a model audited from a `.npy` matrix, a `.npy` of as many columns. Prints `id,predicted_label,confidence` per input to stdout. An image that
//! cannot be decoded is reported on stderr and left out; every prediction that could
//! be made is still printed, and the exit status is then 1. A CSV without the model's
//! columns is an error before anything is printed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use burn::tensor::activation::softmax;
use burn::tensor::{Tensor, TensorData};
use clap::Args;
use taks_core::audit::input::{Input, scaled_pixels};
use taks_core::audit::model_card::CentreCrop;
use taks_core::formats::image_folder::{decode_centre_crop, decode_one, files_under};
use taks_core::formats::{csv_table, npy};

use taks_core::settings::flags::DeviceChoice;

use crate::device;
use crate::model_file::{self, Loaded};
use taks_core::audit::suspects::csv_field;

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// The folder holding model.json and model.safetensors: the output of `taks audit`,
    /// or a `taks train` run (not one on embeddings).
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Image files, folders of images, CSV files, or .npy feature matrices.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Compute device: cpu (the default here), gpu, or auto (as for `taks train`).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Cpu)]
    pub device: DeviceChoice,
}

/// Samples predicted per forward pass.
const CHUNK: usize = 256;

pub fn run(args: PredictArgs) -> Result<()> {
    for input in &args.inputs {
        if !input.exists() {
            bail!("{}: no such file or folder", input.display());
        }
    }
    let chosen = device::choose(args.device)?;
    let loaded = model_file::load(&args.model, &chosen.device)?;
    let card = &loaded.card;
    let sample_size: usize = card.input.shape().iter().product();
    let mut failures = 0usize;
    let (ids, mut values) = match &card.input {
        Input::Table { features } => table_rows(&args.inputs, features)?,
        Input::Image {
            channels,
            height,
            width,
        } => {
            let mut ids = Vec::new();
            let mut values: Vec<f32> = Vec::new();
            for path in image_inputs(&args.inputs)? {
                let id = path.display().to_string();
                let decoded = match card.centre_crop {
                    Some(CentreCrop { resize }) => decode_centre_crop(&path, resize, *width as u32),
                    None => decode_one(&path, *channels, *width as u32, *height as u32),
                };
                match decoded {
                    Ok(pixels) => {
                        values.extend(scaled_pixels(&pixels));
                        ids.push(id);
                    }
                    Err(reason) => {
                        failures += 1;
                        eprintln!("skipped {id}: {reason}");
                    }
                }
            }
            (ids, values)
        }
    };
    card.normalisation.apply(&mut values, sample_size);
    print_predictions(&loaded, &chosen.device, &ids, &values)?;
    if failures > 0 {
        bail!("{failures} inputs could not be read (listed above); the others were predicted");
    }
    Ok(())
}

/// The rows of CSV tables or `.npy` matrices with the model's `features`, each named by
/// its row (and its file, where there are several).
fn table_rows(inputs: &[PathBuf], features: &[String]) -> Result<(Vec<String>, Vec<f32>)> {
    let single = inputs.len() == 1;
    let mut ids = Vec::new();
    let mut values = Vec::new();
    for path in inputs {
        if path.is_dir() {
            bail!(
                "{}: this model takes CSV rows, not a folder of images",
                path.display()
            );
        }
        let rows = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
        {
            let matrix = npy::read_matrix(path)?;
            if matrix.cols != features.len() {
                bail!(
                    "{}: {} columns, and this model takes {} features",
                    path.display(),
                    matrix.cols,
                    features.len()
                );
            }
            matrix.values
        } else {
            csv_table::read_features(path, features)?
        };
        for r in 0..rows.len() / features.len() {
            ids.push(match single {
                true => r.to_string(),
                false => format!("{}#{r}", path.display()),
            });
        }
        values.extend(rows);
    }
    Ok((ids, values))
}

/// Each sample's predicted class and its confidence, a CSV row each on stdout, in
/// chunks of [`CHUNK`]; a reader that stops early (`| head`) is not an error.
fn print_predictions(
    loaded: &Loaded,
    device: &burn::tensor::Device,
    ids: &[String],
    values: &[f32],
) -> Result<()> {
    let card = &loaded.card;
    let sample_size: usize = card.input.shape().iter().product();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "id,predicted_label,confidence")?;
    for (c, chunk) in values.chunks(CHUNK * sample_size).enumerate() {
        let rows = chunk.len() / sample_size;
        let x =
            Tensor::<2>::from_data(TensorData::new(chunk.to_vec(), [rows, sample_size]), device);
        let p = softmax(loaded.network.forward(x), 1);
        let p: Vec<f32> = p
            .into_data()
            .try_into_vec::<f32>()
            .map_err(|e| anyhow::anyhow!("reading predictions: {e:?}"))?;
        for (r, row) in p.chunks_exact(card.classes.len()).enumerate() {
            let (best, confidence) = taks_core::audit::argmax(row);
            let line = writeln!(
                out,
                "{},{},{confidence:.4}",
                csv_field(&ids[c * CHUNK + r]),
                csv_field(&card.classes[best])
            );
            if let Err(e) = &line
                && e.kind() == std::io::ErrorKind::BrokenPipe
            {
                return Ok(());
            }
            line?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Files as given; folders searched recursively (hidden entries skipped), sorted.
fn image_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            out.extend(files_under(input)?.into_iter().map(|(_, path)| path));
        } else {
            out.push(input.clone());
        }
    }
    Ok(out)
}

//! `taks experiment`: the paper's comparison from one command.
//!
//! Runs every (dataset, noise, method, seed) cell of a grid into its own run folder
//! (`OUT/runs/<dataset>/<noise>/<method>/seed<s>/`, the same files `taks train` writes),
//! then writes the paper's tables and curves:
//! - `table.md`: one row per method, one column per (dataset, noise), in three parts:
//!   test accuracy and label precision (mean +- std over seeds of each run's last-10
//!   mean; std is the population std, numpy's default) and the time ratio x T (mean
//!   epoch time over Standard's, in the same grid, on the same device);
//! - `table.csv`: the same numbers, one line per (dataset, noise, method);
//! - `curves/<dataset>-<noise>.svg`: test accuracy per epoch, one line per method
//!   (mean over seeds).
//!
//! A run folder with a summary.json is finished and is reused, so running the same
//! command again continues an interrupted grid; a folder without one was interrupted
//! and its run resumes from its last checkpoint (exactly, as `taks train --resume`), or
//! starts over if it stopped before its first. A run whose settings differ from the
//! grid's is an error, never silently mixed into a table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use taks_core::data::DatasetKind;
use taks_core::formats::state_dict::StateDict;
use taks_core::methods::Method;
use taks_core::metrics::Summary;
use taks_core::nn::{Architecture, pretrained};
use taks_core::noise::NoiseKind;
use taks_core::precision::Precision;
use taks_core::settings::Choices;
use taks_core::settings::TrainConfig;
use web_time::Instant;

use taks_core::settings::flags::DeviceChoice;

use crate::device::{self, Chosen};
use crate::folder_data::{self, RunData};
use crate::picks::{self, MethodPick};
use crate::{plot, progress, run_folder, summary_table};

mod tables;

use tables::{collect, csv_table, markdown_table};

#[derive(clap::Args, Debug)]
pub struct ExperimentArgs {
    /// Datasets, comma-separated.
    #[arg(long, value_enum, required = true, value_delimiter = ',')]
    pub datasets: Vec<DatasetKind>,
    /// Noises, comma-separated, each KIND-RATE: symmetric-0.5, pairflip-0.45,
    /// asymmetric-0.4 (or clean).
    #[arg(
        long,
        required = true,
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub noises: Vec<String>,
    /// Methods, comma-separated, or `all`.
    #[arg(long, value_enum, default_value = "all", value_delimiter = ',')]
    pub methods: Vec<MethodPick>,
    /// Seeds, comma-separated.
    #[arg(
        long,
        default_value = "0",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub seeds: Vec<u64>,
    /// Epochs per run (default 200; 15 with --init).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Compute device: auto, gpu or cpu (as for train).
    #[arg(long, value_enum, default_value_t = DeviceChoice::Auto)]
    pub device: DeviceChoice,
    /// The arithmetic of every run's training steps, as for train: f32, or mixed
    /// precision (f16 or bf16) on a GPU whose adapter has the type. Default: f32.
    #[arg(long, value_enum)]
    pub precision: Option<Precision>,
    /// Where a dataset's files are, as DATASET=DIR (comma-separated or repeated).
    /// fashion-mnist defaults to /usr/share/datasets/fashion-mnist.
    #[arg(long, value_delimiter = ',', value_name = "DATASET=DIR")]
    pub data_dir: Vec<String>,
    /// Use only the first N training samples of each dataset (quick grids).
    #[arg(long, value_name = "N")]
    pub train_limit: Option<usize>,
    /// Use only the first N test samples.
    #[arg(long, value_name = "N")]
    pub test_limit: Option<usize>,
    /// The experiment folder (runs/, table.md, table.csv, curves/).
    #[arg(long)]
    pub out: PathBuf,
    /// Fine-tune every run from these pretrained weights (a torchvision or timm
    /// ResNet-18, -34 or -50 state_dict, .pth or .safetensors), as `train --init` does:
    /// folder datasets only, the file's network, torchvision's preparation and the
    /// paper's Clothing1M step schedule.
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
}

/// One cell of the grid.
struct Cell {
    config: TrainConfig,
    dir: PathBuf,
}

/// A noise item as written on the command line: `symmetric-0.5`, `clean`.
fn parse_noise(item: &str) -> Result<(NoiseKind, f64)> {
    if item == "clean" {
        return Ok((NoiseKind::Clean, 0.0));
    }
    let kinds = || {
        NoiseKind::ALL
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (kind, rate) = NoiseKind::ALL
        .into_iter()
        .find_map(|k| Some((k, item.strip_prefix(k.name())?.strip_prefix('-')?)))
        .with_context(|| {
            format!(
                "noise '{item}' is not KIND-RATE (KIND one of {}; e.g. symmetric-0.5, pairflip-0.45)",
                kinds()
            )
        })?;
    let rate: f64 = rate
        .parse()
        .with_context(|| format!("noise '{item}': rate '{rate}' is not a number"))?;
    if !(0.0..=1.0).contains(&rate) {
        bail!("noise '{item}': rate {rate} must be in [0, 1]");
    }
    Ok((kind, rate))
}

fn noise_label(kind: NoiseKind, rate: f64) -> String {
    match kind {
        NoiseKind::Clean => "clean".into(),
        _ => format!("{}-{}", kind.name(), rate),
    }
}

pub fn run(args: ExperimentArgs) -> Result<()> {
    let (args, grid) = grid_of(args)?;
    let cells = cells_of(&args, &grid)?;
    let todo: Vec<&Cell> = cells
        .iter()
        .map(|c| finished(c).map(|done| (c, done)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .filter(|(_, done)| !done)
        .map(|(c, _)| c)
        .collect();
    // Before anything is printed or a run folder made: the device, and a precision it
    // cannot run.
    let chosen = match todo.is_empty() {
        true => None,
        false => {
            let chosen = device::choose(args.device)?;
            args.precision.unwrap_or_default().check(&chosen.device)?;
            Some(chosen)
        }
    };
    say(
        &args,
        format!(
            "{} runs ({} already finished in {}), {} epochs each",
            cells.len(),
            cells.len() - todo.len(),
            args.out.display(),
            grid.epochs
        ),
    );
    if let Some(chosen) = chosen {
        run_cells(&args, &grid, &todo, cells.len(), &chosen)?;
    }
    write_tables(&args, &grid, &cells)
}

/// What the grid crosses, from the flags: each dataset once, the noises, the methods,
/// each dataset's folder, the pretrained weights (read once, shared by every run).
struct Grid {
    epochs: usize,
    /// Whether `--epochs` was given (a fine-tuning run keeps its schedule's otherwise).
    epochs_given: bool,
    datasets: Vec<DatasetKind>,
    noises: Vec<(NoiseKind, f64)>,
    methods: Vec<Method>,
    dirs: HashMap<DatasetKind, PathBuf>,
    init: Option<(PathBuf, Arc<StateDict>)>,
}

/// The grid the flags name, and the flags with `--epochs` settled (15 fine-tuning a
/// pretrained network, else the paper's 200).
fn grid_of(args: ExperimentArgs) -> Result<(ExperimentArgs, Grid)> {
    let epochs_given = args.epochs.is_some();
    let epochs = args
        .epochs
        .unwrap_or(if args.init.is_some() { 15 } else { 200 });
    if epochs == 0 {
        bail!("--epochs must be at least 1");
    }
    let args = ExperimentArgs {
        epochs: Some(epochs),
        ..args
    };
    if args.seeds.is_empty() {
        bail!("--seeds: give at least one seed");
    }
    let mut datasets: Vec<DatasetKind> = Vec::new();
    for &d in &args.datasets {
        if !datasets.contains(&d) {
            datasets.push(d);
        }
    }
    let noises: Vec<(NoiseKind, f64)> = args
        .noises
        .iter()
        .map(|n| parse_noise(n.trim()))
        .collect::<Result<_>>()?;
    let mut dirs: HashMap<DatasetKind, PathBuf> = HashMap::new();
    for item in &args.data_dir {
        let (name, dir) = item
            .split_once('=')
            .with_context(|| format!("--data-dir '{item}' is not DATASET=DIR"))?;
        dirs.insert(name.parse()?, PathBuf::from(dir));
    }
    let init = match &args.init {
        Some(path) => Some((path.clone(), Arc::new(pretrained::read(path)?))),
        None => None,
    };
    let grid = Grid {
        epochs,
        epochs_given,
        datasets,
        noises,
        methods: picks::methods(&args.methods),
        dirs,
        init,
    };
    Ok((args, grid))
}

/// Every cell's settings and run folder, validated before anything runs. A folder's
/// network and input are chosen once, from its training images.
fn cells_of(args: &ExperimentArgs, grid: &Grid) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    let mut folder_choice: Option<(Architecture, [usize; 3])> = None;
    for &dataset in &grid.datasets {
        for &(noise, rate) in &grid.noises {
            for &method in &grid.methods {
                for &seed in &args.seeds {
                    let mut config = Choices {
                        epochs: Some(grid.epochs),
                        seed: Some(seed),
                        train_limit: args.train_limit,
                        test_limit: args.test_limit,
                        precision: args.precision,
                        ..Choices::new(dataset, noise, rate, method)
                    }
                    .build()?;
                    if let Some((path, state)) = &grid.init {
                        let given = taks_core::settings::fine_tune::Given {
                            schedule: false,
                            epochs: grid.epochs_given,
                        };
                        config.fine_tune(path, state, given)?;
                    }
                    if let Some((architecture, input)) =
                        folder_choice.filter(|_| dataset == DatasetKind::Folder)
                    {
                        config.architecture = architecture;
                        config.folder_input = Some(input);
                    }
                    let dir = grid.dirs.get(&dataset).map(PathBuf::as_path);
                    folder_data::choose(&mut config, dir)?;
                    if let Some(input) = config.folder_input {
                        folder_choice = Some((config.architecture, input));
                    }
                    let dir = args
                        .out
                        .join("runs")
                        .join(dataset.name())
                        .join(noise_label(noise, rate))
                        .join(method.name())
                        .join(format!("seed{seed}"));
                    cells.push(Cell { config, dir });
                }
            }
        }
    }
    Ok(cells)
}

/// A line for a person, unless `--quiet`.
fn say(args: &ExperimentArgs, line: String) {
    if !args.quiet {
        eprintln!("{line}");
    }
}

/// The runs not finished yet, one after the other on `chosen` (each dataset read once),
/// a line for each as it ends.
fn run_cells(
    args: &ExperimentArgs,
    grid: &Grid,
    todo: &[&Cell],
    total: usize,
    chosen: &Chosen,
) -> Result<()> {
    say(args, format!("device: {}", chosen.description));
    let bar = progress::bar(todo.len() * grid.epochs, args.quiet, progress::RUNS);
    let mut loaded: HashMap<DatasetKind, RunData> = HashMap::new();
    let reused = total - todo.len();
    for (i, cell) in todo.iter().enumerate() {
        let c = &cell.config;
        let name = format!(
            "{} {} {} seed{}",
            c.dataset.name(),
            noise_label(c.noise, c.noise_rate),
            c.method.name(),
            c.seed
        );
        let run_no = reused + i + 1;
        if let Some(bar) = &bar {
            bar.set_message(format!("run {run_no}/{total}: {name}"));
        }
        let data = match loaded.get(&c.dataset) {
            Some(data) => data.clone(),
            None => {
                let dir = grid.dirs.get(&c.dataset).map(PathBuf::as_path);
                let data = folder_data::load(c, dir)?;
                if let Some(note) = &data.note {
                    say(args, note.clone());
                }
                loaded.insert(c.dataset, data.clone());
                data
            }
        };
        let started = Instant::now();
        let summary = run_cell(cell, data, grid, chosen, bar.as_ref())
            .with_context(|| format!("run {name}"))?;
        let line = format!(
            "[{run_no}/{total}] {name}: test acc {:.2}%, label precision {:.2}% ({:.1} s)",
            summary.test_accuracy * 100.0,
            summary.label_precision * 100.0,
            started.elapsed().as_secs_f64()
        );
        match &bar {
            Some(bar) => bar.println(line),
            None => say(args, line),
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(())
}

/// One cell's run into its run folder, checkpointed every epoch; an unfinished folder
/// is a run that was cut off, and it resumes.
fn run_cell(
    cell: &Cell,
    data: RunData,
    grid: &Grid,
    chosen: &Chosen,
    bar: Option<&ProgressBar>,
) -> Result<Summary> {
    let c = &cell.config;
    std::fs::create_dir_all(&cell.dir)
        .with_context(|| format!("creating {}", cell.dir.display()))?;
    let checkpoint = run_folder::saved_checkpoint(&cell.dir, c)?;
    let options = run_folder::Options {
        checkpoint_every: 1,
        data_dir: grid.dirs.get(&c.dataset).cloned(),
        init: grid.init.clone(),
        ..Default::default()
    };
    let (_, summary) = run_folder::train_into(
        c,
        data,
        checkpoint,
        chosen,
        &cell.dir,
        &options,
        &mut |event| {
            if let (run_folder::Event::Epoch(_), Some(bar)) = (event, bar) {
                bar.inc(1);
            }
        },
    )?;
    Ok(summary)
}

/// table.md, table.csv and a plot of each column's curves, from every cell's run folder.
fn write_tables(args: &ExperimentArgs, grid: &Grid, cells: &[Cell]) -> Result<()> {
    let results = collect(cells)?;
    std::fs::create_dir_all(args.out.join("curves"))?;
    let markdown = markdown_table(&results, &grid.datasets, &grid.noises, &grid.methods, args);
    write(&args.out.join("table.md"), &markdown)?;
    write(&args.out.join("table.csv"), &csv_table(&results))?;
    for &dataset in &grid.datasets {
        for &(noise, rate) in &grid.noises {
            let key = (dataset, noise_label(noise, rate));
            let series: Vec<(String, Vec<f64>)> = grid
                .methods
                .iter()
                .filter_map(|m| {
                    let r = results.get(&(key.0, key.1.clone(), *m))?;
                    Some((m.title().to_string(), r.mean_curve.clone()))
                })
                .collect();
            let title = format!(
                "Test accuracy, {} {} (mean of {} seeds)",
                dataset.name(),
                key.1,
                args.seeds.len()
            );
            let file = format!("{}-{}.svg", dataset.name(), key.1);
            write(
                &args.out.join("curves").join(file),
                &plot::curves(&title, &series),
            )?;
        }
    }
    print!("{markdown}");
    println!(
        "wrote {0}/table.md, {0}/table.csv and {0}/curves/",
        args.out.display()
    );
    Ok(())
}

/// Whether `cell` already holds a finished run with the same settings.
fn finished(cell: &Cell) -> Result<bool> {
    if !cell.dir.join("summary.json").exists() {
        return Ok(false);
    }
    let row = summary_table::read_run(&cell.dir)?;
    if row.config != cell.config {
        bail!(
            "{} holds a finished run with other settings than this grid's (epochs, limits, precision or method settings); use another --out",
            cell.dir.display()
        );
    }
    Ok(true)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_items_parse() {
        assert_eq!(
            parse_noise("symmetric-0.5").unwrap(),
            (NoiseKind::Symmetric, 0.5)
        );
        assert_eq!(
            parse_noise("pairflip-0.45").unwrap(),
            (NoiseKind::Pairflip, 0.45)
        );
        assert_eq!(parse_noise("clean").unwrap(), (NoiseKind::Clean, 0.0));
        assert!(parse_noise("symmetric").is_err());
        assert!(parse_noise("symmetric-1.5").is_err());
        assert!(parse_noise("gaussian-0.2").is_err());
        assert_eq!(noise_label(NoiseKind::Asymmetric, 0.4), "asymmetric-0.4");
    }
}

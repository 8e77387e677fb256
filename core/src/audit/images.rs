//! An image folder on its way into an audit: scanned, checked, given a network, decoded.
//!
//! `taks audit DIR` and the browser page's folder picker both come here, so a folder
//! gets the same network, the same input and the same samples in the same order
//! wherever it is audited. Three steps:
//! 1. [`Examined::new`]: the scan's headers give the most common size; colour is kept
//!    only when it carries something ([`network::colour_carries_nothing`], on up to
//!    [`COLOUR_CHECK_FILES`] colour files spread over the folder); an explicit network
//!    or size is checked now, before any device is opened.
//! 2. [`Examined::network`]: the explicit choice, or the most capable network whose
//!    audit fits the time budget on the device ([`network::choose`]).
//! 3. [`Examined::decode`]: every file decoded at that input, into memory or, over the
//!    memory budget, into a decoded cache file ([`crate::data::cache`]).

use burn::tensor::Device;

use super::AuditSettings;
use super::input::{self, Input, Prepared};
use super::network::{self, Choice};
use crate::data::cache::{self, Cache};
use crate::formats::image_folder::{self, Fit, Scan, Skipped};
use crate::nn::Architecture;
use crate::{Error, Result};

/// How many colour files the colour check decodes, spread over the folder.
pub const COLOUR_CHECK_FILES: usize = 256;

/// A scanned folder whose input is settled but for the network.
pub struct Examined {
    /// The folder as the user named it (for messages).
    pub source: String,
    scan: Scan,
    common: (u32, u32),
    /// Whether colour is kept: some file is colour and its colour says something.
    colour: bool,
    /// Why colour images are audited in grey, when they are.
    pub colour_note: Option<String>,
    /// The network and input `model`/`size` chose, checked at the scan.
    explicit: Option<(Architecture, Input)>,
}

/// The decoded folder, ready for the networks.
pub struct Images {
    pub prepared: Prepared,
    pub architecture: Architecture,
    /// Per sample: its path relative to the folder.
    pub ids: Vec<String>,
    pub classes: Vec<String>,
    /// The labels as filed.
    pub labels: Vec<u32>,
    /// Every file left out, at the scan or at decoding, with its reason.
    pub skipped: Vec<Skipped>,
    /// How the network was chosen by the time budget (when none was named).
    pub network_choice: Option<Choice>,
    pub colour_note: Option<String>,
}

impl Examined {
    /// Check a scan of `source`: it must hold a readable image; `model` and `size`, when
    /// given, must fit the images.
    pub fn new(
        scan: Scan,
        source: &str,
        model: Option<Architecture>,
        size: Option<(u32, u32)>,
    ) -> Result<Self> {
        let Some(common) = scan.most_common_size() else {
            return Err(Error::malformed(
                source,
                format!(
                    "no readable images in its {} class folders{}",
                    scan.classes.len(),
                    match scan.skipped.first() {
                        Some(s) => format!(
                            " ({} skipped, e.g. {}: {})",
                            scan.skipped.len(),
                            s.id,
                            s.reason
                        ),
                        None => String::new(),
                    }
                ),
            ));
        };
        let explicit = match model.is_some() || size.is_some() {
            true => Some(input::choose_for_images(
                common,
                scan.any_colour(),
                model,
                size,
            )?),
            false => None,
        };
        let mut colour = scan.any_colour();
        let mut colour_note = None;
        if colour && explicit.is_none() {
            let coloured: Vec<_> = scan.files.iter().filter(|f| f.colour).cloned().collect();
            let step = coloured.len().div_ceil(COLOUR_CHECK_FILES).max(1);
            let sample: Vec<_> = coloured.into_iter().step_by(step).collect();
            let decoded = image_folder::decode(sample, 3, common.0, common.1);
            let plane = (common.0 * common.1) as usize * 3;
            let images: Vec<(Vec<u8>, u32)> = decoded
                .pixels
                .chunks_exact(plane)
                .zip(&decoded.files)
                .map(|(p, f)| (p.to_vec(), f.label))
                .collect();
            if network::colour_carries_nothing(&images) {
                colour = false;
                colour_note = Some(format!(
                    "the {} colour files checked are grey or tinted grey, and their tints say nothing about the class: audited in grey",
                    images.len()
                ));
            }
        }
        Ok(Examined {
            source: source.to_string(),
            scan,
            common,
            colour,
            colour_note,
            explicit,
        })
    }

    /// The label of every readable file, as far as the headers say.
    pub fn labels(&self) -> Vec<u32> {
        self.scan.files.iter().map(|f| f.label).collect()
    }

    /// The files left out so far, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.scan.skipped
    }

    pub fn classes(&self) -> &[String] {
        &self.scan.classes
    }

    /// The network and input: the explicit ones, else the most capable network whose
    /// audit under `settings` fits `budget_seconds` on `device` (then with its reasons).
    /// `say` hears what is being timed.
    pub async fn network(
        &self,
        settings: &AuditSettings,
        budget_seconds: f64,
        device: &Device,
        say: &mut dyn FnMut(String),
    ) -> Result<(Architecture, Input, Option<Choice>)> {
        if let Some((architecture, input)) = &self.explicit {
            return Ok((*architecture, input.clone(), None));
        }
        let candidates = network::candidates(self.common, self.colour);
        say(format!(
            "timing {} networks on the device for the {budget_seconds:.0} s budget (--budget)",
            candidates.len(),
        ));
        let choice = network::choose(
            &candidates,
            self.scan.files.len(),
            self.scan.classes.len(),
            settings,
            budget_seconds,
            device,
        )
        .await?;
        say(format!("chose the {}: {}", choice.network, choice.reason));
        Ok((
            choice.candidate.architecture,
            choice.candidate.input.clone(),
            Some(choice),
        ))
    }

    /// Decode every file at `input` (in memory, or through `cache` over its budget;
    /// `say` hears the cache's notes).
    pub fn decode(
        self,
        (architecture, input, network_choice): (Architecture, Input, Option<Choice>),
        cache: Option<&Cache>,
        say: &mut dyn FnMut(String),
    ) -> Result<Images> {
        let Examined {
            mut scan,
            colour_note,
            ..
        } = self;
        let shape = input.shape();
        if !matches!(input, Input::Image { .. }) {
            return Err(Error::Config("an image folder needs an image input".into()));
        }
        let files = std::mem::take(&mut scan.files);
        let decoded = cache::decode(files, shape, Fit::Resize, cache, say)?;
        let mut skipped = scan.skipped;
        skipped.extend(decoded.skipped);
        let labels: Vec<u32> = decoded.files.iter().map(|f| f.label).collect();
        let ids = decoded.files.into_iter().map(|f| f.id).collect();
        let prepared =
            input::prepare_images(decoded.samples, labels.clone(), shape, scan.classes.len());
        Ok(Images {
            prepared,
            architecture,
            ids,
            classes: scan.classes,
            labels,
            skipped,
            network_choice,
            colour_note,
        })
    }
}

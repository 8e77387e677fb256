//! A run's settings, from the flag to the validated [`TrainConfig`], in one place.
//!
//! - [`flags`]: the command line's flags that define a run (feature `clap`), with the
//!   values of its fixed-choice settings ([`flag_values`]); `--gamma`'s number or audit
//!   is read by [`gamma`].
//! - [`Choices`]: what a person chose, a setting left unsaid `None`. Every front end
//!   fills one (the command line from its flags, the page from its form, Python from its
//!   keywords, an experiment grid from its file, the audit from its own choices).
//! - [`paper`]: the paper's value of every setting, beside the setting it defaults, per
//!   dataset, noise and method; what a `None` becomes.
//! - [`TrainConfig`]: the settings of one run, validated, saved as `config.json`;
//!   [`fine_tune`] sets one up to start from pretrained weights.

mod choices;
mod config;
pub mod fine_tune;
#[cfg(feature = "clap")]
mod flag_values;
#[cfg(feature = "clap")]
pub mod flags;
pub mod gamma;
pub mod paper;

pub use choices::Choices;
pub use config::{TrainConfig, eta_of};

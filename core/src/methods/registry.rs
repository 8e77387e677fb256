//! The one table of methods. A row is a [`MethodSpec`]: everything taks needs to know
//! about a method (its names, its help line, how many networks it trains, which settings
//! it reads, how many samples an epoch trains on, and how to build its [`Rule`]). The
//! command line's value list, `taks experiment`'s `all`, the checkpoint and the page's
//! method list all read [`REGISTRY`]; nothing else lists methods.
//!
//! Adding a method from the literature: write its file under `core/src/methods/` with a
//! `pub(crate) const SPEC: MethodSpec` and its [`Rule`], and add one row to
//! [`REGISTRY`]. `core/tests/registry.rs` then trains it for an epoch with the others.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::rule::{Rule, RuleInputs};
use super::{co_teaching, co_teaching_plus, decouple, f_correction, itlm, jocor, standard, taks};
use crate::{Error, Result};

/// Everything taks knows about one method.
pub struct MethodSpec {
    /// The name on the command line, in `config.json` and in run folders.
    pub name: &'static str,
    /// The name the paper's tables use.
    pub title: &'static str,
    /// One line for `--help` and the page.
    pub help: &'static str,
    /// Networks trained side by side (1, or 2 for the co-training methods).
    pub networks: usize,
    /// The run settings this method reads besides the common ones (epochs, batch,
    /// learning rate, schedule, seed): they get the paper's defaults for the dataset and
    /// noise, and are validated, only where a method reads them.
    pub settings: &'static [Setting],
    /// How many of the n training samples one epoch trains on.
    pub epoch_size: EpochSize,
    /// Whether the method chooses its k-set with the FPL selector (TAkS and its
    /// ablations), and so has a noise-risk, a regret and its bound to report.
    pub selects: bool,
    /// Build the method's [`Rule`] for one run.
    pub build: fn(&RuleInputs<'_>) -> Result<Box<dyn Rule>>,
}

/// How many samples an epoch trains on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochSize {
    /// All n.
    All,
    /// k = floor(n k_ratio) (TAkS and its ablations).
    KRatio,
    /// int(n (1 - tau)), at least one (ITLM's trimmed set).
    Unforgotten,
}

/// A setting some methods read (a row's [`MethodSpec::settings`]); its paper value per
/// dataset and noise is [`crate::settings::paper::method_setting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// TAkS and its ablations: k = floor(n k_ratio).
    KRatio,
    /// TAkS: eta = sqrt(k T) eta_ratio.
    EtaRatio,
    /// tau, the share of each batch (of the training set, for ITLM) left out.
    ForgetRate,
    /// JoCoR's lambda, the weight of the co-regularisation term.
    CoLambda,
    /// Co-teaching+'s first epoch of disagreement-based exchange.
    InitEpoch,
}

impl Setting {
    /// The name of its command-line flag.
    pub fn flag(self) -> &'static str {
        match self {
            Setting::KRatio => "--k-ratio",
            Setting::EtaRatio => "--eta-ratio",
            Setting::ForgetRate => "--forget-rate",
            Setting::CoLambda => "--co-lambda",
            Setting::InitEpoch => "--init-epoch",
        }
    }
}

/// The methods, in the order of the paper's tables: the baselines, then TAkS and its
/// ablations. One row per method; see the module docs for adding one.
pub static REGISTRY: [Method; 10] = [
    Method(&standard::SPEC),
    Method(&f_correction::SPEC),
    Method(&decouple::SPEC),
    Method(&co_teaching::SPEC),
    Method(&co_teaching_plus::SPEC),
    Method(&jocor::SPEC),
    Method(&itlm::SPEC),
    Method(&taks::TAKS),
    Method(&taks::GREEDY),
    Method(&taks::NAIVE),
];

/// A registered method: a handle on its row of [`REGISTRY`], compared, hashed and
/// saved by name.
#[derive(Clone, Copy)]
pub struct Method(&'static MethodSpec);

impl Method {
    /// The methods the rest of taks names (the paper's method, its baseline for the time
    /// ratio, the ones tests and the audit pick); every other method is reached through
    /// [`REGISTRY`] alone.
    pub const TAKS: Method = Method(&taks::TAKS);
    pub const GREEDY: Method = Method(&taks::GREEDY);
    pub const NAIVE: Method = Method(&taks::NAIVE);
    pub const STANDARD: Method = Method(&standard::SPEC);
    pub const F_CORRECTION: Method = Method(&f_correction::SPEC);
    pub const DECOUPLE: Method = Method(&decouple::SPEC);
    pub const CO_TEACHING: Method = Method(&co_teaching::SPEC);
    pub const CO_TEACHING_PLUS: Method = Method(&co_teaching_plus::SPEC);
    pub const JOCOR: Method = Method(&jocor::SPEC);
    pub const ITLM: Method = Method(&itlm::SPEC);

    /// Every registered method, in the registry's order.
    pub fn all() -> &'static [Method] {
        &REGISTRY
    }

    pub fn spec(self) -> &'static MethodSpec {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn title(self) -> &'static str {
        self.0.title
    }

    pub fn help(self) -> &'static str {
        self.0.help
    }

    pub fn networks(self) -> usize {
        self.0.networks
    }

    /// See [`MethodSpec::selects`].
    pub fn uses_selector(self) -> bool {
        self.0.selects
    }

    /// Whether the method reads `setting`.
    pub fn reads(self, setting: Setting) -> bool {
        self.0.settings.contains(&setting)
    }
}

impl PartialEq for Method {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Method {}

impl Hash for Method {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        REGISTRY
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = REGISTRY.iter().map(|m| m.name()).collect();
                Error::Config(format!(
                    "unknown method '{s}' (choose {})",
                    names.join(", ")
                ))
            })
    }
}

impl Serialize for Method {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, m) in REGISTRY.iter().enumerate() {
            assert_eq!(m.name().parse::<Method>().unwrap(), *m);
            assert!(
                REGISTRY[..i]
                    .iter()
                    .all(|o| o.name() != m.name() && o.title() != m.title()),
                "{m} registered twice"
            );
            let json = serde_json::to_string(m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), *m);
        }
        let err = "coteaching".parse::<Method>().unwrap_err().to_string();
        assert!(err.contains("co-teaching-plus"), "{err}");
        assert!(serde_json::from_str::<Method>("\"sgd\"").is_err());
    }

    #[test]
    fn rows_are_consistent() {
        for m in Method::all() {
            let spec = m.spec();
            assert!(
                matches!(spec.networks, 1 | 2),
                "{m}: {} networks",
                spec.networks
            );
            // A selecting method trains on its k-set and reads k and eta.
            assert_eq!(spec.selects, spec.epoch_size == EpochSize::KRatio, "{m}");
            assert_eq!(spec.selects, m.reads(Setting::KRatio), "{m}");
            assert_eq!(
                spec.epoch_size == EpochSize::Unforgotten,
                *m == Method::ITLM
            );
            assert!(!spec.help.is_empty() && !spec.help.ends_with('.'), "{m}");
        }
    }
}

//! The audit `taks audit`'s flags ask for, as the core takes it
//! ([`taks_core::audit::request`]): the data they name and the choices they make.

use anyhow::{Result, bail};
use taks_core::audit::AuditChoices;
use taks_core::audit::request::AuditRequest;
use taks_core::audit::source::SourceSpec;
use taks_core::data::cache::Cache;

use super::AuditArgs;

/// The request the flags make.
pub fn of(args: &AuditArgs) -> AuditRequest {
    let source = SourceSpec {
        data: args.data.clone(),
        dataset: args.dataset,
        labels: args.labels.clone(),
        label_column: args.label_column.clone(),
        model: args.model,
        image_size: args.image_size,
        data_dir: args.data_dir.clone(),
        train_limit: args.train_limit,
        noise: args.noise,
        noise_rate: args.noise_rate,
        seed: args.seed,
        budget: args.budget,
        cache: Cache {
            dir: args.cache_dir.clone().unwrap_or_else(Cache::default_dir),
            budget_bytes: args.memory_budget.saturating_mul(1_000_000),
        },
    };
    let choices = AuditChoices {
        epochs: args.epochs,
        probe_epochs: args.probe_epochs,
        probe_folds: args.probe_folds,
        k_ratio: args.k_ratio,
        eta_ratio: args.eta_ratio,
        seed: args.seed,
        batch_size: args.batch_size,
        learning_rate: args.lr,
        precision: args.precision.unwrap_or_default(),
    };
    AuditRequest { source, choices }
}

/// A setting as the command line spells it: `k_ratio` is `--k-ratio`.
pub fn flag(setting: &'static str) -> String {
    format!("--{}", setting.replace('_', "-"))
}

/// The flags' values that only the built-in sets take, checked before anything is
/// read (clap's `requires` is not checked against an argument that conflicts with a
/// present one, DATA); the audit's own choices are the core's to check.
pub fn check_flags(args: &AuditArgs) -> Result<()> {
    let builtin_only = [
        ("--data-dir", args.data_dir.is_some()),
        ("--noise", args.noise.is_some()),
        ("--noise-rate", args.noise_rate.is_some()),
        ("--train-limit", args.train_limit.is_some()),
    ];
    if args.dataset.is_none()
        && let Some((flag, _)) = builtin_only.iter().find(|(_, given)| *given)
    {
        bail!("{flag} is for --dataset; DATA is audited as it is");
    }
    if let Some(rate) = args.noise_rate
        && !(0.0..=1.0).contains(&rate)
    {
        bail!("--noise-rate {rate} must be in [0, 1]");
    }
    if args.train_limit == Some(0) {
        bail!("--train-limit must be at least 1");
    }
    Ok(())
}

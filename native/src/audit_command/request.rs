//! The audit `taks audit`'s flags ask for, as the core takes it
//! ([`taks_core::audit::request`]): the data they name and the choices they make.

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

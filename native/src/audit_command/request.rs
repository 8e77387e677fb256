//! What `taks audit` audits, as its flags name it: the core reads it
//! ([`taks_core::audit::source`]).

use taks_core::audit::source::SourceSpec;
use taks_core::data::cache::Cache;

use super::AuditArgs;

/// The data the flags name.
pub fn spec(args: &AuditArgs) -> SourceSpec {
    SourceSpec {
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
    }
}

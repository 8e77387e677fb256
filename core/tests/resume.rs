//! A run stopped after any epoch and continued from its checkpoint ends exactly as
//! the same run uninterrupted, on the flex CPU backend: every measured figure of every
//! epoch equal (only the epoch's wall time may differ). Covered: TAkS (selector
//! state), Co-teaching (two networks, forget schedule), ITLM (a per-epoch scored set)
//! and F-correction (its first stage's transition matrix), each through the real
//! SafeTensors bytes. And a checkpoint is refused by a run with other settings.
//!
//! One test function: burn's flex backend seeds weight initialisation through one
//! process-wide generator, so two trainers built on parallel test threads would draw
//! each other's numbers.

mod digits;

use std::path::Path;

use burn::tensor::Device;
use taks_core::methods::Method;
use taks_core::metrics::EpochMetrics;
use taks_core::settings::TrainConfig;
use taks_core::train::Trainer;
use taks_formats::checkpoint::Checkpoint;

fn config(method: Method) -> TrainConfig {
    let mut config = digits::config(method, 3, 700, 200);
    config.batch_size = 64;
    config
}

fn trainer(config: TrainConfig) -> Trainer {
    digits::trainer(config, &Device::flex())
}

fn without_time(mut history: Vec<EpochMetrics>) -> Vec<EpochMetrics> {
    history.iter_mut().for_each(|m| m.epoch_seconds = 0.0);
    history
}

fn bits(history: &[EpochMetrics]) -> Vec<String> {
    // Bit-exact comparison that treats NaN precision as equal to itself.
    history.iter().map(|m| format!("{m:?}")).collect()
}

#[test]
fn resume_is_exact_and_checked() {
    resumed_runs_equal_uninterrupted_ones();
    a_checkpoint_of_other_settings_is_refused();
}

fn resumed_runs_equal_uninterrupted_ones() {
    let path = Path::new("checkpoint.safetensors");
    for method in [
        Method::TAKS,
        Method::CO_TEACHING,
        Method::ITLM,
        Method::F_CORRECTION,
    ] {
        let mut straight = trainer(config(method));
        let mut expected = Vec::new();
        while !straight.is_done() {
            expected.push(pollster::block_on(straight.run_epoch()).unwrap());
        }

        let mut first = trainer(config(method));
        let mut history = vec![pollster::block_on(first.run_epoch()).unwrap()];
        let bytes = pollster::block_on(first.checkpoint(&history))
            .unwrap()
            .encode();
        drop(first);

        let mut resumed = trainer(config(method));
        let saved = Checkpoint::decode(&bytes, path).unwrap();
        let restored = resumed.restore(saved, path).unwrap();
        assert_eq!(bits(&restored), bits(&history), "{}", method.name());
        assert_eq!(resumed.epoch(), 1);
        while !resumed.is_done() {
            history.push(pollster::block_on(resumed.run_epoch()).unwrap());
        }
        assert_eq!(
            bits(&without_time(history)),
            bits(&without_time(expected)),
            "{}: the resumed run differs",
            method.name()
        );
    }
}

fn a_checkpoint_of_other_settings_is_refused() {
    let path = Path::new("run/checkpoint.safetensors");
    let mut t = trainer(config(Method::TAKS));
    let history = vec![pollster::block_on(t.run_epoch()).unwrap()];
    let bytes = pollster::block_on(t.checkpoint(&history)).unwrap().encode();

    let mut other = config(Method::TAKS);
    other.seed = 1;
    let err = trainer(other)
        .restore(Checkpoint::decode(&bytes, path).unwrap(), path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run/checkpoint.safetensors") && err.contains("other settings"),
        "{err}"
    );

    // Same settings, but a tensor of the wrong shape: named, not half loaded.
    let mut damaged = Checkpoint::decode(&bytes, path).unwrap();
    let name = damaged
        .tensors
        .keys()
        .find(|k| k.starts_with("networks."))
        .unwrap()
        .clone();
    damaged.tensors.get_mut(&name).unwrap().shape = vec![1];
    let err = trainer(config(Method::TAKS))
        .restore(damaged, path)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&name) && err.contains("shape [1]"), "{err}");

    // A k-set index beyond n.
    let mut damaged = Checkpoint::decode(&bytes, path).unwrap();
    let set = damaged.tensors.get_mut("selector.current_set").unwrap();
    if let taks_formats::checkpoint::Values::U32(v) = &mut set.values {
        *v.last_mut().unwrap() = 700;
    }
    let err = trainer(config(Method::TAKS))
        .restore(damaged, path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("distinct ascending indices below 700"),
        "{err}"
    );
}

//! Resume on a wgpu device (lavapipe in CI) with the WGSL selection engine: the
//! selector's state lives on the device there (L_t and the k-hot mask), so the
//! checkpoint reads it back and the restore uploads it again. A trainer restored from
//! the checkpoint of epoch 1 must hold exactly the saved state and then train epoch 2
//! exactly as the trainer that wrote it.

mod digits;

use std::path::Path;

#[path = "../../tests/skip/mod.rs"]
mod skip;

use taks_core::formats::checkpoint::Checkpoint;
use taks_core::methods::Method;
use taks_core::precision::Precision;
use taks_core::selection::Engine;

#[test]
fn a_wgpu_run_resumes_with_its_device_state() {
    resumes_exactly(Precision::F32);
}

/// The same in f16: the loss scale is part of the state (`checkpoint.json`'s
/// `loss_scale`), so the resumed run scales, skips and grows as the straight one does.
/// The run starts from a scale of 2^24, far above what f16 holds of these gradients on
/// any adapter: the first steps are skipped on the device, each halving the scale, until
/// one fits (here at 2^19, after five), and the epoch's later steps are taken. The skips
/// are counted on the device and taken back from Adam's step numbers in the checkpoint,
/// so the resumed run's steps compute the straight run's bias corrections (saving the
/// step numbers with the skips in them fails the last comparison).
#[test]
fn an_f16_run_resumes_with_its_loss_scale() {
    resumes_exactly(Precision::F16);
}

fn resumes_exactly(precision: Precision) {
    let device = taks_core::gpu::direct::start().expect("a wgpu adapter").0;
    // An adapter without the type refuses the run in one line (lavapipe has shader-f16);
    // `precision.rs`'s own test holds that refusal to the adapter's features.
    if let Err(refused) = precision.check(&device) {
        skip::skip(
            &format!("resumes_exactly({precision:?})"),
            &refused.to_string(),
        );
        return;
    }
    let trainer = || {
        let mut config = digits::config(Method::TAKS, 2, 1000, 200);
        // Batches of 64: a dozen steps an epoch, room for skips and for taken steps.
        config.k_ratio = 0.8;
        config.batch_size = 64;
        config.precision = precision;
        digits::trainer(config, &device)
    };
    let path = Path::new("checkpoint.safetensors");
    let mut straight = trainer();
    assert_eq!(straight.selector().unwrap().engine(), Engine::Wgsl);
    if precision == Precision::F16 {
        let mut start = pollster::block_on(straight.checkpoint(&[])).unwrap();
        start.state["loss_scale"]["scale"] = serde_json::json!(2f32.powi(24));
        straight.restore(start, path).unwrap();
    }
    let history = vec![pollster::block_on(straight.run_epoch()).unwrap()];
    let saved = pollster::block_on(straight.checkpoint(&history)).unwrap();
    let bytes = saved.encode();
    let scale = saved.state.get("loss_scale").cloned();
    assert_eq!(scale.is_some(), precision == Precision::F16, "{scale:?}");
    if let Some(state) = &scale {
        // Without growth (every 2,000 good steps) the scale is 2^24 halved once a skip.
        let skipped = 24.0 - state["scale"].as_f64().unwrap().log2();
        let taken = state["good_steps"].as_u64().unwrap();
        assert!(skipped >= 1.0, "no step was skipped: {state}");
        assert!(taken >= 1, "every step was skipped: {state}");
    }

    let mut resumed = trainer();
    resumed
        .restore(Checkpoint::decode(&bytes, path).unwrap(), path)
        .unwrap();
    let again = pollster::block_on(resumed.checkpoint(&history)).unwrap();
    for name in ["selector.cumulative_risk", "selector.current_set"] {
        assert_eq!(again.tensors[name], saved.tensors[name], "{name}");
    }
    assert_eq!(again.state.get("loss_scale"), saved.state.get("loss_scale"));
    assert_eq!(again.tensors.len(), saved.tensors.len());
    for (name, tensor) in &saved.tensors {
        assert_eq!(
            &again.tensors[name], tensor,
            "{name} is not restored exactly"
        );
    }

    let mut expected = pollster::block_on(straight.run_epoch()).unwrap();
    let mut got = pollster::block_on(resumed.run_epoch()).unwrap();
    (expected.epoch_seconds, got.epoch_seconds) = (0.0, 0.0);
    assert_eq!(format!("{got:?}"), format!("{expected:?}"));
}

//! Every registered method trains, checkpoints and resumes through the one training loop
//! on flex, with nothing but its registry row: what a method added from the literature
//! (one file plus one row, see `core/src/methods/registry.rs`) gets checked by without
//! a test of its own. Small: 600 digits, 2 epochs (F-correction's first stage included).

use burn::tensor::Device;
use taks_core::data::DatasetKind;
use taks_core::methods::Method;
use taks_core::noise::NoiseKind;
use taks_core::settings::Choices;
use taks_core::train::Trainer;

const N: usize = 600;

fn trainer(method: Method) -> Trainer {
    let config = Choices {
        epochs: Some(2),
        train_limit: Some(N),
        test_limit: Some(200),
        ..Choices::new(DatasetKind::MnistDigits, NoiseKind::Symmetric, 0.5, method)
    }
    .build()
    .unwrap();
    let split = DatasetKind::MnistDigits.load(None).unwrap();
    Trainer::new(config, split, &Device::flex()).unwrap()
}

#[test]
fn every_registered_method_trains_an_epoch_and_resumes() {
    assert_eq!(
        Method::all().len(),
        10,
        "the paper's ten methods are registered"
    );
    for &method in Method::all() {
        let spec = method.spec();
        let mut t = trainer(method);
        assert_eq!(t.selector().is_some(), spec.selects, "{method}");
        assert_eq!(t.networks().len(), spec.networks, "{method}");
        let first = pollster::block_on(t.run_epoch()).unwrap();
        eprintln!("{method}: {first:?}");
        assert_eq!(first.epoch, 1);
        assert!(
            first.train_loss.is_finite() && first.train_loss > 0.0,
            "{method}"
        );
        // Trained past chance (10 classes) after one epoch on 600 noisy digits. Measured
        // (seeded, the same every run): 0.215 (Co-teaching+) to 0.41 (Decouple); a network
        // that learned nothing gets 0.10, with a spread of 0.02 on these 200 test digits.
        assert!(
            first.test_accuracy > 0.2,
            "{method}: accuracy {}",
            first.test_accuracy
        );
        assert_eq!(first.network_accuracies.len(), spec.networks, "{method}");
        assert_eq!(
            first.selected,
            t.k(),
            "{method}: an epoch trains on k samples"
        );
        assert_eq!(first.regret.is_some(), spec.selects, "{method}");
        if spec.selects {
            assert!(t.k() < N, "{method} leaves samples out");
        }

        // The rule's own state goes through the checkpoint: a resumed run's second epoch
        // is the uninterrupted run's.
        let saved = pollster::block_on(t.checkpoint(std::slice::from_ref(&first))).unwrap();
        let straight = pollster::block_on(t.run_epoch()).unwrap();
        // Epoch 2 trains on the k-set the noise-risk chose after epoch 1, where epoch 1's
        // was drawn at random: cleaner than the data (50.2% clean labels; a random k-set
        // of 210 spreads by 0.035). Measured (seeded): TAkS 0.467 -> 0.567, Greedy and
        // Naive 0.467 -> 0.648. A selector frozen after its first epoch keeps 0.467.
        if spec.selects {
            assert!(
                straight.label_precision > 0.53,
                "{method}: epoch 2's k-set is {} clean, epoch 1's {}",
                straight.label_precision,
                first.label_precision
            );
        }
        let floor = second_epoch_floor(method.name());
        assert!(
            straight.test_accuracy > floor,
            "{method}: accuracy {} after two epochs, under {floor}",
            straight.test_accuracy
        );
        let mut resumed = trainer(method);
        let path = std::path::Path::new("registry-test.safetensors");
        resumed.restore(saved, path).unwrap();
        let again = pollster::block_on(resumed.run_epoch()).unwrap();
        assert_eq!(
            (again.train_loss, again.test_accuracy, again.label_precision),
            (
                straight.train_loss,
                straight.test_accuracy,
                straight.label_precision
            ),
            "{method}: resumed epoch 2 differs"
        );
    }
}

/// Each method's test accuracy after its second epoch must pass this: 0.08 under what it
/// measured (seeded, the same every run on flex; in the comment), which is about three
/// spreads of a binomial on these 200 test digits, and never under epoch 1's floor of
/// 0.2. Chance is 0.10 (a spread of 0.02). The methods that train on k samples of 600
/// (TAkS and its two ablations) learn the slowest; that they select, not only learn, is
/// checked by their second k-set's label precision.
fn second_epoch_floor(method: &str) -> f64 {
    match method {
        "standard" => 0.54,         // 0.620
        "f-correction" => 0.33,     // 0.415
        "decouple" => 0.58,         // 0.663
        "co-teaching" => 0.51,      // 0.593
        "co-teaching-plus" => 0.31, // 0.398
        "jocor" => 0.30,            // 0.383
        "itlm" => 0.31,             // 0.390
        "taks" => 0.2,              // 0.265
        "greedy" | "naive" => 0.2,  // 0.250
        other => panic!("no measured accuracy for {other}: measure it and add it here"),
    }
}

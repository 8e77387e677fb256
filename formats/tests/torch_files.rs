//! Real files `torch.save` wrote (PyTorch 2.15; how: the comment on each), read by
//! `state_dict::read` without PyTorch.

mod support;

use std::path::PathBuf;

use support::crate_dir;

use taks_formats::state_dict::{self, Weight};

fn fixture(name: &str) -> PathBuf {
    crate_dir().join("tests/fixtures").join(name)
}

/// `a = torch.arange(6.).reshape(2, 3)`; `torch.save({"a": a, "t": a.t(), "h": fp16
/// [1.5, -2], "bf": bf16 [0.5], "n": torch.tensor(7), "p": nn.Parameter(torch.ones(2))})`:
/// a view saved with its strides (`t` shares `a`'s storage), three float types, an
/// integer counter and a parameter.
fn check(dict: &state_dict::StateDict) {
    let float = |name: &str| match &dict.tensors[name] {
        Weight::Float { shape, values } => (shape.clone(), values.clone()),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(float("a"), (vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]));
    assert_eq!(float("t"), (vec![3, 2], vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]));
    assert_eq!(float("h"), (vec![2], vec![1.5, -2.0]));
    assert_eq!(float("bf"), (vec![1], vec![0.5]));
    assert_eq!(float("p"), (vec![2], vec![1.0, 1.0]));
    assert_eq!(dict.tensors["n"], Weight::Other { shape: vec![] });
    assert_eq!(dict.tensors.len(), 6);
}

#[test]
fn a_state_dict_pth() {
    check(&state_dict::read(&fixture("state-dict.pth")).unwrap());
}

/// The same under `{"epoch": 3, "state_dict": {"module." + name: ...}}`, a training
/// checkpoint of a DataParallel model.
#[test]
fn a_training_checkpoint_of_a_data_parallel_model() {
    check(&state_dict::read(&fixture("checkpoint.pth")).unwrap());
}

/// Small archives whose central directory zip's offset detection misread (torch 2.15's
/// zip64 records), and a pickled function refused by name.
#[test]
fn small_archives_open_and_a_pickled_function_is_refused() {
    let corpus = crate_dir().join("../tests/corpus/files");
    let err = state_dict::read(&corpus.join("init-pickled-function.pth"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("refuses the global posix.system"), "{err}");
    let err = state_dict::read(&corpus.join("init-pickled-class.pth"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refuses the global argparse.Namespace"),
        "{err}"
    );
}

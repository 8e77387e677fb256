//! The run checkpoint container (`taks_formats::checkpoint`, SafeTensors with
//! metadata). Checks, for any bytes, that `Checkpoint::decode` never panics and gives
//! one-line errors naming the file; and that whatever it accepts
//! - has a JSON object as its state and tensors whose value count matches their shape,
//! - round-trips: `encode` then `decode` gives the same state and the same tensors,
//!   bit for bit (f32 compared by bits, so NaN payloads and -0.0 count),
//! - hands every tensor out through `take_f32`/`take_u32` with its own shape, and
//!   refuses it with the other type, a different shape or once it has been taken.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use taks_formats::FormatError;
use taks_formats::checkpoint::{Checkpoint, Values};

const PATH: &str = "fuzz/checkpoint.safetensors";

fn check_error(e: &FormatError) {
    let msg = e.to_string();
    assert!(
        !msg.contains('\n') && msg.contains(PATH),
        "bad error: {msg:?}"
    );
}

/// Values as bits, so that equality is exact for every f32.
fn bits(values: &Values) -> (bool, Vec<u32>) {
    match values {
        Values::F32(v) => (true, v.iter().map(|x| x.to_bits()).collect()),
        Values::U32(v) => (false, v.clone()),
    }
}

fn same(a: &Checkpoint, b: &Checkpoint) -> bool {
    // The state as text: unlike `Value`'s `==`, it tells -0.0 from 0.0.
    let (state_a, state_b) = (a.state.to_string(), b.state.to_string());
    state_a == state_b
        && a.tensors.len() == b.tensors.len()
        && a.tensors
            .iter()
            .zip(&b.tensors)
            .all(|((na, ta), (nb, tb))| {
                na == nb && ta.shape == tb.shape && bits(&ta.values) == bits(&tb.values)
            })
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new(PATH);
    let checkpoint = match Checkpoint::decode(data, path) {
        Ok(c) => c,
        Err(e) => return check_error(&e),
    };
    assert!(checkpoint.state.is_object());
    for t in checkpoint.tensors.values() {
        let count: usize = t.shape.iter().product();
        assert_eq!(bits(&t.values).1.len(), count);
    }

    let again = Checkpoint::decode(&checkpoint.encode(), path)
        .unwrap_or_else(|e| panic!("an accepted checkpoint, re-encoded, is refused: {e}"));
    assert!(
        same(&checkpoint, &again),
        "round trip changed the checkpoint"
    );

    let mut taken = checkpoint.clone();
    for (name, tensor) in &checkpoint.tensors {
        let shape = &tensor.shape;
        let (is_f32, want) = bits(&tensor.values);
        // The wrong type, and a shape one element longer, are refused (on a copy:
        // a refused take still removes the tensor).
        let mut other = checkpoint.clone();
        let wrong = if is_f32 {
            other.take_u32(name, shape, path).map(drop)
        } else {
            other.take_f32(name, shape, path).map(drop)
        };
        check_error(&wrong.expect_err("a tensor taken with the wrong type"));
        let mut longer = shape.clone();
        longer.push(1);
        let mut other = checkpoint.clone();
        check_error(
            &other
                .take_f32(name, &longer, path)
                .expect_err("a wrong shape"),
        );

        let got = if is_f32 {
            let v = taken
                .take_f32(name, shape, path)
                .expect("its own tensor, type and shape");
            Values::F32(v)
        } else {
            Values::U32(
                taken
                    .take_u32(name, shape, path)
                    .expect("its own tensor, type and shape"),
            )
        };
        assert_eq!(bits(&got).1, want);
        check_error(
            &taken
                .take_f32(name, shape, path)
                .expect_err("a tensor taken twice"),
        );
    }
    assert!(taken.tensors.is_empty());
});

//! A plain SafeTensors file of named f32 tensors with string metadata: the weights file
//! an audit keeps (`model.safetensors`), which PyTorch's `safetensors.torch.load_file`
//! and burn-store both open. Checkpoints use [`crate::checkpoint`] instead, which adds
//! their own state and checks.

use safetensors::{Dtype, tensor::TensorView};

/// One tensor: its name, shape and values (row-major).
pub struct Named {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// The SafeTensors bytes of `tensors` (f32, little-endian) with `metadata`.
pub fn encode(tensors: &[Named], metadata: &[(&str, &str)]) -> Vec<u8> {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|t| t.values.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let views = tensors.iter().zip(&bytes).map(|(t, data)| {
        assert_eq!(
            t.shape.iter().product::<usize>(),
            t.values.len(),
            "{}: shape and values disagree",
            t.name
        );
        let view = TensorView::new(Dtype::F32, t.shape.clone(), data)
            .expect("shape and byte count agree, checked above");
        (t.name.as_str(), view)
    });
    let info = metadata.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    safetensors::serialize(views, Some(info.collect()))
        .expect("a model's header is far below SafeTensors' size limit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_and_metadata_read_back() {
        let bytes = encode(
            &[
                Named {
                    name: "0.weight".into(),
                    shape: vec![2, 3],
                    values: vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5],
                },
                Named {
                    name: "0.bias".into(),
                    shape: vec![2],
                    values: vec![0.25, 0.5],
                },
            ],
            &[("taks", "taks-model")],
        );
        let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        assert_eq!(meta.metadata().as_ref().unwrap()["taks"], "taks-model");
        let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let w = file.tensor("0.weight").unwrap();
        assert_eq!(w.shape(), [2, 3]);
        assert_eq!(&w.data()[20..24], (-6.5f32).to_le_bytes());
        assert_eq!(
            file.tensor("0.bias").unwrap().data(),
            [0.25f32.to_le_bytes(), 0.5f32.to_le_bytes()].concat()
        );
    }
}

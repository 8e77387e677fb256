//! Named tensors (f32 or u32, little-endian) and their SafeTensors bytes with string
//! metadata: the one encoder behind both files taks writes in that format, a run
//! checkpoint ([`crate::checkpoint`], which adds its state and checks) and the model an
//! audit keeps (`model.safetensors`, which PyTorch's `safetensors.torch.load_file` and
//! burn-store both open).

use std::collections::BTreeMap;

use safetensors::{Dtype, tensor::TensorView};

/// A tensor's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    U32(Vec<u32>),
}

/// One named tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub values: Values,
}

impl Tensor {
    pub fn f32(shape: Vec<usize>, values: Vec<f32>) -> Self {
        Tensor {
            shape,
            values: Values::F32(values),
        }
    }

    pub fn u32(shape: Vec<usize>, values: Vec<u32>) -> Self {
        Tensor {
            shape,
            values: Values::U32(values),
        }
    }
}

/// The SafeTensors bytes of `tensors` with `metadata`.
pub fn encode(tensors: &BTreeMap<String, Tensor>, metadata: &[(&str, &str)]) -> Vec<u8> {
    let bytes: Vec<(&String, Dtype, &Vec<usize>, Vec<u8>)> = tensors
        .iter()
        .map(|(name, t)| match &t.values {
            Values::F32(v) => (
                name,
                Dtype::F32,
                &t.shape,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
            Values::U32(v) => (
                name,
                Dtype::U32,
                &t.shape,
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            ),
        })
        .collect();
    let views = bytes.iter().map(|(name, dtype, shape, data)| {
        let view = TensorView::new(*dtype, shape.to_vec(), data)
            .expect("shape and byte count agree by construction");
        (name.as_str(), view)
    });
    let info = metadata.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    safetensors::serialize(views, Some(info.collect()))
        .expect("a header of names and shapes is far below SafeTensors' size limit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_and_metadata_read_back() {
        let tensors = BTreeMap::from([
            (
                "0.weight".to_string(),
                Tensor::f32(vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, -6.5]),
            ),
            ("0.bias".to_string(), Tensor::f32(vec![2], vec![0.25, 0.5])),
        ]);
        let bytes = encode(&tensors, &[("taks", "taks-model")]);
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

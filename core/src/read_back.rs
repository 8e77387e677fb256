//! Reading a tensor back to the host, for every part of the core that needs its values
//! there: the selection's risks and k-sets, the training loop's metrics, checkpoints,
//! the first stage's probabilities, the audit's model card.
//!
//! Why async: WebGPU cannot block on a device read, so every read the page may make
//! awaits; natively the caller blocks on the future (`pollster`).

use burn::tensor::{Int, Tensor};

use crate::{Error, Result};

/// Read a float tensor to the host (never blocking, so it works on WebGPU too).
pub(crate) async fn read_floats<const D: usize>(t: Tensor<D>, what: &str) -> Result<Vec<f32>> {
    t.into_data_async()
        .await
        .map_err(|e| Error::Device(format!("reading {what}: {e:?}")))?
        .try_into_vec()
        .map_err(|e| Error::Device(format!("{what} are not f32: {e:?}")))
}

/// Read an index tensor to the host (never blocking).
pub(crate) async fn read_indices(t: Tensor<1, Int>, what: &str) -> Result<Vec<u32>> {
    Ok(t.into_data_async()
        .await
        .map_err(|e| Error::Device(format!("reading {what}: {e:?}")))?
        .iter::<i64>()
        .map(|i| i as u32)
        .collect())
}

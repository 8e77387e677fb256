//! A module's float tensors (weights, biases and buffers such as batch-norm running
//! statistics), in the fixed order burn's visitors walk them, with their paths as
//! names: read out for a checkpoint, and put back in the same order on resume.
//!
//! The order is decided by the module's structure alone, so the same architecture
//! built again walks its tensors in the same order; names and shapes are checked
//! against the saved ones all the same, so a checkpoint of another network is an
//! error, never a silent mix.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::Tensor;

/// One float tensor of a module.
pub struct NamedTensor {
    /// Its path in the module, e.g. `nets.0.Mlp.hidden.weight`.
    pub name: String,
    pub dims: Vec<usize>,
    /// The values, flattened (inference copy, outside any autodiff graph).
    pub values: Tensor<1>,
}

/// Every float tensor of `module`, in visiting order.
pub fn float_tensors<M: Module>(module: &M) -> Vec<NamedTensor> {
    let mut collect = Collect::default();
    module.visit(&mut collect);
    collect.found
}

/// Replace the float tensors of `module`, in visiting order, by `values` (flattened;
/// each must have its tensor's element count, which [`float_tensors`] tells). Keeps
/// each parameter's id and whether it requires a gradient.
pub fn replace_float_tensors<M: Module>(module: M, values: Vec<Tensor<1>>) -> M {
    let mut replace = Replace {
        values: values.into_iter(),
    };
    module.map(&mut replace)
}

#[derive(Default)]
struct Collect {
    path: Vec<String>,
    found: Vec<NamedTensor>,
}

impl ModuleVisitor for Collect {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let tensor = param.val().inner();
        let dims = tensor.dims().to_vec();
        let numel: usize = dims.iter().product();
        self.found.push(NamedTensor {
            name: self.path.join("."),
            dims,
            values: tensor.reshape([numel]),
        });
    }
}

struct Replace {
    values: std::vec::IntoIter<Tensor<1>>,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let value = self
            .values
            .next()
            .expect("one value per float tensor, checked by the caller");
        let require_grad = tensor.is_require_grad();
        let value = value.reshape(tensor.shape()).to_device(&tensor.device());
        // On an autodiff device the value becomes a parameter of the graph; elsewhere
        // (an eval-mode network) it stays plain, or the network would run as if training.
        let mut value = match tensor.is_autodiff() {
            true => Tensor::from_inner(value),
            false => value,
        };
        if require_grad {
            value = value.require_grad();
        }
        Param::from_mapped_value(id, value, mapper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Architecture, Networks};
    use burn::tensor::Device;

    #[test]
    fn names_shapes_and_a_round_trip() {
        let device = Device::flex();
        let nets = Networks::new(2, Architecture::Mlp, [1, 4, 4], 3, &device);
        let found = float_tensors(&nets);
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(found.len(), 8, "{names:?}");
        assert!(
            names[0].starts_with("nets.0.") && names[0].ends_with("hidden.weight"),
            "{names:?}"
        );
        assert_eq!(found[0].dims, vec![16, 256]);
        assert!(
            names[7].starts_with("nets.1.") && names[7].ends_with("output.bias"),
            "{names:?}"
        );
        // Replace every tensor by its negation and read them back.
        let negated: Vec<Tensor<1>> = found.iter().map(|t| t.values.clone().neg()).collect();
        let nets = replace_float_tensors(nets, negated);
        for (before, after) in found.iter().zip(float_tensors(&nets)) {
            let a: Vec<f32> = before.values.clone().into_data().try_to_vec().unwrap();
            let b: Vec<f32> = after.values.into_data().try_to_vec().unwrap();
            assert_eq!(a.iter().map(|x| -x).collect::<Vec<_>>(), b);
            assert_eq!(before.name, after.name);
        }
    }
}

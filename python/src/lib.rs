//! The `taks._taks` extension module: the core's audit and TAkS's selection, called from
//! Python. Like the command line and the page, it only converts (numpy arrays in,
//! Python values out) and calls `taks-core`; the Python package around it
//! (`python/taks/`) adds the types people use. Errors become the exceptions a Python
//! caller expects (`errors`), never a panic.

mod audit;
mod errors;
mod labels;
mod selection;

use pyo3::prelude::*;

#[pymodule]
fn _taks(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<selection::Selection>()?;
    m.add_function(wrap_pyfunction!(selection::k_of, m)?)?;
    m.add_function(wrap_pyfunction!(selection::eta_of, m)?)?;
    m.add_function(wrap_pyfunction!(audit::audit_features, m)?)?;
    m.add_function(wrap_pyfunction!(audit::audit_path, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

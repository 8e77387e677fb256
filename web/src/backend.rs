//! Which device trains: WebGPU through burn's wgpu runtime, or burn's flex CPU backend.
//!
//! burn's wgpu runtime can be initialised only once per wasm instance (a second
//! `init_async` fails with "A server is still registered"), so the chosen device is
//! kept here and every run of this instance shares it. The worker decides between
//! the two: it checks `navigator.gpu` and `requestAdapter()` itself, because only
//! JavaScript can tell a visitor *why* WebGPU is missing.

use std::cell::RefCell;

use burn::tensor::Device;
use wasm_bindgen::prelude::*;

thread_local! {
    static DEVICE: RefCell<Option<Device>> = const { RefCell::new(None) };
}

/// The device chosen by [`init_webgpu`] or [`init_cpu`].
pub(crate) fn device() -> Result<Device, JsError> {
    DEVICE
        .with(|d| d.borrow().clone())
        .ok_or_else(|| JsError::new("no backend yet: call init_webgpu() or init_cpu() first"))
}

fn set_device(device: Device) -> Result<(), JsError> {
    DEVICE.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_some() {
            return Err(JsError::new(
                "the backend is already chosen for this worker; start a new worker to change it",
            ));
        }
        *d = Some(device);
        Ok(())
    })
}

/// Initialise burn's wgpu runtime on the browser's WebGPU and return the adapter's
/// description (often empty: browsers hide it unless asked).
#[wasm_bindgen]
pub async fn init_webgpu() -> Result<String, JsError> {
    crate::panic::install_hook();
    let (device, setup) = Device::wgpu_options()
        .init_with_setup_async()
        .await
        .map_err(|e| JsError::new(&format!("WebGPU initialisation failed: {e}")))?;
    let info = setup.adapter.get_info();
    set_device(device)?;
    Ok(info.name)
}

/// Use burn's flex backend: pure Rust on the worker's one CPU thread.
#[wasm_bindgen]
pub fn init_cpu() -> Result<(), JsError> {
    crate::panic::install_hook();
    set_device(Device::flex())
}

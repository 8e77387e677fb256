//! Panics as readable messages.
//!
//! A panic in wasm32 aborts with a bare "unreachable" trap. The hook keeps the panic's
//! message so the worker can report it to the page instead of that trap.

use std::cell::RefCell;
use std::sync::Once;

use wasm_bindgen::prelude::*;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

/// Install the hook (once; every entry point calls this).
pub(crate) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = format!("internal error (panic): {info}");
            console_error(&message);
            // Keep the first: later panics are usually consequences of it.
            LAST_PANIC.with(|p| {
                p.borrow_mut().get_or_insert(message);
            });
        }));
    });
}

/// The message of the first panic in this instance, if one happened (after a panic
/// the instance is unusable, so the first is the one worth showing).
#[wasm_bindgen]
pub fn last_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow().clone())
}

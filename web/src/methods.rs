//! The method registry as the page sees it: the page builds its method picker and its
//! results table from this list instead of keeping one of its own.

use serde::Serialize;
use taks_core::methods::Method;
use wasm_bindgen::prelude::*;

#[derive(Serialize)]
struct MethodRow {
    name: &'static str,
    title: &'static str,
    help: &'static str,
    networks: usize,
    /// Whether it chooses a k-set with the FPL selector (and so has a cumulative
    /// noise-risk, a regret and its bound).
    selects: bool,
    /// The flags of the settings it reads besides the common ones (`--forget-rate`, ...).
    settings: Vec<&'static str>,
}

/// Every registered method, in the registry's order, as a JSON array of
/// `{name, title, help, networks, selects, settings}`.
#[wasm_bindgen]
pub fn methods_json() -> String {
    let rows: Vec<MethodRow> = Method::all()
        .iter()
        .map(|m| MethodRow {
            name: m.name(),
            title: m.title(),
            help: m.help(),
            networks: m.networks(),
            selects: m.uses_selector(),
            settings: m.spec().settings.iter().map(|s| s.flag()).collect(),
        })
        .collect();
    serde_json::to_string(&rows).unwrap_or_default()
}

//! taks-web: the browser demo's wasm-bindgen facade over `taks-core`.
//!
//! It only translates: it picks a device ([`backend`]), builds a core `Trainer` from
//! the page's settings and hands its measurements and selections to JavaScript as JSON
//! and typed arrays ([`run`]). The training loop, the selection rules and the metrics
//! all live in `taks-core`, so the page shows exactly what the `taks` CLI computes. The
//! module is meant to run inside a Web Worker (see `web/www/worker.js`), so that an
//! epoch of training never blocks the page.
//!
//! The crate is empty off wasm32, and its browser-only dependencies are wasm32-only in
//! `Cargo.toml`: `cargo test --workspace` on the host then resolves burn's dependency
//! tree with exactly the features `cargo build -p taks` does, so the README's two
//! commands build burn once between them instead of twice (wasm-bindgen's `std` feature
//! used to switch on `futures-util/std` under burn and rebuild all of it).
#![cfg(target_arch = "wasm32")]

pub mod audit;
pub mod backend;
pub mod methods;
mod panic;
pub mod run;

// Choosing the device, shared by the demo's worker and the audit's: WebGPU if asked for
// and usable, otherwise burn's flex backend on the CPU, with the reason. Only
// JavaScript can tell a visitor why WebGPU is missing, so the check is here.

/** A worker error as one line: a Rust panic traps as "unreachable", and the panic hook
 * kept its real message. */
export function messageOf(taks, err) {
  if (err instanceof WebAssembly.RuntimeError) {
    try { return taks.last_panic() || `WebAssembly trap: ${err.message}`; } catch { return err.message; }
  }
  return (err && err.message) ? err.message : String(err);
}

/** Initialise `taks` (the wasm module) on `want` = auto | webgpu | cpu; resolves to
 * { kind, adapter } or { kind: 'cpu', reason }. */
export async function chooseBackend(taks, want) {
  if (want === 'cpu') {
    taks.init_cpu();
    return { kind: 'cpu', reason: 'CPU chosen in the settings' };
  }
  let reason;
  if (!('gpu' in navigator) || !navigator.gpu) {
    reason = 'this browser exposes no WebGPU (navigator.gpu is missing)';
  } else {
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) {
      reason = 'WebGPU is present but offers no adapter (requestAdapter returned null)';
    } else {
      try {
        const name = await taks.init_webgpu();
        const info = adapter.info || {};
        const described = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ');
        return { kind: 'webgpu', adapter: name || described || 'unnamed adapter' };
      } catch (err) {
        reason = `WebGPU failed to start: ${messageOf(taks, err)}`;
      }
    }
  }
  if (want === 'webgpu') throw new Error(`WebGPU was requested but ${reason}`);
  taks.init_cpu();
  return { kind: 'cpu', reason };
}

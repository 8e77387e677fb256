// The audit's worker: owns the wasm module, reads the chosen files into it and runs
// the core's audit (taks_web AuditJob), so that the page stays responsive. Nothing is
// fetched or sent: the files come from the page as File objects, the results go back
// to the page as messages. Cancel = the page terminates this worker.
import init, * as taks from '../pkg/taks_web.js';
import { chooseBackend, messageOf } from './backend.js';

const post = (message, transfer = []) => self.postMessage(message, transfer);
let job = null;
let device = null;      // the backend chosen by the first audit: burn's runtime keeps it
let wasm = null;        // the module's exports (its linear memory, for the page's figures)

const ready = init().then((exports) => { wasm = exports; post({ type: 'ready' }); });

async function audit({ backend, options, files, table }) {
  // The page starts a fresh worker to change the backend; a later audit here reuses it.
  device ||= await chooseBackend(taks, backend);
  post({ type: 'backend', ...device });
  job = new taks.AuditJob();
  if (table) {
    job.set_table(table.name, new Uint8Array(await table.arrayBuffer()));
  } else {
    // Many reads in flight at once: each is a round trip to the browser's file store
    // (one at a time took 21 s for 10,000 files, FileReaderSync as long; 64 at once 15 s).
    const AT_ONCE = 64;
    for (let i = 0; i < files.length; i += AT_ONCE) {
      const part = files.slice(i, i + AT_ONCE);
      const contents = await Promise.all(part.map(({ file }) => file.arrayBuffer()));
      part.forEach(({ path }, j) => job.add_file(path, new Uint8Array(contents[j])));
      post({ type: 'progress', phase: 'reading', read: Math.min(i + AT_ONCE, files.length), files: files.length });
    }
  }
  const summary = JSON.parse(await job.run(JSON.stringify(options), (json) => post({ type: 'progress', ...JSON.parse(json) })));
  const pixels = job.pixels();
  // The wasm heap never shrinks: its size now is the audit's peak in the module.
  summary.wasm_memory_bytes = wasm.memory.buffer.byteLength;
  post({ type: 'done', summary, rows: JSON.parse(job.rows_json()), shape: Array.from(job.shape()), pixels }, [pixels.buffer]);
}

async function download({ what, decisions }) {
  if (what === 'suspects') return [{ name: 'suspects.csv', type: 'text/csv', data: job.suspects_csv(decisions) }];
  if (what === 'labels') return [{ name: 'labels.csv', type: 'text/csv', data: job.labels_csv(decisions) }];
  const weights = await job.model_weights();
  return [
    { name: 'model.safetensors', type: 'application/octet-stream', data: weights },
    { name: 'model.json', type: 'application/json', data: job.model_card() },
  ];
}

self.addEventListener('error', (event) => {
  event.preventDefault();
  post({ type: 'error', message: messageOf(taks, event.error || event.message) });
});
self.addEventListener('unhandledrejection', (event) => {
  event.preventDefault();
  post({ type: 'error', message: messageOf(taks, event.reason) });
});

self.onmessage = async ({ data }) => {
  try {
    await ready;
    if (data.type === 'start') await audit(data);
    else if (data.type === 'download') post({ type: 'files', files: await download(data) });
    else throw new Error(`unknown message ${data.type}`);
  } catch (err) {
    post({ type: 'error', message: messageOf(taks, err) });
  }
};

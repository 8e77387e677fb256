// The audit page (audit.html): the person's files in, the core's audit in a worker
// (audit-worker.js), the verdicts out as a table and downloads. No request leaves the
// page after its own files have loaded: files are read locally, results are offered as
// blob downloads.
// State a script can read: #audit-status[data-value] (idle | reading | running | done |
// cancelled | error: ...), #audit-backend[data-kind], #audit-skipped li (one per file
// left out: data-id, and the reason as text), #audit-table tbody tr (one per sample,
// most suspect first: data-id = its path in the folder (or row), data-issue,
// data-index, data-decision = accept | keep | ''), #audit-summary[data-*].
const $ = (id) => document.getElementById(id);

let worker = null;
let workerReady = null;     // resolves when the worker's wasm module is loaded
let workerBackend = null;   // the backend choice the worker's first audit used
let result = null;          // { summary, rows, shape, pixels }
let decisions = null;       // Uint8Array(n): 0 undecided, 1 accept, 2 keep (data order)
let epochTimes = [];        // seconds of each finished epoch, for the time left
let pendingFiles = null;    // resolves a download request

function setStatus(value, text = value) {
  $('audit-status').dataset.value = value;
  $('audit-status').textContent = text;
  const running = value === 'reading' || value === 'running';
  $('audit-start').disabled = running;
  $('audit-cancel').disabled = !running;
}

function showError(message) {
  $('error').hidden = false;
  $('error').textContent = message;
  setStatus(`error: ${message}`, 'error');
}

function newWorker() {
  if (worker) worker.terminate();
  workerBackend = null;
  worker = new Worker(new URL('./audit-worker.js', import.meta.url), { type: 'module' });
  workerReady = new Promise((resolve) => { worker.onready = resolve; });
  worker.onmessage = ({ data }) => onMessage(data);
  worker.onerror = (event) => showError(event.message || 'the audit worker failed to start');
}

function onMessage(msg) {
  switch (msg.type) {
    case 'ready':
      document.body.dataset.ready = '1';
      if (worker.onready) worker.onready();
      break;
    case 'backend':
      $('audit-backend').dataset.kind = msg.kind;
      $('audit-backend').textContent = msg.kind === 'webgpu'
        ? `WebGPU (${msg.adapter})` : `the CPU (${msg.reason})`;
      break;
    case 'progress':
      onProgress(msg);
      break;
    case 'done':
      showResults(msg);
      break;
    case 'files':
      if (pendingFiles) { pendingFiles(msg.files); pendingFiles = null; }
      break;
    case 'error':
      showError(msg.message);
      break;
  }
}

function onProgress(p) {
  if (p.phase === 'reading') {
    setStatus('reading');
    $('audit-phase').textContent = p.files ? `reading files (${p.read} of ${p.files})` : 'reading and checking the files';
    return;
  }
  setStatus('running');
  if (p.phase === 'network') {
    $('audit-phase').textContent = 'choosing the network for this device';
    if (p.note) $('audit-note').textContent = p.note;
    return;
  }
  epochTimes.push(p.seconds);
  const probe = p.phase === 'probe';
  $('audit-phase').textContent = probe
    ? `probe ${p.fold} of ${p.folds}: estimating the noise rate` : 'TAkS: selecting and scoring';
  $('audit-epoch').textContent = `${p.epoch} / ${p.epochs}`;
  // Epochs still to come, at the mean epoch time so far.
  const left = probe
    ? (p.folds - p.fold) * p.epochs + (p.epochs - p.epoch) + p.selection_epochs
    : p.epochs - p.epoch;
  const mean = epochTimes.reduce((a, b) => a + b, 0) / epochTimes.length;
  const seconds = Math.round(left * mean);
  $('audit-left').dataset.value = seconds;
  $('audit-left').textContent = seconds >= 90 ? `about ${Math.round(seconds / 60)} min` : `about ${seconds} s`;
}

/** The chosen files as (path inside the chosen folder, File). */
function chosenFiles() {
  return Array.from($('audit-input').files).map((file) => {
    const parts = (file.webkitRelativePath || file.name).split('/');
    return { path: parts.length > 1 ? parts.slice(1).join('/') : parts[0], file };
  });
}

async function start() {
  $('error').hidden = true;
  const table = $('audit-csv').files[0] || null;
  const files = table ? [] : chosenFiles();
  if (!table && files.length === 0) {
    showError('choose a folder of class folders, or a CSV table, first');
    return;
  }
  // A worker keeps the device of its first audit: another choice needs a new worker.
  const backend = $('audit-backend-choice').value;
  if (!worker || (workerBackend && workerBackend !== backend)) newWorker();
  workerBackend = backend;
  await workerReady;
  result = null;
  epochTimes = [];
  $('audit-results').hidden = true;
  $('audit-note').textContent = '';
  $('audit-epoch').textContent = '–';
  $('audit-left').textContent = '–';
  $('audit-left').dataset.value = ''; // no estimate before this audit's first epoch
  setStatus('reading');
  const options = {
    model: $('audit-model').value || null,
    budget: $('audit-budget').value === '' ? 300 : Number($('audit-budget').value),
    label_column: $('audit-label-column').value || 'label',
    // Empty: taks audit's defaults for this many samples.
    epochs: $('audit-epochs').value === '' ? null : Number($('audit-epochs').value),
    probe_epochs: $('audit-probe-epochs').value === '' ? null : Number($('audit-probe-epochs').value),
  };
  worker.postMessage({ type: 'start', backend, options, files, table });
}

function cancel() {
  // The worker is mid-epoch and cannot be interrupted politely: end it, start afresh.
  newWorker();
  setStatus('cancelled');
  $('audit-phase').textContent = 'cancelled';
}

function showResults({ summary, rows, shape, pixels }) {
  result = { summary, rows, shape, pixels };
  decisions = new Uint8Array(summary.n);
  const s = $('audit-summary');
  Object.assign(s.dataset, {
    n: summary.n, issues: summary.label_issues, noiseRate: summary.estimated_noise_rate, network: summary.network,
    seconds: summary.seconds, wasmMemoryMb: Math.round(summary.wasm_memory_bytes / 1e6),
  });
  s.textContent = `${summary.n} samples in ${summary.classes.length} classes, audited with the ${summary.network} `
    + `in ${summary.seconds.toFixed(1)} s. Estimated noise rate ${(summary.estimated_noise_rate * 100).toFixed(1)}%; `
    + `${summary.label_issues} label issues (k = ${summary.k}, ${(summary.k_ratio * 100).toFixed(0)}% of the data trained on per epoch).`
    + (summary.network_reason ? ` Network: ${summary.network_reason}.` : '')
    + (summary.colour_note ? ` ${summary.colour_note}.` : '');
  $('audit-skipped-count').textContent = summary.skipped.length;
  $('audit-skipped').replaceChildren(...summary.skipped.map((f) => {
    const li = document.createElement('li');
    li.dataset.id = f.id;
    li.textContent = `${f.id}: ${f.reason}`;
    return li;
  }));
  buildTable();
  $('audit-results').hidden = false;
  $('audit-phase').textContent = 'done';
  $('audit-left').textContent = '–';
  setStatus('done');
}

// Thumbnails are drawn when their row scrolls into view: a folder may hold 10,000.
const drawWhenSeen = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    drawThumbnail(entry.target, Number(entry.target.dataset.index));
    drawWhenSeen.unobserve(entry.target);
  }
});

function drawThumbnail(canvas, index) {
  const [c, h, w] = result.shape;
  const plane = h * w;
  const at = index * c * plane;
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(w, h);
  for (let p = 0; p < plane; p++) {
    const r = result.pixels[at + p];
    const g = c === 3 ? result.pixels[at + plane + p] : r;
    const b = c === 3 ? result.pixels[at + 2 * plane + p] : r;
    img.data.set([r, g, b, 255], p * 4);
  }
  ctx.putImageData(img, 0, 0);
}

function buildTable() {
  const images = result.pixels.length > 0;
  const rows = result.rows.map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.id = r.id;
    tr.dataset.index = r.index;
    tr.dataset.issue = String(r.issue);
    tr.dataset.decision = '';
    const cell = (text, cls) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
      return td;
    };
    cell(r.id, 'id');
    const thumb = cell('');
    if (images) {
      const canvas = document.createElement('canvas');
      canvas.className = 'thumb';
      canvas.dataset.index = r.index;
      thumb.append(canvas);
      drawWhenSeen.observe(canvas);
    }
    cell(r.given);
    cell(r.suggested, r.issue ? 'issue' : '');
    cell(r.confidence.toFixed(3));
    cell(r.quality.toFixed(3));
    const decide = cell('');
    for (const [code, label] of [[1, 'accept'], [2, 'keep']]) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = `decide-${label}`;
      button.textContent = code === 1 ? `relabel as ${r.suggested}` : 'keep';
      button.onclick = () => {
        decisions[r.index] = code;
        tr.dataset.decision = label;
      };
      decide.append(button);
    }
    return tr;
  });
  $('audit-table').tBodies[0].replaceChildren(...rows);
}

async function download(what) {
  if (!result) return;
  const files = await new Promise((resolve) => {
    pendingFiles = resolve;
    worker.postMessage({ type: 'download', what, decisions });
  });
  for (const f of files) {
    const url = URL.createObjectURL(new Blob([f.data], { type: f.type }));
    const a = document.createElement('a');
    a.href = url;
    a.download = f.name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }
}

function main() {
  $('audit-start').onclick = start;
  $('audit-cancel').onclick = cancel;
  $('audit-download').onclick = () => download('suspects');
  $('audit-download-labels').onclick = () => download('labels');
  $('audit-download-model').onclick = () => download('model');
  $('audit-issues-only').onchange = () => {
    $('audit-table').classList.toggle('issues-only', $('audit-issues-only').checked);
  };
  // A folder and a table are alternatives: choosing one clears the other.
  $('audit-input').onchange = () => { $('audit-csv').value = ''; };
  $('audit-csv').onchange = () => { $('audit-input').value = ''; };
  newWorker();
}

main();

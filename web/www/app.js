// The page: settings, buttons, and drawing what the training worker reports.
// URL parameters preset the form (for links and tests):
//   ?noise=symmetric&rate=0.5&method=<any registered method>|both|all&k=0.35
//    &eta=0.005&epochs=20&train=8000&seed=0&backend=auto|webgpu|cpu&autostart=1
// (both = TAkS and Standard side by side; all = TAkS, Standard, Co-teaching and JoCoR.)
// The method picker and the results table list every method of the wasm module's
// registry (taks_web.methods_json), which arrives with the backend.
// State a script can read, per registered method M (taks, standard, co-teaching, ...):
// #accuracy-M, #precision-M, #seconds-M (mean seconds per epoch so far, after the first
// once there are more), #samples-M
// (samples trained on per second); and #status[data-state], #epoch, #throughput,
// #elapsed (data-value: raw numbers), #engine[data-value], #backend[data-kind], #error,
// #histogram-note (shown when the first method has no cumulative noise-risk),
// #grid .cell[data-selected][data-clean].
import { lineChart, histogram } from './charts.js';

const $ = (id) => document.getElementById(id);
const GRID = 96;
// The page's own colours for the methods it runs side by side; others take the palette.
const COLORS = { taks: '#1f78b4', standard: '#e66101', 'co-teaching': '#6a3d9a', jocor: '#d01c8b' };
const PALETTE = ['#33a02c', '#b15928', '#ff7f00', '#6a51a3', '#01665e', '#8c510a'];
let REGISTRY = [];          // [{ name, title, help, networks, selects, settings }] from the wasm module
const NAMES = {};           // name -> title, from the registry
let METHODS = [];           // registered names, in the registry's order
// The method picker's choices (each registered method alone is added from the registry);
// the first method of a run feeds the grid and histogram.
const CHOICES = {
  both: ['taks', 'standard'], all: ['taks', 'standard', 'co-teaching', 'jocor'],
};
let wantedMethod = null;    // a ?method= choice waiting for the registry
// Why a method without TAkS's selector has no cumulative noise-risk to draw.
const NO_RISK = {
  standard: 'Standard trains on every digit every epoch; it keeps no cumulative noise-risk.',
  'co-teaching': "Co-teaching chooses inside each batch (each network's small-loss digits train the other network); it has no cumulative noise-risk.",
  jocor: 'JoCoR chooses inside each batch (the small-loss digits of one joint loss of both networks); it has no cumulative noise-risk.',
};

let worker = null;
let backendChosen = null;   // the backend choice the current worker was started with
let used = false;           // whether the current worker has already trained
let history = {};           // method -> [EpochMetrics]
let runMethods = [];        // the methods of the current run, in the worker's order
let grid = null;            // { images, trueLabels, noisyLabels }
let clean = null;           // Uint8Array(n)
let totalEpochs = 0;
let startedAt = 0;

function setValue(id, value, text) {
  $(id).dataset.value = value;
  $(id).textContent = text;
}
const pct = (v) => `${(100 * v).toFixed(1)}%`;

function setStatus(state) {
  $('status').dataset.state = state;
  $('status').textContent = state;
  const running = state === 'running';
  $('pause').disabled = !running;
  $('resume').disabled = state !== 'paused';
  $('start').disabled = running || state === 'paused' || state === 'starting';
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
  setStatus('error');
}

function clearError() {
  $('error').textContent = '';
  $('error').hidden = true;
}

// One worker per backend choice and per run: burn's wgpu runtime starts once per wasm
// instance, so changing the backend or starting over means a fresh worker.
function newWorker() {
  if (worker) worker.terminate();
  backendChosen = $('backend-choice').value;
  used = false;
  $('backend').textContent = 'starting…';
  $('backend').dataset.kind = '';
  setStatus('starting'); // Start waits for the backend
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = ({ data }) => handle(data);
  worker.onerror = (event) => {
    event.preventDefault();
    const loading = $('backend').dataset.kind === '';
    showError(`The training worker ${loading ? 'failed to load' : 'stopped'}: ${event.message || 'unknown error'}`
      + (loading ? ' (was the wasm package built with scripts/build-web.sh?)' : ''));
  };
  worker.postMessage({ type: 'init', backend: backendChosen });
  return new Promise((resolve) => { worker.onbackend = resolve; });
}

function handle(msg) {
  switch (msg.type) {
    case 'backend': {
      const text = msg.kind === 'webgpu'
        ? `WebGPU (${msg.adapter})`
        : `the CPU fallback (burn flex, one thread): ${msg.reason}`;
      $('backend').textContent = text;
      $('backend').dataset.kind = msg.kind;
      applyRegistry(msg.methods);
      if ($('status').dataset.state === 'starting') setStatus('idle');
      if (worker.onbackend) worker.onbackend(msg);
      worker.onbackend = null;
      break;
    }
    case 'defaults':
      $('k-ratio').value = msg.kRatio;
      $('eta-ratio').value = msg.etaRatio;
      break;
    case 'started':
      grid = msg.grid;
      runMethods = msg.runs.map((r) => r.method);
      clean = msg.clean;
      $('k-eta').textContent = msg.runs.map(describeRun).join('; ');
      {
        // Which code scores and selects for the run with TAkS's selector, if any: the
        // WGSL kernels or the CPU reference.
        const engine = (msg.runs.find((r) => r.engine !== 'none') || msg.runs[0]).engine;
        $('engine').textContent = { wgsl: 'WGSL kernels on the GPU', reference: 'CPU reference' }[engine]
          || 'none (no FPL selector in this run)';
        $('engine').dataset.value = engine;
        const first = msg.runs[0];
        $('grid-method').textContent = NAMES[first.method];
        $('histogram-method').textContent = NAMES[first.method];
        $('grid-note').hidden = first.engine !== 'none';
        const spec = REGISTRY.find((m) => m.name === first.method) || {};
        $('grid-note').textContent = first.engine !== 'none' ? '' : (first.method === 'standard'
          ? 'Standard trains on every digit, so every digit shows as selected.'
          : spec.networks > 1
            ? `${NAMES[first.method]} passes every digit through both networks and chooses inside each batch, so every digit shows as selected.`
            : `${NAMES[first.method]} keeps no k-set across epochs (${spec.help}), so every digit shows as selected.`);
        // The methods with the FPL selector (TAkS and its ablations) have a regret.
        const selects = (r) => (REGISTRY.find((m) => m.name === r.method) || {}).selects;
        const regret = msg.runs.some(selects);
        $('regret-note').hidden = regret;
        $('chart-regret').style.display = regret ? '' : 'none';
      }
      buildGrid();
      break;
    case 'epoch':
      onEpoch(msg.method, msg.metrics);
      break;
    case 'snapshot':
      onSnapshot(msg);
      break;
    case 'paused':
      setStatus('paused');
      break;
    case 'resumed':
      setStatus('running');
      break;
    case 'done':
      setStatus('done');
      break;
    case 'error':
      showError(msg.message);
      if (worker.onbackend) worker.onbackend(null); // a failed init ends the wait too
      break;
  }
}

function chosenMethods() {
  const choice = $('method').value;
  if (!CHOICES[choice]) throw new Error(`unknown method choice (choose ${Object.keys(CHOICES).join(', ')})`);
  return CHOICES[choice];
}

// The table shows a row per method of the chosen run.
function showRows() {
  const methods = CHOICES[$('method').value] || [];
  for (const m of METHODS) $(`row-${m}`).hidden = !methods.includes(m);
}

function settings() {
  const number = (id) => Number($(id).value);
  const s = {
    methods: chosenMethods(),
    noise: $('noise').value,
    noise_rate: number('rate'),
    epochs: Math.round(number('epochs')),
    k_ratio: number('k-ratio'),
    eta_ratio: number('eta-ratio'),
    train_limit: Math.round(number('train')),
    seed: Math.round(number('seed')),
    grid: GRID,
  };
  for (const [k, v] of Object.entries(s)) {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`the setting ${k} is not a number`);
  }
  return s;
}

async function start() {
  clearError();
  let s;
  try { s = settings(); } catch (err) { showError(err.message); return; }
  setStatus('starting');
  if (!worker || used || backendChosen !== $('backend-choice').value) {
    if (!(await newWorker())) return;
  }
  used = true;
  resetView(s.epochs);
  startedAt = performance.now();
  setStatus('running');
  worker.postMessage({ type: 'start', settings: s });
}

// The registry's rows: the picker's "only" options and the table's rows, once.
function applyRegistry(methods) {
  if (REGISTRY.length || !methods) return;
  REGISTRY = methods;
  METHODS = methods.map((m) => m.name);
  const picker = $('method');
  methods.forEach((m, i) => {
    NAMES[m.name] = m.title;
    COLORS[m.name] ||= PALETTE[i % PALETTE.length];
    CHOICES[m.name] = [m.name];
    const option = document.createElement('option');
    option.value = m.name;
    option.textContent = `${m.title} only` + (m.networks > 1 ? ' (two networks)' : '');
    option.title = m.help;
    picker.append(option);
    const row = document.createElement('tr');
    row.id = `row-${m.name}`;
    row.dataset.method = m.name;
    row.title = m.help;
    const name = document.createElement('th');
    name.className = 'method-name';
    name.textContent = m.title;
    name.style.color = COLORS[m.name];
    const nets = document.createElement('td');
    nets.textContent = m.networks;
    row.append(name, nets);
    for (const what of ['accuracy', 'precision', 'seconds', 'samples']) {
      const cell = document.createElement('td');
      const value = document.createElement('b');
      value.id = `${what}-${m.name}`;
      value.dataset.value = '';
      value.textContent = '–';
      cell.append(value);
      row.append(cell);
    }
    $('methods-table').append(row);
  });
  if (wantedMethod && CHOICES[wantedMethod]) picker.value = wantedMethod;
  wantedMethod = null;
  showRows();
}

function describeRun(r) {
  const name = NAMES[r.method];
  const spec = REGISTRY.find((m) => m.name === r.method) || {};
  if (spec.selects) return `${name}: k = ${r.k} of ${r.n}, eta = ${r.eta.toFixed(2)}`;
  const nets = spec.networks > 1 ? ` through ${spec.networks} networks` : '';
  const tau = r.config && r.config.forget_rate;
  const forgets = (spec.settings || []).includes('--forget-rate') && Number.isFinite(tau);
  return `${name}: ${r.k === r.n ? `all ${r.n}` : `${r.k} of ${r.n}`}${nets}` + (forgets ? `, forget rate ${tau.toFixed(2)}` : '');
}

function resetView(epochs) {
  history = {};
  totalEpochs = epochs;
  $('epochs-total').textContent = epochs ?? '–';
  setValue('epoch', 0, '0');
  for (const m of METHODS) {
    for (const what of ['accuracy', 'precision', 'seconds', 'samples']) setValue(`${what}-${m}`, '', '–');
    $(`accuracy-${m}`).removeAttribute('title');
    delete $(`accuracy-${m}`).dataset.networks;
    $(`seconds-${m}`).removeAttribute('title');
  }
  setValue('throughput', '', '–');
  setValue('elapsed', 0, '–');
  for (const id of ['chart-accuracy', 'chart-precision', 'chart-seconds', 'chart-regret', 'chart-histogram']) $(id).replaceChildren();
  for (const id of ['regret-note', 'histogram-note', 'grid-note']) $(id).hidden = true;
  $('chart-histogram').style.display = '';
  $('chart-regret').style.display = '';
  $('grid').replaceChildren();
  showRows();
}

function onEpoch(method, m) {
  const rows = (history[method] ||= []);
  rows.push(m);
  setValue(`accuracy-${method}`, m.test_accuracy, pct(m.test_accuracy));
  const nets = m.network_accuracies || [];
  if (nets.length > 1) {
    $(`accuracy-${method}`).title = `${nets.map((a, i) => `network ${i + 1}: ${pct(a)}`).join(', ')} (shown: their mean)`;
    $(`accuracy-${method}`).dataset.networks = nets.join(',');
  }
  setValue(`precision-${method}`, m.label_precision, pct(m.label_precision));
  // The cost: the mean epoch so far, leaving the first out once there are more (it
  // also pays the wasm module's warm-up: memory growth, first allocations).
  const timed = rows.length > 1 ? rows.slice(1) : rows;
  const meanSeconds = timed.reduce((sum, r) => sum + r.epoch_seconds, 0) / timed.length;
  setValue(`seconds-${method}`, meanSeconds, `${meanSeconds.toFixed(2)} s`);
  $(`seconds-${method}`).title = `last epoch: ${m.epoch_seconds.toFixed(3)} s; first epoch (warm-up): ${rows[0].epoch_seconds.toFixed(3)} s`;
  const trained = timed.reduce((sum, r) => sum + r.selected, 0) / timed.length;
  setValue(`samples-${method}`, trained / meanSeconds, Math.round(trained / meanSeconds).toLocaleString('en'));
  const perSecond = m.selected / m.epoch_seconds;
  setValue('throughput', perSecond, `${Math.round(perSecond).toLocaleString('en')} samples/s (${NAMES[method]}, ${m.epoch_seconds.toFixed(2)} s/epoch)`);
  const done = Math.min(...runMethods.map((r) => (history[r] || []).length));
  setValue('epoch', done, String(done));
  const seconds = (performance.now() - startedAt) / 1000;
  setValue('elapsed', seconds, `${seconds.toFixed(1)} s`);
  drawCharts();
}

function drawCharts() {
  const series = (field) => Object.entries(history).map(([method, rows]) => ({
    label: NAMES[method], color: COLORS[method], points: rows.map((r) => [r.epoch, r[field]]),
  }));
  lineChart($('chart-accuracy'), series('test_accuracy'), { xmax: totalEpochs, ymin: 0, ymax: 1 });
  lineChart($('chart-precision'), series('label_precision'), { xmax: totalEpochs, ymin: 0, ymax: 1 });
  lineChart($('chart-seconds'), series('epoch_seconds'), { xmax: totalEpochs, ymin: 0 });
  // Only the methods with the FPL selector have a regret (the others report null): the
  // run's first such method is drawn.
  const selecting = runMethods.find((m) => (REGISTRY.find((r) => r.name === m) || {}).selects);
  const rows = (history[selecting] || []).filter((r) => r.regret != null && r.regret_bound != null);
  lineChart($('chart-regret'), [
    { label: `regret (${NAMES[selecting] || 'none'})`, color: COLORS[selecting], points: rows.map((r) => [r.epoch, r.regret]) },
    { label: 'bound 2 sqrt(2kt ln C(n,k))', color: '#555', dash: '4 3', points: rows.map((r) => [r.epoch, r.regret_bound]) },
  ], { xmax: totalEpochs, ymin: Math.min(0, ...rows.map((r) => r.regret)), format: (v) => v.toExponential(1) });
}

function buildGrid() {
  const cells = [];
  for (let i = 0; i < grid.trueLabels.length; i++) {
    const cell = document.createElement('div');
    cell.className = 'cell';
    cell.dataset.index = i;
    cell.dataset.clean = clean[i] ? '1' : '0';
    cell.dataset.selected = '0';
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 28;
    const ctx = canvas.getContext('2d');
    const img = ctx.createImageData(28, 28);
    for (let p = 0; p < 784; p++) {
      const v = 255 - Math.round(255 * grid.images[i * 784 + p]);
      img.data.set([v, v, v, 255], p * 4);
    }
    ctx.putImageData(img, 0, 0);
    cell.append(canvas);
    if (!clean[i]) {
      const given = document.createElement('span');
      given.className = 'given';
      given.textContent = grid.noisyLabels[i];
      cell.append(given);
    }
    cells.push(cell);
  }
  $('grid').replaceChildren(...cells);
}

function onSnapshot({ method, selected, cumulative }) {
  for (const cell of $('grid').children) {
    const i = Number(cell.dataset.index);
    cell.dataset.selected = selected[i] ? '1' : '0';
    const label = clean[i] ? `label ${grid.trueLabels[i]}` : `true ${grid.trueLabels[i]}, given ${grid.noisyLabels[i]}`;
    cell.title = `#${i}: ${label}; ${selected[i] ? 'selected' : 'rejected'}`;
  }
  // A method without TAkS's selector sends an empty cumulative noise-risk: say why.
  const none = cumulative.length === 0;
  $('histogram-note').hidden = !none;
  $('chart-histogram').style.display = none ? 'none' : ''; // SVG has no `hidden`
  if (none) {
    $('histogram-note').textContent = (NO_RISK[method] || `${NAMES[method] || method} has no cumulative noise-risk.`)
      + ' Pick TAkS first (TAkS alone or side by side) to see its histogram.';
    $('chart-histogram').replaceChildren();
    return;
  }
  const cleanRisk = [], noisyRisk = [];
  cumulative.forEach((v, i) => (clean[i] ? cleanRisk : noisyRisk).push(v));
  histogram($('chart-histogram'), [
    { label: 'clean', color: '#1a9641', values: cleanRisk },
    { label: 'mislabelled', color: '#e31a1c', values: noisyRisk },
  ]);
}

function askDefaults() {
  if (worker) worker.postMessage({ type: 'defaults', noise: $('noise').value, rate: Number($('rate').value) });
}

function applyQuery() {
  const q = new URLSearchParams(location.search);
  const map = { noise: 'noise', rate: 'rate', method: 'method', k: 'k-ratio', eta: 'eta-ratio', epochs: 'epochs', train: 'train', seed: 'seed', backend: 'backend-choice' };
  for (const [param, id] of Object.entries(map)) if (q.has(param)) $(id).value = q.get(param);
  // A single method is an option only once the registry has arrived.
  if (q.has('method') && !CHOICES[q.get('method')]) wantedMethod = q.get('method');
  return { explicitRatios: q.has('k') || q.has('eta'), autostart: q.get('autostart') === '1' };
}

async function main() {
  const { explicitRatios, autostart } = applyQuery();
  $('start').onclick = start;
  $('pause').onclick = () => worker && worker.postMessage({ type: 'pause' });
  $('resume').onclick = () => worker && worker.postMessage({ type: 'resume' });
  $('reset').onclick = async () => { clearError(); resetView(undefined); setStatus('idle'); await newWorker(); askDefaults(); };
  $('paper').onclick = askDefaults;
  $('noise').onchange = askDefaults;
  $('rate').onchange = askDefaults;
  $('backend-choice').onchange = () => newWorker();
  $('method').onchange = showRows;
  showRows();
  await newWorker();
  if (!explicitRatios) askDefaults();
  if (autostart) {
    // The defaults reply arrives before the start: the worker answers in order.
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (!$('k-ratio').value && !explicitRatios) await waitFor(() => $('k-ratio').value);
    start();
  }
}

function waitFor(test) {
  return new Promise((resolve) => {
    const t = setInterval(() => { if (test()) { clearInterval(t); resolve(); } }, 20);
  });
}

window.addEventListener('error', (e) => showError(`page error: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => showError(`page error: ${e.reason && e.reason.message ? e.reason.message : e.reason}`));
main().catch((err) => showError(err.message || String(err)));

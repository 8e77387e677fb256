// The page: settings, buttons, and drawing what the training worker reports.
// URL parameters preset the form (for links and tests):
//   ?preset=sym50|sym80|pair45 (a lesson: noise, rate, method, epochs; the rest below wins)
//   ?noise=symmetric&rate=0.5&method=<any registered method>|both|all&k=0.35
//    &eta=0.005&epochs=20&train=8000&seed=0&backend=auto|webgpu|cpu&autostart=1
//    &pause=N (pause after epoch N: a lesson stops where it is to be discussed, and a
//    test holds the run at a known epoch on any machine)
// (both = TAkS and Standard side by side; all = TAkS, Standard, Co-teaching and JoCoR.)
// The method picker and the results table list every method of the wasm module's
// registry (taks_web.methods_json), which arrives with the backend.
// State a script can read, per registered method M (taks, standard, co-teaching, ...):
// #accuracy-M, #precision-M, #seconds-M (mean seconds per epoch so far, after the first
// once there are more), #samples-M
// (samples trained on per second); and #status[data-state], #epoch, #throughput,
// #elapsed (data-value: raw numbers), #engine[data-value], #backend[data-kind], #error,
// #histogram-note (shown when the first method has no cumulative noise-risk),
// #grid[data-epoch] (the epoch whose chosen set the cells show),
// #grid .cell[data-selected][data-clean][data-index]; clicking a cell (or Enter on it)
// opens #sample: #sample-given and #sample-true (data-value: the labels),
// #sample-selected (data-value "1,0,1,...": trained on in each finished epoch),
// #sample-history (data-index: the digit the history shown is of, absent while it is
// read; data-epochs, always #grid's data-epoch once read; and data-theta, -cumulative,
// -ranked, -threshold: comma-separated per epoch, empty for a method without a
// selector), #sample-note.
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

// Lessons a teacher can pick: each shows its effect within a minute on the CPU
// fallback. The notes quote `taks train` on the same settings (seed 0), which the page
// reproduces.
const PRESETS = {
  sym50: {
    values: { noise: 'symmetric', rate: 0.5, method: 'both', epochs: 20, train: 8000 },
    note: 'Standard leads for the first twelve epochs, then memorises the wrong labels: at epoch 20 TAkS has 87.3% '
      + 'test accuracy and Standard 78.2% (taks train --noise symmetric --noise-rate 0.5 --epochs 20).',
  },
  sym80: {
    values: { noise: 'symmetric', rate: 0.8, method: 'both', epochs: 60, train: 8000 },
    note: 'Four labels in five are wrong. Standard peaks at 69% in epoch 3 and sinks to 25% as it memorises them; '
      + 'TAkS, training on the 15% of digits it trusts, climbs to 59% (epoch 60). Over 200 epochs this is where '
      + "TAkS's lead is largest: 71.6% against Standard's 21.4%.",
  },
  pair45: {
    values: { noise: 'pairflip', rate: 0.45, method: 'both', epochs: 20, train: 8000 },
    note: 'Each digit is filed as the next one 45% of the time, a confusion a network can learn. TAkS trails '
      + 'Standard at first (epoch 1: 52.4% against 54.8%), so a run stopped there teaches the wrong lesson; from epoch '
      + '3 it leads, 72.1% against 49.9% at epoch 20 (after 200 epochs in the CLI: 72.5% against 52.7%).',
  },
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
let shownSample = null;     // the training index whose panel is open
// What each method selects instead of a k-set, for the sample panel.
const PICKS_INSTEAD = {
  standard: 'Standard trains on every digit every epoch, so this one is always selected; it scores no noise-risk.',
  'co-teaching': 'Co-teaching keeps no k-set: inside every batch each network picks its small-loss digits (all but the forget rate) to update the other network. Every digit goes through both networks each epoch; which ones updated them is decided batch by batch.',
  jocor: 'JoCoR keeps no k-set: inside every batch the digits with the smallest joint loss of both networks (all but the forget rate) update both. Every digit goes through both networks each epoch.',
};

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
    case 'sample':
      // The worker answers as of the epoch of the last snapshot it posted, which this
      // page has already drawn (messages arrive in order): the check only drops an
      // answer about a digit closed or changed since.
      if (msg.history.index === shownSample && String(msg.epoch) === $('grid').dataset.epoch) drawSample(msg.history);
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
  worker.postMessage({ type: 'start', settings: s, pauseAfter });
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
  delete $('grid').dataset.epoch; // no epoch shown until the new run's first snapshot
  closeSample();
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
  // Naive (eta = 0) and Greedy have a regret but no bound.
  const rows = (history[selecting] || []).filter((r) => r.regret != null);
  const bounded = rows.filter((r) => r.regret_bound != null);
  lineChart($('chart-regret'), [
    { label: `regret (${NAMES[selecting] || 'none'})`, color: COLORS[selecting], points: rows.map((r) => [r.epoch, r.regret]) },
    { label: bounded.length ? 'bound at this eta: ηG + tG/(4η)' : `no bound: ${NAMES[selecting] || ''} has no perturbation`, color: '#555', dash: '4 3', points: bounded.map((r) => [r.epoch, r.regret_bound]) },
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
    cell.tabIndex = 0;
    cell.setAttribute('role', 'button');
    cell.setAttribute('aria-pressed', 'false');
    cell.onclick = () => openSample(i);
    cell.onkeydown = (event) => {
      if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); openSample(i); }
    };
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

function onSnapshot({ method, epoch, selected, cumulative, sample }) {
  $('grid').dataset.epoch = epoch; // the set chosen after this epoch
  for (const cell of $('grid').children) {
    const i = Number(cell.dataset.index);
    cell.dataset.selected = selected[i] ? '1' : '0';
    const label = clean[i] ? `label ${grid.trueLabels[i]}` : `true ${grid.trueLabels[i]}, given ${grid.noisyLabels[i]}`;
    cell.title = `#${i}: ${label}; ${selected[i] ? 'selected' : 'rejected'}`;
    cell.setAttribute('aria-label', `digit ${i}, ${label}, ${selected[i] ? 'selected' : 'rejected'}: show why`);
  }
  // The open panel moves to this epoch with the grid, in the same message; a digit
  // opened too recently for the worker to know it waits for its answer.
  if (shownSample !== null) {
    if (sample && sample.index === shownSample) drawSample(sample);
    else clearSample();
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

// ---- One digit's history: why it was or was not chosen ------------------------------

function openSample(i) {
  if (!grid || i >= grid.trueLabels.length) return;
  shownSample = i;
  for (const cell of $('grid').children) cell.setAttribute('aria-pressed', String(Number(cell.dataset.index) === i));
  $('sample').hidden = false;
  $('sample-index').textContent = i;
  const ctx = $('sample-image').getContext('2d');
  const img = ctx.createImageData(28, 28);
  for (let p = 0; p < 784; p++) {
    const v = 255 - Math.round(255 * grid.images[i * 784 + p]);
    img.data.set([v, v, v, 255], p * 4);
  }
  ctx.putImageData(img, 0, 0);
  setValue('sample-given', grid.noisyLabels[i], String(grid.noisyLabels[i]));
  setValue('sample-true', grid.trueLabels[i], String(grid.trueLabels[i]) + (clean[i] ? '' : ' (mislabelled)'));
  clearSample();
  watchSample(i);
}

function closeSample() {
  shownSample = null;
  $('sample').hidden = true;
  for (const cell of $('grid').children) cell.setAttribute('aria-pressed', 'false');
  watchSample(null);
}

// Tell the worker which digit's history to send (null: none); it answers at once, and
// then with every snapshot.
function watchSample(i) {
  if (worker) worker.postMessage({ type: 'sample', index: i });
}

// Until its history arrives, the panel shows the digit (image, labels) and nothing
// of another digit's or another epoch's history.
function clearSample() {
  const history = $('sample-history');
  delete history.dataset.index;
  history.dataset.epochs = '';
  for (const key of ['theta', 'cumulative', 'ranked', 'threshold']) history.dataset[key] = '';
  $('sample-selected').dataset.value = '';
  $('sample-selected').replaceChildren();
  $('sample-verdict').textContent = 'reading its history…';
  $('sample-risk').replaceChildren();
  $('sample-decision').replaceChildren();
}

function drawSample(h) {
  const t = h.trail;
  const epochs = t.trained.length;
  const history = $('sample-history');
  history.dataset.index = h.index;
  history.dataset.epochs = epochs;
  for (const key of ['theta', 'cumulative', 'ranked', 'threshold']) history.dataset[key] = t[key].join(',');
  $('sample-selected').dataset.value = t.trained.map((b) => (b ? 1 : 0)).join(',');
  $('sample-selected').replaceChildren(...t.trained.map((b, e) => {
    const mark = document.createElement('i');
    mark.className = b ? 'in' : 'out';
    mark.title = `epoch ${e + 1}: ${b ? 'trained on' : 'left out'}`;
    return mark;
  }));
  const method = runMethods[0];
  const spec = REGISTRY.find((m) => m.name === method) || {};
  const name = NAMES[method] || method;
  const none = h.ranking === 'none';
  $('sample-risk').parentElement.hidden = none;
  $('sample-decision').parentElement.hidden = none;
  if (none) {
    $('sample-note').textContent = PICKS_INSTEAD[method]
      || (spec.networks > 1
        ? `${name} keeps no k-set: it picks inside each batch (${spec.help}). Every digit goes through both networks each epoch.`
        : `${name} keeps no k-set across epochs (${spec.help}); every digit is used each epoch.`);
    $('sample-verdict').textContent = epochs ? `epoch ${epochs}: trained on (every digit is)` : 'no epoch finished yet';
    return;
  }
  const ranked = h.ranking === 'latest' ? 'θ (Greedy ranks the latest risk alone)' : (h.eta > 0 ? 'L + η r (its perturbed risk)' : 'L (Naive: no perturbation)');
  $('sample-note').textContent = `${name} trains each epoch on the k = ${h.k} digits with the smallest ${ranked}; `
    + 'a digit is chosen for the next epoch when its value is at or under the k-th smallest one (the line). '
    + (h.eta > 0 && h.ranking === 'perturbed' ? `The perturbation η r (η = ${h.eta.toFixed(2)}, r ~ N(0, 1) fresh each epoch) lets a digit that looked bad get another chance. ` : '')
    + 'Epoch 1 trains on a random k-set.';
  if (!epochs) {
    $('sample-verdict').textContent = 'no epoch finished yet';
    $('sample-risk').replaceChildren();
    $('sample-decision').replaceChildren();
    return;
  }
  const last = epochs - 1;
  const chosen = t.chosen_next[last];
  $('sample-verdict').textContent = `after epoch ${epochs}: ${t.ranked[last].toFixed(2)} ${chosen ? '≤' : '>'} line ${t.threshold[last].toFixed(2)}, so ${chosen ? 'chosen' : 'left out'} for epoch ${epochs + 1}`;
  const xs = (values) => values.map((v, e) => [e + 1, v]);
  lineChart($('sample-risk'), [
    { label: 'θ: noise-risk', color: clean[shownSample] ? '#1a9641' : '#e31a1c', points: xs(t.theta) },
  ], { xmax: totalEpochs, ymin: 0, ymax: 1 });
  const series = [
    { label: 'the line: k-th smallest', color: '#555', dash: '4 3', points: xs(t.threshold) },
    { label: h.ranking === 'latest' ? 'θ (ranked by)' : 'L + η r (ranked by)', color: '#1f78b4', points: xs(t.ranked) },
  ];
  if (h.ranking !== 'latest') series.push({ label: 'L: cumulative risk', color: '#aaa', points: xs(t.cumulative) });
  const all = series.flatMap((s) => s.points.map((p) => p[1]));
  lineChart($('sample-decision'), series, { xmax: totalEpochs, ymin: Math.min(0, ...all), ymax: Math.max(1e-9, ...all) });
}

function applyPreset(name) {
  const preset = PRESETS[name];
  $('preset-note').hidden = !preset;
  if (!preset) return;
  $('preset-note').textContent = preset.note;
  const ids = { noise: 'noise', rate: 'rate', method: 'method', epochs: 'epochs', train: 'train' };
  for (const [key, id] of Object.entries(ids)) $(id).value = preset.values[key];
  showRows();
}

function askDefaults() {
  if (worker) worker.postMessage({ type: 'defaults', noise: $('noise').value, rate: Number($('rate').value) });
}

// The epoch after which the run pauses itself (`?pause=N`), if any.
let pauseAfter = null;

function applyQuery() {
  const q = new URLSearchParams(location.search);
  if (q.has('preset')) { $('preset').value = q.get('preset'); applyPreset(q.get('preset')); }
  const map = { noise: 'noise', rate: 'rate', method: 'method', k: 'k-ratio', eta: 'eta-ratio', epochs: 'epochs', train: 'train', seed: 'seed', backend: 'backend-choice' };
  for (const [param, id] of Object.entries(map)) if (q.has(param)) $(id).value = q.get(param);
  // A single method is an option only once the registry has arrived.
  if (q.has('method') && !CHOICES[q.get('method')]) wantedMethod = q.get('method');
  if (q.has('pause')) pauseAfter = Number(q.get('pause'));
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
  $('preset').onchange = () => { applyPreset($('preset').value); askDefaults(); };
  $('sample-close').onclick = closeSample;
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

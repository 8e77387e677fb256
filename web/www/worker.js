// The training worker: owns the wasm module, the backend and the runs, so that an
// epoch of training never blocks the page. It only forwards: settings in, the core's
// metrics, selections and one digit's history (the page's sample panel) out, as typed messages (see `post` calls). Reset = the page
// terminates this worker and starts a fresh one, which also frees burn's wgpu runtime
// (it can be initialised only once per wasm instance).
import init, * as taks from '../pkg/taks_web.js';
import { chooseBackend as chooseBackendIn, messageOf as messageOfIn } from './backend.js';

let runs = [];          // [{ method, run }] stepped in turn, one epoch each, so side-by-side
                        // runs share the device fairly and each times only its own epoch
let paused = false;
let wake = null;        // resolves a pause

const post = (message, transfer = []) => self.postMessage(message, transfer);

const messageOf = (err) => messageOfIn(taks, err);
const chooseBackend = (want) => chooseBackendIn(taks, want);

function start(settings) {
  const { methods, ...common } = settings;
  runs = methods.map((method) => ({ method, run: new taks.Run(JSON.stringify({ ...common, method })) }));
  // The first method feeds the grid and the histogram. One without TAkS's selector
  // (Standard, Co-teaching, JoCoR) snapshots as all selected with an empty cumulative.
  const shown = runs[0].run;
  post({
    type: 'started',
    runs: runs.map(({ method, run }) => ({ method, n: run.train_len(), k: run.k(), eta: run.eta(), engine: run.engine(), config: JSON.parse(run.config_json()) })),
    grid: {
      images: shown.grid_images(),
      trueLabels: shown.true_labels().slice(0, settings.grid),
      noisyLabels: shown.noisy_labels().slice(0, settings.grid),
    },
    clean: shown.clean_mask(),
  });
}

async function snapshot(epoch) {
  const { selected, cumulative } = await runs[0].run.snapshot();
  post({ type: 'snapshot', method: runs[0].method, epoch, selected, cumulative }, [selected.buffer, cumulative.buffer]);
}

async function train(epochs) {
  await snapshot(0);
  for (let epoch = 1; epoch <= epochs; epoch++) {
    for (const { method, run } of runs) {
      const metrics = JSON.parse(await run.step());
      post({ type: 'epoch', method, metrics });
    }
    await snapshot(epoch);
    // Let pause/resume messages in between epochs (flex steps run synchronously).
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (paused) {
      post({ type: 'paused', epoch });
      await new Promise((resolve) => { wake = resolve; });
      post({ type: 'resumed' });
    }
  }
  post({ type: 'done' });
}

const ready = init();

// A panic in a task nobody awaits (a wgpu callback) surfaces here, not in a catch.
self.addEventListener('error', (event) => {
  event.preventDefault();
  post({ type: 'error', message: messageOf(event.error || event.message) });
});
self.addEventListener('unhandledrejection', (event) => {
  event.preventDefault();
  post({ type: 'error', message: messageOf(event.reason) });
});

self.onmessage = async ({ data }) => {
  try {
    await ready;
    switch (data.type) {
      case 'init':
        post({ type: 'backend', ...(await chooseBackend(data.backend)), methods: JSON.parse(taks.methods_json()) });
        break;
      case 'defaults': {
        const [kRatio, etaRatio] = taks.paper_ratios(data.noise, data.rate);
        post({ type: 'defaults', kRatio, etaRatio });
        break;
      }
      case 'start':
        start(data.settings);
        await train(data.settings.epochs);
        break;
      case 'sample':
        // One digit's history for the page's panel; answered between epochs too. A
        // worker without a run (a fresh one after Reset) has nothing to say.
        if (runs.length) post({ type: 'sample', history: JSON.parse(runs[0].run.sample_history(data.index)) });
        break;
      case 'pause':
        paused = true;
        break;
      case 'resume':
        paused = false;
        if (wake) { wake(); wake = null; }
        break;
      default:
        throw new Error(`unknown message ${data.type}`);
    }
  } catch (err) {
    post({ type: 'error', message: messageOf(err) });
  }
};

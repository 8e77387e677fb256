// The training worker: owns the wasm module, the backend and the runs, so that an
// epoch of training never blocks the page. It only forwards: settings in, the core's
// metrics, selections and one digit's history (the page's sample panel) out, as typed messages (see `post` calls). Reset = the page
// terminates this worker and starts a fresh one, which also frees burn's wgpu runtime
// (it can be initialised only once per wasm instance).
import init, * as taks from '../pkg/taks_web.js';
import { chooseBackend as chooseBackendIn, messageOf as messageOfIn } from './backend.js';

let runs = [];          // [{ method, run }] stepped in turn, one epoch each, so side-by-side
                        // runs share the device fairly and each times only its own epoch
let shownEpoch = null; // the epoch of the last snapshot posted: the one the page's grid shows
let watched = null;    // the digit whose panel is open, if any
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

// The grid's state after `epoch`, and the open panel's digit as of the same epoch, in one
// message: the page never shows a grid of one epoch beside a panel of another. Computed
// and posted in one synchronous block, after the only await, so a 'sample' message
// handled meanwhile cannot come between them.
async function snapshot(epoch) {
  const { selected, cumulative } = await runs[0].run.snapshot(epoch);
  const sample = watched === null ? null : history(watched, epoch);
  shownEpoch = epoch;
  post({ type: 'snapshot', method: runs[0].method, epoch, selected, cumulative, sample }, [selected.buffer, cumulative.buffer]);
}

// One digit's history over the first `epoch` finished epochs of the run the grid shows.
const history = (index, epoch) => JSON.parse(runs[0].run.sample_history(index, epoch));

// `pauseAfter`: the epoch after which the run pauses itself (the page's `?pause=N`), as
// if Pause had been pressed during it.
async function train(epochs, pauseAfter) {
  await snapshot(0);
  for (let epoch = 1; epoch <= epochs; epoch++) {
    for (const { method, run } of runs) {
      const metrics = JSON.parse(await run.step());
      post({ type: 'epoch', method, metrics });
    }
    await snapshot(epoch);
    // Let pause/resume messages in between epochs (flex steps run synchronously).
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (epoch === pauseAfter) paused = true;
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
        await train(data.settings.epochs, data.pauseAfter);
        break;
      case 'sample':
        // Watch one digit (or none: index null). Answered at once as of the epoch the
        // grid shows (the last snapshot posted), even while a later epoch trains; every
        // later snapshot carries its history. A worker without a run (a fresh one after
        // Reset) has nothing to say.
        watched = data.index;
        if (watched !== null && runs.length && shownEpoch !== null) {
          post({ type: 'sample', epoch: shownEpoch, history: history(watched, shownEpoch) });
        }
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

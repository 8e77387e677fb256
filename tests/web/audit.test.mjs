// End-to-end tests of the audit page (audit.html) in Debian's headless chromium on the
// CPU fallback: a folder exported the way people have them (grey PNGs, tinted colour
// JPEGs and BMPs of another size, a fifth filed under a confusable class, an empty
// .png, a truncated .png, a text file named .jpg, a .DS_Store and a README at the top)
// is picked with the directory upload, audited, and checked against the truth and
// against `taks audit` on the same folder: the same files left out, the same samples,
// F1 close to the CLI's, downloads with the CLI's columns, a model `taks predict`
// loads, and not one network request once the page has loaded.
//
// The folder is made here from the repository's bundled MNIST digits: PNG and BMP
// written by hand (zlib is node's), JPEG by the browser's own encoder.
// Environment: CHROMIUM (default /usr/bin/chromium); TAKS_BIN (the release `taks`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdir, rm, mkdtemp } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { gunzipSync, deflateSync } from 'node:zlib';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { chromium } from 'playwright-core';
import { ROOT, serveRepository } from './serve.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TAKS = process.env.TAKS_BIN || join(ROOT, 'target/release/taks');
const FLAGS = ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const NAMES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
// Where a misfiled digit goes: the class it is most often confused with.
const CONFUSED = [6, 7, 7, 5, 9, 3, 0, 1, 3, 4];
const PER_CLASS = 50;

let server;
let origin;
let work;

before(async () => {
  assert.ok(existsSync(join(ROOT, 'web/pkg/taks_web_bg.wasm')), 'web/pkg is missing: run scripts/build-web.sh first');
  assert.ok(existsSync(TAKS), `${TAKS} is missing: build the release binary (or set TAKS_BIN)`);
  server = await serveRepository();
  origin = server.origin;
  work = await mkdtemp(join(tmpdir(), 'taks-audit-page-'));
});

after(async () => {
  if (server) server.close();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The bundled training digits: { images: [Uint8Array(784)], labels: [n] }. */
function digits(count) {
  const dir = join(ROOT, 'core/data/mnist-digits');
  const images = gunzipSync(readFileSync(join(dir, 'train-images-idx3-ubyte.gz')));
  const labels = gunzipSync(readFileSync(join(dir, 'train-labels-idx1-ubyte.gz')));
  const out = { images: [], labels: [] };
  for (let i = 0; i < count; i++) {
    out.images.push(images.subarray(16 + i * 784, 16 + (i + 1) * 784));
    out.labels.push(labels[8 + i]);
  }
  return out;
}

/** CRC-32 (IEEE), as PNG chunks carry it (node's zlib.crc32 is newer than some nodes). */
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** A grey 8-bit PNG of `w` x `h` pixels. */
function png(pixels, w, h) {
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type), data]);
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(w, 0); header.writeUInt32BE(h, 4);
  header[8] = 8; header[9] = 0; // 8-bit grey
  const raw = Buffer.alloc((w + 1) * h);
  for (let y = 0; y < h; y++) raw.set(pixels.subarray(y * w, (y + 1) * w), y * (w + 1) + 1);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** A 24-bit BMP of a grey digit scaled (nearest) to `side` and tinted by `tint`. */
function bmp(pixels, side, tint) {
  const row = Math.ceil((side * 3) / 4) * 4;
  const out = Buffer.alloc(54 + row * side);
  out.write('BM'); out.writeUInt32LE(out.length, 2); out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14); out.writeInt32LE(side, 18); out.writeInt32LE(side, 22);
  out.writeUInt16LE(1, 26); out.writeUInt16LE(24, 28); out.writeUInt32LE(row * side, 34);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const v = pixels[Math.floor((y * 28) / side) * 28 + Math.floor((x * 28) / side)];
      const at = 54 + (side - 1 - y) * row + x * 3; // bottom-up rows, BGR
      out[at] = Math.round(v * tint[2]); out[at + 1] = Math.round(v * tint[1]); out[at + 2] = Math.round(v * tint[0]);
    }
  }
  return out;
}

/** The mixed export: returns { dir, truth: Map(id -> misfiled?) }. JPEGs come from the
 * browser's encoder (`page`, any page of the served origin). */
async function mixedExport(page, name, { classes = 10 } = {}) {
  const dir = join(work, name);
  await rm(dir, { recursive: true, force: true });
  const d = digits(PER_CLASS * 10 * 3);
  const truth = new Map();
  const count = new Array(10).fill(0);
  const jpegs = [];
  let n = 0;
  for (let i = 0; i < d.labels.length; i++) {
    const label = d.labels[i];
    if (label >= classes || count[label] >= PER_CLASS) continue;
    count[label] += 1;
    n += 1;
    // One in five is filed under its confusable class (within the classes present).
    const misfiled = n % 5 === 0 && CONFUSED[label] < classes;
    const filed = NAMES[misfiled ? CONFUSED[label] : label];
    await mkdir(join(dir, filed), { recursive: true });
    const kind = n % 6; // 0, 1: grey PNG ... 4: JPEG, 5: BMP
    const tint = [[1, 0.85, 0.7], [0.7, 0.9, 1], [0.9, 1, 0.8]][n % 3];
    let id;
    if (kind === 4) {
      id = `${filed}/img${i}.jpg`;
      jpegs.push({ id, pixels: Array.from(d.images[i]), tint });
    } else if (kind === 5) {
      id = `${filed}/img${i}.bmp`;
      await writeFile(join(dir, id), bmp(d.images[i], 40, tint));
    } else {
      id = `${filed}/img${i}.png`;
      await writeFile(join(dir, id), png(d.images[i], 28, 28));
    }
    truth.set(id, misfiled);
  }
  const encoded = await page.evaluate((items) => items.map(({ id, pixels, tint }) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 64;
    const small = document.createElement('canvas');
    small.width = small.height = 28;
    const img = small.getContext('2d').createImageData(28, 28);
    pixels.forEach((v, p) => img.data.set([v * tint[0], v * tint[1], v * tint[2], 255], p * 4));
    small.getContext('2d').putImageData(img, 0, 0);
    canvas.getContext('2d').drawImage(small, 0, 0, 64, 64);
    return { id, data: canvas.toDataURL('image/jpeg', 0.92).split(',')[1] };
  }), jpegs);
  for (const { id, data } of encoded) await writeFile(join(dir, id), Buffer.from(data, 'base64'));
  // What people's exports also hold.
  const first = NAMES[0];
  await writeFile(join(dir, first, 'empty.png'), Buffer.alloc(0));
  const good = png(d.images[0], 28, 28);
  await writeFile(join(dir, first, 'cut.png'), good.subarray(0, good.length - 40));
  await writeFile(join(dir, first, 'notes.jpg'), 'shot list for the catalogue\n');
  await writeFile(join(dir, first, '.DS_Store'), Buffer.from([0, 0, 0, 1, 0x42, 0x75, 0x64, 0x31]));
  await writeFile(join(dir, 'README.txt'), 'exported from the shop\n');
  return { dir, truth };
}

/** Precision, recall and F1 of `flagged` ids against the misfiled ones of `truth`. */
function score(flagged, truth) {
  const wrong = [...truth].filter(([, m]) => m).map(([id]) => id);
  const hits = wrong.filter((id) => flagged.has(id)).length;
  const precision = flagged.size ? hits / flagged.size : 0;
  const recall = hits / wrong.length;
  return { precision, recall, f1: precision + recall ? (2 * precision * recall) / (precision + recall) : 0 };
}

function parseCsv(text) {
  const rows = [];
  for (const line of text.trim().split('\n')) {
    const cells = [];
    let cur = '', quoted = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') { cur += '"'; i++; } else if (c === '"') quoted = false; else cur += c;
      } else if (c === '"') quoted = true; else if (c === ',') { cells.push(cur); cur = ''; } else cur += c;
    }
    cells.push(cur);
    rows.push(cells);
  }
  return rows;
}

async function openAudit(browser) {
  const page = await browser.newPage({ acceptDownloads: true });
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('worker', (w) => w.on('console', () => {}));
  await page.goto(`${origin}/audit.html`);
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60_000 });
  return { page, requests };
}

/** Press Start and wait for the audit to end: #audit-status's value then. */
async function startAndFinish(page, timeout) {
  await page.click('#audit-start');
  await page.waitForFunction(() => /^(done|error)/.test(document.getElementById('audit-status').dataset.value), null, { timeout });
  return page.evaluate(() => document.getElementById('audit-status').dataset.value);
}

async function downloaded(page, button, count = 1) {
  const downloads = [];
  const got = new Promise((ok) => {
    page.on('download', async function onDownload(d) {
      downloads.push(d);
      if (downloads.length === count) { page.off('download', onDownload); ok(); }
    });
  });
  await page.click(button);
  await got;
  const out = {};
  for (const d of downloads) out[d.suggestedFilename()] = await readFile(await d.path());
  return out;
}

test('a mixed export: audited on the CPU fallback like `taks audit`, nothing sent', { timeout: 600_000 }, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    const { page, requests } = await openAudit(browser);
    const { dir, truth } = await mixedExport(page, 'export');
    const loaded = requests.length;
    await page.selectOption('#audit-backend-choice', 'cpu');
    // The network named, not left to the time budget: which one a budget affords depends
    // on the machine (the budget's rule has its own test, on injected timings).
    await page.selectOption('#audit-model', 'mlp');
    await page.setInputFiles('#audit-input', dir);
    assert.equal(await startAndFinish(page, 540_000), 'done');
    const state = await page.evaluate(() => ({
      backend: document.getElementById('audit-backend').dataset.kind,
      network: document.getElementById('audit-summary').dataset.network,
      skipped: [...document.querySelectorAll('#audit-skipped li')].map((li) => [li.dataset.id, li.textContent]),
      rows: [...document.querySelectorAll('#audit-table tbody tr')].map((tr) => ({ id: tr.dataset.id, issue: tr.dataset.issue === 'true' })),
    }));
    assert.equal(state.backend, 'cpu');

    // The CLI on the same folder, with the network the page chose.
    const model = state.network.split(' ')[0];
    const cliOut = join(work, 'cli-audit');
    execFileSync(TAKS, ['audit', dir, '--model', model, '--out', cliOut, '--device', 'cpu', '-q'], { stdio: 'pipe' });
    const cliSummary = JSON.parse(readFileSync(join(cliOut, 'summary.json'), 'utf8'));
    const cliRows = parseCsv(readFileSync(join(cliOut, 'suspects.csv'), 'utf8'));

    // The same files left out, for the same reasons; .DS_Store is not a file to list.
    assert.deepEqual(state.skipped.map(([id]) => id), cliSummary.skipped.map((s) => s.id));
    assert.deepEqual(state.skipped.map(([id]) => id).sort(), ['README.txt', 'zero/cut.png', 'zero/empty.png', 'zero/notes.jpg']);
    // The same samples, one row each.
    assert.equal(state.rows.length, truth.size);
    assert.deepEqual(state.rows.map((r) => r.id).sort(), cliRows.slice(1).map((r) => r[0]).sort());

    const page_ = score(new Set(state.rows.filter((r) => r.issue).map((r) => r.id)), truth);
    const cli = score(new Set(cliRows.slice(1).filter((r) => r[5] === 'true').map((r) => r[0])), truth);
    console.log('mixed export', JSON.stringify({ network: state.network, page: page_, cli }));
    assert.ok(page_.f1 > 0.6, `the page's F1 ${page_.f1.toFixed(3)} (a fifth misfiled)`);
    assert.ok(Math.abs(page_.f1 - cli.f1) <= 0.08, `page F1 ${page_.f1.toFixed(3)} vs taks audit ${cli.f1.toFixed(3)}`);

    // Only the issues, when asked.
    await page.check('#audit-issues-only');
    const visible = await page.evaluate(() => [...document.querySelectorAll('#audit-table tbody tr')].filter((tr) => tr.offsetParent !== null).length);
    assert.equal(visible, state.rows.filter((r) => r.issue).length);
    await page.uncheck('#audit-issues-only');

    // Decide on the two most suspect rows, then download.
    await page.click('#audit-table tbody tr:nth-child(1) .decide-accept');
    await page.click('#audit-table tbody tr:nth-child(2) .decide-keep');
    const suspects = parseCsv((await downloaded(page, '#audit-download'))['suspects.csv'].toString());
    assert.deepEqual(suspects[0], [...cliRows[0], 'decision']);
    assert.equal(suspects.length - 1, truth.size);
    assert.equal(suspects[1][8], 'accept');
    assert.equal(suspects[2][8], 'keep');
    assert.ok(suspects.slice(3).every((r) => r[8] === ''));
    const labels = parseCsv((await downloaded(page, '#audit-download-labels'))['labels.csv'].toString());
    assert.deepEqual(labels[0], ['path', 'label']);
    const relabelled = new Map(labels.slice(1));
    assert.equal(relabelled.get(suspects[1][0]), suspects[1][2], 'an accepted suggestion is the new label');
    assert.equal(relabelled.get(suspects[2][0]), suspects[2][1], 'a kept label stays');
    assert.equal(relabelled.size, truth.size);

    // The model: `taks predict` loads it and agrees with the page's suggestions.
    const files = await downloaded(page, '#audit-download-model', 2);
    const modelDir = join(work, 'page-model');
    await mkdir(modelDir, { recursive: true });
    await writeFile(join(modelDir, 'model.safetensors'), files['model.safetensors']);
    await writeFile(join(modelDir, 'model.json'), files['model.json']);
    // It lists the four unreadable files and exits 1 after predicting the others.
    const run = spawnSync(TAKS, ['predict', '--model', modelDir, dir], { encoding: 'utf8' });
    assert.match(run.stderr, /4 inputs could not be read/);
    const predicted = parseCsv(run.stdout);
    const suggested = new Map(suspects.slice(1).map((r) => [r[0], r[2]]));
    const agree = predicted.slice(1).filter((r) => suggested.get(r[0].slice(dir.length + 1)) === r[1]).length;
    assert.ok(agree >= 0.98 * truth.size, `taks predict agrees with the page on ${agree} of ${truth.size}`);

    // Not one request since the page's own files loaded: no upload, no fetch.
    const after = requests.slice(loaded).filter((url) => !url.startsWith('blob:') && !url.startsWith('data:'));
    assert.deepEqual(after, []);
    assert.equal(await page.textContent('#error'), '');
  } finally {
    await browser.close();
  }
});

test('a folder of one class, and no folder at all, are clear messages', { timeout: 120_000 }, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    // The demo links here.
    const demo = await browser.newPage();
    await demo.goto(`${origin}/index.html`);
    await demo.click('#audit-link');
    await demo.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60_000 });
    assert.match(await demo.textContent('#audit-private'), /Nothing leaves this machine/);
    await demo.close();
    const { page } = await openAudit(browser);
    await page.click('#audit-start');
    await page.waitForFunction(() => document.getElementById('audit-status').dataset.value.startsWith('error'));
    assert.match(await page.textContent('#error'), /choose a folder/);
    const { dir } = await mixedExport(page, 'one-class', { classes: 1 });
    await page.selectOption('#audit-backend-choice', 'cpu');
    await page.setInputFiles('#audit-input', dir);
    await page.click('#audit-start');
    await page.waitForFunction(() => /^(done|error: .*class)/.test(document.getElementById('audit-status').dataset.value), null, { timeout: 60_000 });
    const status = await page.evaluate(() => document.getElementById('audit-status').dataset.value);
    assert.match(status, /^error: the chosen folder: has \d+ usable samples in 1 classes; an audit needs at least 4 samples and 2 classes/);
    // A silly budget is refused before anything is read.
    await page.fill('#audit-budget', '0');
    await page.click('#audit-start');
    await page.waitForFunction(() => document.getElementById('audit-status').dataset.value.includes('budget'), null, { timeout: 60_000 });
    assert.match(await page.evaluate(() => document.getElementById('audit-status').dataset.value), /^error: the budget 0 must be a positive number of seconds/);
    await page.fill('#audit-budget', '300');
    // A table without its label column, and one with a word among the numbers.
    for (const [name, text, message] of [
      ['no-label.csv', 'a,b\n1,2\n3,4\n', /no-label\.csv: has no label column 'label'/],
      ['word.csv', 'a,label\n1,x\nseven,y\n3,x\n4,y\n', /word\.csv: .*seven/],
    ]) {
      await writeFile(join(work, name), text);
      await page.setInputFiles('#audit-csv', join(work, name));
      await page.click('#audit-start');
      await page.waitForFunction((n) => document.getElementById('audit-status').dataset.value.includes(n), name, { timeout: 60_000 });
      assert.match(await page.evaluate(() => document.getElementById('audit-status').dataset.value), message);
    }
  } finally {
    await browser.close();
  }
});

test('a CSV table: rows audited by their numbers, ids are row numbers', { timeout: 300_000 }, async () => {
  // 1,000 digits as 49 features (7x7 means of the 28x28 pixels), a fifth misfiled.
  const d = digits(1000);
  const header = [...Array.from({ length: 49 }, (_, j) => `f${j}`), 'label'];
  const lines = [header.join(',')];
  const misfiled = new Set();
  d.images.forEach((img, i) => {
    const features = [];
    for (let by = 0; by < 7; by++) {
      for (let bx = 0; bx < 7; bx++) {
        let sum = 0;
        for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) sum += img[(by * 4 + y) * 28 + bx * 4 + x];
        features.push((sum / 16 / 255).toFixed(4));
      }
    }
    const wrong = i % 5 === 4;
    if (wrong) misfiled.add(String(i));
    lines.push([...features, NAMES[wrong ? CONFUSED[d.labels[i]] : d.labels[i]]].join(','));
  });
  const csv = join(work, 'digits.csv');
  await writeFile(csv, `${lines.join('\n')}\n`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    const { page } = await openAudit(browser);
    await page.selectOption('#audit-backend-choice', 'cpu');
    await page.setInputFiles('#audit-csv', csv);
    assert.equal(await startAndFinish(page, 240_000), 'done');
    const rows = await page.evaluate(() => [...document.querySelectorAll('#audit-table tbody tr')].map((tr) => ({ id: tr.dataset.id, issue: tr.dataset.issue === 'true' })));
    assert.deepEqual(rows.map((r) => Number(r.id)).sort((a, b) => a - b), Array.from({ length: 1000 }, (_, i) => i));
    const truth = new Map(rows.map((r) => [r.id, misfiled.has(r.id)]));
    const found = score(new Set(rows.filter((r) => r.issue).map((r) => r.id)), truth);
    const cliOut = join(work, 'cli-table');
    execFileSync(TAKS, ['audit', csv, '--out', cliOut, '--device', 'cpu', '-q'], { stdio: 'pipe' });
    const cliRows = parseCsv(readFileSync(join(cliOut, 'suspects.csv'), 'utf8')).slice(1);
    const cli = score(new Set(cliRows.filter((r) => r[5] === 'true').map((r) => r[0])), truth);
    console.log('csv table', JSON.stringify({ page: found, cli }));
    // Flagging a fifth at random would score about 0.2.
    assert.ok(found.f1 > 0.55, `F1 ${found.f1.toFixed(3)} on the table`);
    assert.ok(Math.abs(found.f1 - cli.f1) <= 0.08, `page F1 ${found.f1.toFixed(3)} vs taks audit ${cli.f1.toFixed(3)}`);
    assert.equal(await page.evaluate(() => document.getElementById('audit-summary').dataset.network), 'mlp on 49 features');
  } finally {
    await browser.close();
  }
});

// SwiftShader runs WebGPU on the CPU and is slow: a small folder and few epochs, enough
// to run the probe, the WGSL selection and the weights' read-back on WebGPU.
test('WebGPU (SwiftShader): the audit runs on the GPU path', { timeout: 400_000 }, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...FLAGS, '--enable-unsafe-webgpu'] });
  try {
    const { page } = await openAudit(browser);
    const { dir, truth } = await mixedExport(page, 'gpu', { classes: 4 });
    await page.selectOption('#audit-backend-choice', 'webgpu');
    await page.selectOption('#audit-model', 'mlp');
    await page.fill('#audit-epochs', '4');
    await page.fill('#audit-probe-epochs', '2');
    await page.setInputFiles('#audit-input', dir);
    assert.equal(await startAndFinish(page, 380_000), 'done');
    const state = await page.evaluate(() => ({
      backend: document.getElementById('audit-backend').dataset.kind,
      rows: document.querySelectorAll('#audit-table tbody tr').length,
    }));
    assert.equal(state.backend, 'webgpu');
    assert.equal(state.rows, truth.size);
    const files = await downloaded(page, '#audit-download-model', 2);
    assert.equal(JSON.parse(files['model.json'].toString()).architecture, 'mlp');
    assert.ok(files['model.safetensors'].length > 4 * 784 * 256, 'the weights were read back from the GPU');
  } finally {
    await browser.close();
  }
});

test('progress while it runs, Cancel, and a second audit after it', { timeout: 300_000 }, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    const { page } = await openAudit(browser);
    const { dir, truth } = await mixedExport(page, 'cancel', { classes: 4 });
    await page.selectOption('#audit-backend-choice', 'cpu');
    await page.selectOption('#audit-model', 'mlp');
    // Probes far longer than the test waits, so that the run is still going when it is
    // looked at and cancelled, on any machine.
    await page.fill('#audit-probe-epochs', '100000');
    await page.setInputFiles('#audit-input', dir);
    await page.click('#audit-start');
    // The first probe epoch has finished: a phase, an epoch and a time left are shown.
    await page.waitForFunction(() => document.getElementById('audit-left').dataset.value !== '', null, { timeout: 120_000 });
    const shown = await page.evaluate(() => ({
      status: document.getElementById('audit-status').dataset.value,
      phase: document.getElementById('audit-phase').textContent,
      epoch: document.getElementById('audit-epoch').textContent,
      left: Number(document.getElementById('audit-left').dataset.value),
    }));
    assert.equal(shown.status, 'running');
    assert.match(shown.phase, /^probe 1 of 4|^TAkS/);
    assert.match(shown.epoch, /^\d+ \/ \d+$/);
    assert.ok(Number.isFinite(shown.left) && shown.left >= 0, `time left ${shown.left}`);
    await page.click('#audit-cancel');
    assert.equal(await page.evaluate(() => document.getElementById('audit-status').dataset.value), 'cancelled');
    assert.equal(await page.evaluate(() => document.getElementById('audit-results').hidden), true);
    // Start again, with the default epochs: a fresh worker audits the same files to the end.
    await page.fill('#audit-probe-epochs', '');
    assert.equal(await startAndFinish(page, 240_000), 'done');
    assert.equal(await page.evaluate(() => document.querySelectorAll('#audit-table tbody tr').length), truth.size);
  } finally {
    await browser.close();
  }
});

// Audit a folder (or a CSV table) on the audit page in headless chromium, the way a
// person would, and report what it cost. Run by hand (not a test):
//
//   node tests/web/measure-audit.mjs DATA OUT_DIR [--backend cpu|auto] [--model mlp]
//
// Writes OUT_DIR/suspects.csv (the page's download) and prints one JSON line: the wall
// seconds from Start to done, the page's summary (network, samples, issues), the peak
// resident memory of chromium's largest process (the tab and its worker live in one
// renderer), and the requests the page made after it had loaded (none, or the audit
// sent something). Needs web/pkg (scripts/build-web.sh) and chromium (CHROMIUM).
import { readFile, writeFile, mkdir, stat } from 'node:fs/promises';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serveRepository } from './serve.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : fallback;
};
const backend = flag('--backend', 'cpu');
const model = flag('--model', '');
const [data, out] = args;
if (!data || !out) {
  console.error('usage: node tests/web/measure-audit.mjs DATA OUT_DIR [--backend cpu|auto] [--model mlp]');
  process.exit(2);
}

/** Resident KB of each chromium process, largest first. */
function chromiumRss() {
  const sizes = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (!/^Name:\s*chrom/m.test(status)) continue;
      const rss = status.match(/^VmRSS:\s*(\d+)/m);
      if (rss) sizes.push(Number(rss[1]));
    } catch { /* gone */ }
  }
  return sizes.sort((a, b) => b - a);
}

const server = await serveRepository();
const { origin } = server;
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--no-first-run', '--disable-background-networking', ...(backend === 'cpu' ? [] : ['--enable-unsafe-webgpu'])],
});
let peak = 0;
const sampler = setInterval(() => { peak = Math.max(peak, chromiumRss()[0] || 0); }, 200);
try {
  const page = await browser.newPage({ acceptDownloads: true });
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(`${origin}/audit.html`);
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60_000 });
  const loaded = requests.length;
  await page.selectOption('#audit-backend-choice', backend);
  if (model) await page.selectOption('#audit-model', model);
  const isTable = (await stat(data)).isFile();
  await page.setInputFiles(isTable ? '#audit-csv' : '#audit-input', data);
  const started = Date.now();
  // When each phase was first shown, in seconds after Start.
  const phases = {};
  const watcher = setInterval(async () => {
    try {
      const text = (await page.textContent('#audit-phase')).replace(/\s*\(.*|\d.*$/, '').trim();
      if (text && !(text in phases)) phases[text] = (Date.now() - started) / 1000;
    } catch { /* closing */ }
  }, 250);
  await page.click('#audit-start');
  await page.waitForFunction(() => /^(done|error)/.test(document.getElementById('audit-status').dataset.value), null, { timeout: 3_600_000, polling: 1000 });
  const seconds = (Date.now() - started) / 1000;
  clearInterval(watcher);
  const status = await page.evaluate(() => document.getElementById('audit-status').dataset.value);
  if (status !== 'done') throw new Error(status);
  const summary = await page.evaluate(() => ({ ...document.getElementById('audit-summary').dataset, text: document.getElementById('audit-summary').textContent, skipped: document.querySelectorAll('#audit-skipped li').length }));
  const download = page.waitForEvent('download');
  await page.click('#audit-download');
  await mkdir(out, { recursive: true });
  await writeFile(join(out, 'suspects.csv'), await readFile(await (await download).path()));
  const sent = requests.slice(loaded).filter((u) => !u.startsWith('blob:') && !u.startsWith('data:'));
  console.log(JSON.stringify({ data, backend, seconds, peak_rss_mb: Math.round(peak / 1024), requests_after_load: sent.length, phases, summary }));
} finally {
  clearInterval(sampler);
  await browser.close();
  server.close();
}

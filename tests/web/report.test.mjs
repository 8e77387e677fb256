// report.html of `taks audit`, opened in Debian's headless chromium from disk, as a
// person opens it: every thumbnail must decode, the tables and the histogram must
// agree with summary.json and suspects.csv. The audit runs on 1,000 bundled digits with
// known injected noise, so the page also carries the truth line.
//
// Environment: TAKS_BIN (the taks binary; scripts/test-web.sh sets it), CHROMIUM
// (default /usr/bin/chromium).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TAKS = process.env.TAKS_BIN;

test('report.html shows the audit it summarises', async () => {
  assert.ok(TAKS && existsSync(TAKS), `TAKS_BIN=${TAKS} is not the taks binary`);
  const out = join(mkdtempSync(join(tmpdir(), 'taks-report-')), 'audit');
  execFileSync(TAKS, ['audit', '--dataset', 'mnist-digits', '--train-limit', '1000', '--noise', 'asymmetric',
    '--noise-rate', '0.4', '--epochs', '4', '--probe-epochs', '2', '--device', 'cpu', '--out', out, '-q']);
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
  const suspects = readFileSync(join(out, 'suspects.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox'] });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url().slice(0, 80)}`));
    await page.goto(pathToFileURL(join(out, 'report.html')).href);
    await page.waitForLoadState('load');
    const shown = await page.evaluate(() => {
      const rows = [...document.querySelectorAll('#suspects tr.suspect')];
      return {
        issues: Number(document.getElementById('issue-count').textContent),
        truth: document.getElementById('truth')?.textContent ?? '',
        classRows: document.querySelectorAll('#per-class tr').length - 1,
        bars: document.querySelectorAll('#histogram rect').length,
        barSamples: [...document.querySelectorAll('#histogram rect title')]
          .map((t) => Number(t.textContent.split(' ')[0])).reduce((a, b) => a + b, 0),
        rows: rows.map((r) => [...r.cells].map((c) => c.textContent)),
        images: rows.map((r) => {
          const img = r.querySelector('img');
          return img ? [img.complete, img.naturalWidth, img.naturalHeight] : null;
        }),
      };
    });
    assert.deepEqual(errors, []);
    assert.equal(shown.issues, summary.label_issues);
    assert.ok(shown.truth.includes('F1'), shown.truth);
    assert.equal(shown.classRows, 10);
    assert.equal(shown.bars, 40);
    assert.equal(shown.barSamples, summary.n, 'the histogram counts every sample once');
    assert.equal(shown.rows.length, 200);
    // The most suspect rows, in suspects.csv's order, with its labels and verdicts.
    shown.rows.forEach((cells, i) => {
      const [id, given, suggested, , quality, issue] = suspects[i];
      assert.deepEqual([cells[2], cells[3], cells[4], cells[7]], [id, given, suggested, issue === 'true' ? 'yes' : 'no']);
      assert.ok(Math.abs(Number(cells[6]) - Number(quality)) <= 0.0006, `${cells[6]} vs ${quality}`);
    });
    // Every thumbnail is a decoded 28x28 digit.
    for (const img of shown.images) assert.deepEqual(img, [true, 28, 28]);
  } finally {
    await browser.close();
    rmSync(join(out, '..'), { recursive: true, force: true });
  }
});

// The audit page in Firefox, driven by hand over WebDriver BiDi (not a test: CI has no
// Firefox). playwright-core 1.65's Firefox path needs BiDi commands Debian's
// firefox-esr lacks (`emulation.setMediaFeaturesOverride`), so this speaks the
// protocol itself: it opens audit.html, picks DATA with `input.setFiles`, starts the
// audit on the CPU and waits for the verdict. Firefox ESR 153's `input.setFiles`
// refuses a folder ("File error: Is directory"), so for a folder this sets its files
// one by one and gives each the `webkitRelativePath` the folder picker would have: the
// picker itself is the one part a script cannot drive there.
//
//   node --experimental-websocket tests/web/firefox-audit.mjs DATA [FIREFOX]
//
// Prints one JSON line: the status, the summary the page shows, the files it left out,
// the rows and the issues (and DATA's suspects as `id,is_label_issue` on stderr, for
// scoring). Needs web/pkg (scripts/build-web.sh).
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { statSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { serveRepository } from './serve.mjs';

const [data, firefoxPath = '/usr/bin/firefox-esr'] = process.argv.slice(2);
if (!data) {
  console.error('usage: node --experimental-websocket tests/web/firefox-audit.mjs DATA [FIREFOX]');
  process.exit(2);
}

const server = await serveRepository();
const { origin } = server;

const profile = await mkdtemp(join(tmpdir(), 'taks-firefox-'));
const firefox = spawn(firefoxPath, ['--headless', '--no-remote', '--profile', profile, '--remote-debugging-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
const endpoint = await new Promise((ok, fail) => {
  let log = '';
  const look = (chunk) => {
    log += chunk;
    const m = log.match(/WebDriver BiDi listening on (ws:\/\/\S+)/);
    if (m) ok(m[1]);
  };
  firefox.stdout.on('data', look);
  firefox.stderr.on('data', look);
  firefox.on('exit', () => fail(new Error(`firefox exited: ${log}`)));
  setTimeout(() => fail(new Error(`no BiDi endpoint: ${log}`)), 60_000);
});

const socket = new WebSocket(`${endpoint}/session`);
await new Promise((ok, fail) => { socket.onopen = ok; socket.onerror = fail; });
let next = 0;
const waiting = new Map();
socket.onmessage = ({ data: text }) => {
  const message = JSON.parse(text);
  if (message.id !== undefined && waiting.has(message.id)) {
    const { ok, fail } = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.type === 'error') fail(new Error(`${message.error}: ${message.message}`)); else ok(message.result);
  }
};
const send = (method, params) => new Promise((ok, fail) => {
  const id = ++next;
  waiting.set(id, { ok, fail });
  socket.send(JSON.stringify({ id, method, params }));
});

try {
  await send('session.new', { capabilities: {} });
  const { contexts } = await send('browsingContext.getTree', {});
  const context = contexts[0].context;
  await send('browsingContext.navigate', { context, url: `${origin}/audit.html`, wait: 'complete' });
  const evaluate = async (expression) => {
    const { result } = await send('script.evaluate', { expression, target: { context }, awaitPromise: true });
    return result.value;
  };
  const until = async (expression, seconds) => {
    for (let t = 0; t < seconds * 2; t++) {
      if (await evaluate(expression)) return;
      await new Promise((ok) => setTimeout(ok, 500));
    }
    throw new Error(`timed out waiting for ${expression}`);
  };
  await until("document.body.dataset.ready === '1'", 120);
  const isTable = statSync(data).isFile();
  const { result: input } = await send('script.evaluate', {
    expression: `document.getElementById('${isTable ? 'audit-csv' : 'audit-input'}')`, target: { context }, awaitPromise: false,
  });
  if (isTable) {
    await send('input.setFiles', { context, element: { sharedId: input.sharedId }, files: [resolve(data)] });
  } else {
    // Every file under DATA, as the picker lists them: "<folder name>/<path inside>".
    const walk = (dir, prefix) => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory()
      ? walk(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
    const top = resolve(data).split('/').pop();
    const relative = walk(resolve(data), '');
    await send('input.setFiles', { context, element: { sharedId: input.sharedId }, files: relative.map((r) => join(resolve(data), r)) });
    const named = await evaluate(`(() => {
      const paths = ${JSON.stringify(relative.map((r) => `${top}/${r}`))};
      const files = document.getElementById('audit-input').files;
      if (files.length !== paths.length) return 'count ' + files.length;
      for (let i = 0; i < files.length; i++) {
        if (!paths[i].endsWith('/' + files[i].name)) return 'order at ' + i;
        Object.defineProperty(files[i], 'webkitRelativePath', { value: paths[i] });
      }
      return files[0].webkitRelativePath;
    })()`);
    if (!named.startsWith(top)) throw new Error(`could not name the files: ${named}`);
  }
  await evaluate("document.getElementById('audit-backend-choice').value = 'cpu'");
  const started = Date.now();
  await evaluate("document.getElementById('audit-start').click()");
  await until("/^(done|error)/.test(document.getElementById('audit-status').dataset.value)", 1800);
  const state = JSON.parse(await evaluate(`JSON.stringify({
    status: document.getElementById('audit-status').dataset.value,
    backend: document.getElementById('audit-backend').textContent,
    summary: document.getElementById('audit-summary').textContent,
    skipped: [...document.querySelectorAll('#audit-skipped li')].map((li) => li.textContent),
    rows: [...document.querySelectorAll('#audit-table tbody tr')].map((tr) => [tr.dataset.id, tr.dataset.issue]),
  })`));
  const { rows, ...rest } = state;
  console.log(JSON.stringify({ ...rest, seconds: (Date.now() - started) / 1000, rows: rows.length, issues: rows.filter((r) => r[1] === 'true').length, userAgent: await evaluate('navigator.userAgent') }));
  console.error(['id,is_label_issue', ...rows.map(([id, issue]) => `${id},${issue}`)].join('\n'));
} finally {
  socket.close();
  firefox.kill();
  server.close();
  await rm(profile, { recursive: true, force: true });
}

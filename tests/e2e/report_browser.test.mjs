// report.html and `compare --report` opened in headless Chromium:
// a real exported model is split with TGA (so the convergence curve exists)
// and compared across algorithms; each page must load without console
// errors, have its device and link lanes, a tooltip that hover fills, and
// the comparison's selector must switch the plan shown. A training step
// split over two devices must draw its "Pipeline step": a box per run of
// plan.json's order (and per update), forward and backward in different
// colours, a tooltip per box and a zoom of its own. With --microbatches
// auto, report.html draws the curve (a point and a table row per count
// tried, the chosen point's tooltip naming it), and `size --report` has a row
// per count and the answer. Screenshots go to
// AUTOPAR_ARTIFACTS_DIR (build/test-artifacts). Chromium is driven through
// chromedriver's W3C WebDriver HTTP interface with node's fetch: no npm
// package needed. Skipped, with a message, when chromium or chromedriver is
// not installed (Debian packages `chromium`, `chromium-driver`).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CLI, MODELS_DIR, autopar, tempDir } from './helpers.mjs';

const MODEL = 'googlenet';
const DEVICES = 4;
const ARTIFACTS = process.env.AUTOPAR_ARTIFACTS_DIR;

/** The first of `names` found on PATH (or given as an absolute path). */
function findExecutable(...names) {
  for (const name of names) {
    if (name.startsWith('/')) {
      if (existsSync(name)) return name;
      continue;
    }
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

// Debian's /usr/bin/chromium is a wrapper script; the binary is beside it.
const CHROMIUM = findExecutable('/usr/lib/chromium/chromium', 'chromium', 'chromium-browser', 'google-chrome');
const CHROMEDRIVER = findExecutable('chromedriver', '/usr/lib/chromium/chromedriver');

const skip = !CLI ? 'AUTOPAR_CLI not set (run through ctest)'
  : !MODELS_DIR ? 'AUTOPAR_MODELS_DIR not set'
    : !CHROMIUM ? 'chromium not installed (apt-get install chromium chromium-driver)'
      : !CHROMEDRIVER ? 'chromedriver not installed (apt-get install chromium-driver)'
        : false;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A chromedriver process and one headless Chromium session. */
class Browser {
  static async start(profileDir) {
    const port = await freePort();
    const driver = spawn(CHROMEDRIVER, [`--port=${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let driverErr = '';
    driver.stderr.on('data', (d) => { driverErr += d; });
    const browser = new Browser(`http://127.0.0.1:${port}`, driver);
    for (let i = 0; ; i++) {
      try {
        const status = await (await fetch(`${browser.base}/status`)).json();
        if (status.value?.ready) break;
      } catch { /* not listening yet */ }
      if (i > 100) throw new Error(`chromedriver did not start: ${driverErr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const session = await browser.call('POST', '/session', {
      capabilities: {
        alwaysMatch: {
          browserName: 'chrome',
          'goog:chromeOptions': {
            binary: CHROMIUM,
            args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
              '--disable-component-update', '--no-first-run', `--user-data-dir=${profileDir}`,
              '--window-size=1280,1000', '--hide-scrollbars'],
          },
          'goog:loggingPrefs': { browser: 'ALL' },
        },
      },
    });
    browser.session = `/session/${session.sessionId}`;
    return browser;
  }

  constructor(base, driver) {
    this.base = base;
    this.driver = driver;
    this.session = null;
  }

  async call(method, path, body) {
    const response = await fetch(this.base + path, {
      method,
      headers: { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60000),
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`${method} ${path}: ${JSON.stringify(json.value ?? json).slice(0, 2000)}`);
    return json.value;
  }

  open(file) { return this.call('POST', `${this.session}/url`, { url: pathToFileURL(file).href }); }

  /** Runs `fn` (a function's source, as a string body) in the page; returns its value. */
  run(body, ...args) { return this.call('POST', `${this.session}/execute/sync`, { script: body, args }); }

  resize(width, height) { return this.call('POST', `${this.session}/window/rect`, { width, height }); }

  /** The browser console since the last call. */
  logs() { return this.call('POST', `${this.session}/se/log`, { type: 'browser' }); }

  async screenshot(name) {
    if (!ARTIFACTS) return null;
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, name);
    writeFileSync(path, Buffer.from(await this.call('GET', `${this.session}/screenshot`), 'base64'));
    return path;
  }

  async stop() {
    try {
      if (this.session) await this.call('DELETE', this.session);
    } finally {
      this.driver.kill();
    }
  }
}

function assertNoSevere(logs, where) {
  const severe = logs.filter((e) => e.level === 'SEVERE');
  assert.deepEqual(severe, [], `${where}: console errors`);
}

// What the page shows: the visible plan's lanes, its boxes, tooltip state.
const INSPECT = `
  const plan = [...document.querySelectorAll('section.plan')].find((s) => !s.hidden);
  const labels = [...plan.querySelectorAll('.lanelabel')].map((l) => l.textContent);
  return {
    algorithm: plan.getAttribute('data-algorithm'),
    labels,
    lanes: plan.querySelectorAll('svg.gantt g.lane').length,
    boxes: plan.querySelectorAll('svg.gantt rect').length,
    curvePoints: plan.querySelectorAll('svg.curve circle').length,
    tip: !!document.getElementById('tip'),
    visiblePlans: [...document.querySelectorAll('section.plan')].filter((s) => !s.hidden).length,
  };`;

// Hovers the visible plan's widest box; returns the tooltip's state.
const HOVER = `
  const plan = [...document.querySelectorAll('section.plan')].find((s) => !s.hidden);
  const rects = [...plan.querySelectorAll('svg.gantt rect')];
  const rect = rects.reduce((a, b) => (+b.getAttribute('width') > +a.getAttribute('width') ? b : a));
  const box = rect.getBoundingClientRect();
  rect.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: box.x + 1, clientY: box.y + 1 }));
  const tip = document.getElementById('tip');
  return { hidden: tip.hidden, text: tip.textContent, left: tip.style.left };`;

// Zooms the visible timeline in once; returns its width before and after.
const ZOOM = `
  const plan = [...document.querySelectorAll('section.plan')].find((s) => !s.hidden);
  const zoomed = plan.querySelector('.zoomed');
  const before = zoomed.getBoundingClientRect().width;
  plan.querySelector('.zin').click();
  const after = zoomed.getBoundingClientRect().width;
  plan.querySelector('.zreset').click();
  return { before, after };`;

function checkLanes(page, devices, where) {
  for (let d = 0; d < devices; d++) {
    assert.ok(page.labels.some((l) => l.startsWith(`device ${d} `)), `${where}: no lane for device ${d}: ${page.labels}`);
  }
  assert.ok(page.labels.some((l) => l.startsWith('link ')), `${where}: no link lane: ${page.labels}`);
  assert.equal(page.lanes, page.labels.length, `${where}: a drawn lane per label`);
  assert.ok(page.boxes > 0, `${where}: no boxes`);
  assert.equal(page.tip, true, `${where}: no tooltip element`);
}

test('report.html and compare --report render in Chromium without errors', { skip, timeout: 600000 }, async (t) => {
  const work = tempDir('e2e-report');
  const model = join(MODELS_DIR, `${MODEL}.onnx`);
  assert.ok(existsSync(model), `${model} missing: the exported_models fixture should have written it`);
  const common = ['--devices', String(DEVICES), '--microbatches', '4', '--max-generations', '30', '--quiet'];
  const out = join(work, 'split');
  const split = autopar([model, '-o', out, '--algo', 'tga', ...common]);
  assert.equal(split.code, 0, split.stderr);
  const comparison = join(work, 'compare.html');
  const compare = autopar(['compare', model, '--algos', 'sgp,tga,m-etf,pipeline-dp', '--format', 'json',
    '--report', comparison, ...common]);
  assert.equal(compare.code, 0, compare.stderr);
  const best = JSON.parse(compare.stdout).best;

  const profile = mkdtempSync(join(tmpdir(), 'autopar-chromium-'));
  const browser = await Browser.start(profile);
  try {
    // (a) The split's report.
    await browser.open(join(out, 'report.html'));
    const page = await browser.run(INSPECT);
    checkLanes(page, DEVICES, 'report.html');
    assert.equal(page.algorithm, 'tga');
    assert.ok(page.curvePoints >= 2, `convergence curve has ${page.curvePoints} points`);
    const hover = await browser.run(HOVER);
    assert.equal(hover.hidden, false, 'hover shows the tooltip');
    assert.match(hover.text, /µs/, 'the tooltip says how long');
    assert.notEqual(hover.left, '', 'the tooltip is placed at the pointer');
    await browser.run(`document.getElementById('tip').hidden = true;`);
    const zoom = await browser.run(ZOOM);
    assert.ok(Math.abs(zoom.after - 2 * zoom.before) < 2, `zoom in doubles the timeline: ${JSON.stringify(zoom)}`);
    // Tall enough for the summary, curve, timeline and device bars (the
    // README's docs/report.png is this screenshot).
    await browser.resize(1280, 1250);
    await browser.screenshot('report.png');
    await browser.resize(1280, 1000);
    assertNoSevere(await browser.logs(), 'report.html');

    // (b) The comparison: the best plan first, the selector switches.
    await browser.open(comparison);
    const first = await browser.run(INSPECT);
    assert.equal(first.algorithm, best);
    assert.equal(first.visiblePlans, 1);
    checkLanes(first, DEVICES, `compare, ${best}`);
    await browser.screenshot('compare.png');
    const options = await browser.run(`return [...document.getElementById('algo').options].map((o) => o.value);`);
    assert.deepEqual(options, ['sgp', 'tga', 'm-etf', 'pipeline-dp']);
    const other = best === 'sgp' ? 'm-etf' : 'sgp';
    await browser.run(`const s = document.getElementById('algo'); s.value = arguments[0];
      s.dispatchEvent(new Event('change'));`, other);
    const switched = await browser.run(INSPECT);
    assert.equal(switched.algorithm, other);
    assert.equal(switched.visiblePlans, 1);
    assert.ok(switched.lanes > 0 && switched.boxes > 0, `compare, ${other}: lanes drawn`);
    assert.equal((await browser.run(HOVER)).hidden, false, `compare, ${other}: hover shows the tooltip`);
    await browser.screenshot('compare_switched.png');
    assertNoSevere(await browser.logs(), 'compare --report');
    t.diagnostic(`report.html: ${page.labels.length} lanes, ${page.boxes} boxes, ${page.curvePoints} curve points; ` +
      `compare: ${best} -> ${other}; screenshots in ${ARTIFACTS ?? '(no AUTOPAR_ARTIFACTS_DIR)'}`);
  } finally {
    await browser.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});

// The pipeline step section: its lanes, boxes per kind and their colours.
const INSPECT_PIPELINE = `
  const section = document.querySelector('section.pipelinestep');
  if (!section) return null;
  const runs = [...section.querySelectorAll('.pipegantt .run')];
  const colour = (kind) => {
    const box = section.querySelector('.pipegantt .run.' + kind);
    return box ? getComputedStyle(box).backgroundColor : null;
  };
  return {
    lanes: section.querySelectorAll('.pipegantt .plane').length,
    labels: [...section.querySelectorAll('.pipelabel')].map((l) => l.textContent),
    runs: runs.length,
    fwd: runs.filter((r) => r.classList.contains('fwd')).length,
    bwd: runs.filter((r) => r.classList.contains('bwd')).length,
    upd: runs.filter((r) => r.classList.contains('upd')).length,
    colours: { fwd: colour('fwd'), bwd: colour('bwd'), upd: colour('upd') },
    beforeTimeline: !!(section.compareDocumentPosition(document.querySelector('svg.gantt'))
      & Node.DOCUMENT_POSITION_FOLLOWING),
  };`;

// Hovers the widest backward box of the pipeline step; returns the tooltip.
const HOVER_PIPELINE = `
  const boxes = [...document.querySelectorAll('.pipegantt .run.bwd')];
  const run = boxes.reduce((a, b) => (b.getBoundingClientRect().width > a.getBoundingClientRect().width ? b : a));
  const box = run.getBoundingClientRect();
  run.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: box.x + 1, clientY: box.y + 1 }));
  const tip = document.getElementById('tip');
  return { hidden: tip.hidden, text: tip.textContent, label: run.textContent };`;

const ZOOM_PIPELINE = `
  const t = document.querySelector('section.pipelinestep .timeline');
  const zoomed = t.querySelector('.zoomed');
  const before = zoomed.getBoundingClientRect().width;
  t.querySelector('.zin').click();
  const after = zoomed.getBoundingClientRect().width;
  t.querySelector('.zreset').click();
  return { before, after };`;

test('report.html of a split training step draws the pipeline step', { skip, timeout: 600000 }, async (t) => {
  const work = tempDir('e2e-report-training');
  const model = join(MODELS_DIR, 'squeezenet1_1.onnx');
  assert.ok(existsSync(model), `${model} missing: the exported_models fixture should have written it`);
  const info = autopar(['info', model, '--format', 'json']);
  assert.equal(info.code, 0, info.stderr);
  const output = JSON.parse(info.stdout).outputs[0].name;
  const out = join(work, 'train');
  const split = autopar([model, '-o', out, '--devices', '2', '--mode', 'training', '--loss', `cross-entropy:${output}`,
    '--microbatches', '4', '--schedule', '1f1b', '--quiet']);
  assert.equal(split.code, 0, split.stderr);
  const pipeline = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).training.pipeline;
  const runs = pipeline.order.reduce((n, d) => n + d.runs.length, 0);
  const updates = pipeline.stages.filter((s) => s.kind === 'update').length;

  const profile = mkdtempSync(join(tmpdir(), 'autopar-chromium-'));
  const browser = await Browser.start(profile);
  try {
    await browser.open(join(out, 'report.html'));
    const page = await browser.run(INSPECT_PIPELINE);
    assert.ok(page, 'no Pipeline step section');
    assert.equal(page.lanes, 2, `a lane per device: ${page.labels}`);
    assert.equal(page.runs, runs + updates, 'a box per run and per update');
    assert.equal(page.upd, updates);
    assert.ok(page.fwd > 0 && page.bwd > 0, JSON.stringify(page));
    assert.equal(page.fwd + page.bwd, runs);
    const { fwd, bwd, upd } = page.colours;
    assert.ok(fwd !== bwd && fwd !== upd && bwd !== upd, `kinds coloured apart: ${JSON.stringify(page.colours)}`);
    assert.ok(page.beforeTimeline, 'the pipeline step comes before the node-level timeline');
    const hover = await browser.run(HOVER_PIPELINE);
    assert.equal(hover.hidden, false, 'hover shows the tooltip');
    assert.match(hover.text, /^stage \d+ \(backward\), micro-batch \d+, start .*µs, duration .*µs$/);
    assert.match(hover.label, /^s\d+ B m\d+$/);
    await browser.run(`document.getElementById('tip').hidden = true;`);
    const zoom = await browser.run(ZOOM_PIPELINE);
    assert.ok(Math.abs(zoom.after - 2 * zoom.before) < 2, `zoom in doubles the pipeline timeline: ${JSON.stringify(zoom)}`);
    await browser.resize(1280, 1100);
    await browser.screenshot('report_training.png');
    assertNoSevere(await browser.logs(), 'report.html (training)');
    t.diagnostic(`pipeline step: ${page.runs} boxes (${page.fwd} forward, ${page.bwd} backward, ${page.upd} update) on ${page.lanes} lanes`);
  } finally {
    await browser.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});

// Hovers the chosen count's point of the time-per-sample chart; returns the
// charts, their points and the tooltip.
const HOVER_MICROBATCHES = `
  const charts = [...document.querySelectorAll('svg.curve.mb')];
  const points = charts[0].querySelectorAll('circle.pf, circle.pi');
  const chosen = [...points].find((c) => (c.querySelector('title')?.textContent ?? '').includes('(chosen)'));
  const box = chosen.getBoundingClientRect();
  chosen.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: box.x + 1, clientY: box.y + 1 }));
  const tip = document.getElementById('tip');
  return { charts: charts.length, points: points.length, rows: document.querySelectorAll('table.mbtable tr').length,
    hidden: tip.hidden, text: tip.textContent };`;

// --microbatches auto's curve in report.html, and size --report: both render
// without console errors, and hovering the chosen point names it.
test('the micro-batch curve and size --report render in Chromium', { skip, timeout: 600000 }, async (t) => {
  const work = tempDir('e2e-report-microbatches');
  const model = join(MODELS_DIR, `${MODEL}.onnx`);
  assert.ok(existsSync(model), `${model} missing: the exported_models fixture should have written it`);
  const out = join(work, 'auto');
  const split = autopar([model, '-o', out, '--devices', '2', '--microbatches', 'auto', '--max-microbatches', '8', '--quiet']);
  assert.equal(split.code, 0, split.stderr);
  const tried = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')).microbatches_search.tried.length;
  const sized = join(work, 'size.html');
  const size = autopar(['size', model, '--max-devices', '3', '--max-microbatches', '4', '--report', sized, '--quiet']);
  assert.equal(size.code, 0, size.stderr);

  const profile = mkdtempSync(join(tmpdir(), 'autopar-chromium-'));
  const browser = await Browser.start(profile);
  try {
    await browser.open(join(out, 'report.html'));
    const curve = await browser.run(HOVER_MICROBATCHES);
    assert.equal(curve.charts, 2, 'time per sample and peak memory');
    assert.equal(curve.points, tried, 'a point per count tried');
    assert.equal(curve.rows, tried + 1, 'a row per count tried');
    assert.equal(curve.hidden, false, 'hover shows the tooltip');
    assert.match(curve.text, /^M=\d+ \(chosen\): .*µs per sample/);
    await browser.screenshot('report_microbatches.png');
    assertNoSevere(await browser.logs(), 'report.html (--microbatches auto)');

    await browser.open(sized);
    const page = await browser.run(`return {
      rows: document.querySelectorAll('table.size tr').length,
      open: [...document.querySelectorAll('details.count')].filter((d) => d.open).length,
      answer: document.querySelector('p.answer')?.textContent ?? '' };`);
    assert.equal(page.rows, 4, 'a header and a row per count');
    assert.equal(page.open, 1, "the answer's curve unfolded");
    assert.match(page.answer, /^answer: /);
    await browser.screenshot('size.png');
    assertNoSevere(await browser.logs(), 'size --report');
    t.diagnostic(`micro-batch curve: ${tried} counts tried; size: ${page.answer}`);
  } finally {
    await browser.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});

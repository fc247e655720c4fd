'use strict';
// `hotscope report` and `hotscope flame` in headless Chromium. A test program with known frames
// (tests/cli/workload_program.cpp, heap profiler linked in) writes its reports; then:
// - flame.svg (`hotscope flame trace.folded`) parses as SVG, has one rectangle per frame of the
//   folded stacks' tree, each as wide as its share (±1 % of the width), the program's frames
//   among them; a click zooms (the frame fills the width, its callees scale, other threads'
//   frames hide, Reset Zoom restores), Search highlights the matching frames and shows their
//   share, hovering shows name, time and share;
// - heap.svg (`hotscope flame heap.json`): parses, its root is the profile's total bytes, every
//   frame holds its callees, the leaking site is there;
// - report.html opens with no console error and asks nothing of the network; its tables sort
//   on a click; its flame graph zooms and searches as the standalone one; per-thread tables and
//   the heap sites are there.
//
// usage: node report_test.js --hotscope PATH --program PATH --node-dir DIR --chromium PATH
//          --work DIR
//   --hotscope  the hotscope command
//   --program   workload_program (tests/cli)
//   --node-dir  the directory where `npm ci` installed package.json (holds node_modules/)
//   --chromium  the browser binary (/usr/bin/chromium)
//   --work      scratch directory: the reports, screenshots/
//
// The files are served from a local static server on 127.0.0.1; the browser may reach nothing
// else (harness.js).

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const {
  parseArgs, sleep, run, nodeRequireFrom, startServer, launchBrowser, reporter,
} = require('./harness');

const RUN_LIMIT_MS = 80000; // CTest's TIMEOUT is above this, so our own cleanup runs first
const STEP_LIMIT_MS = 10000;
const HIGHLIGHT = 'rgb(230,0,230)'; // flame.js's search colour
const PROGRAM_FRAMES = ['main', 'worker', 'handle_request', 'steady_parse', 'regressed', 'steady_io',
  'leaky_site', 'cache_site', 'background_task'];

function runChecked(command, argv, env) {
  const r = spawnSync(command, argv, { timeout: 30000, encoding: 'utf8', env: { ...process.env, ...env } });
  if (r.error) throw new Error(`running ${command}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} exited with ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

// The tree flame graphs draw from folded stacks: path ("all;p;main") -> inclusive value.
function foldedTree(text) {
  const values = new Map([['all', 0]]);
  for (const line of text.split('\n')) {
    const m = /^(.*) (\d+)$/.exec(line);
    if (!m || line.startsWith('#')) continue;
    const count = Number(m[2]);
    let key = 'all';
    values.set(key, values.get(key) + count);
    for (const frame of m[1].split(';')) {
      key += `;${frame}`;
      values.set(key, (values.get(key) || 0) + count);
    }
  }
  return values;
}

// In the page: the frames of the index-th flame graph, with each rectangle's geometry.
function readFrames(index) {
  const svg = document.querySelectorAll('svg.hotscope-flame')[index];
  return {
    width: Number(svg.dataset.width),
    margin: Number(svg.dataset.margin),
    rects: svg.querySelectorAll('rect').length,
    frames: [...svg.querySelectorAll('g.frame')].map((g) => {
      const r = g.querySelector('rect');
      return {
        name: g.dataset.name, start: Number(g.dataset.start), value: Number(g.dataset.value),
        depth: Number(g.dataset.depth), x: Number(r.getAttribute('x')), w: Number(r.getAttribute('width')),
        fill: r.getAttribute('fill'), hidden: g.classList.contains('hf-hidden'),
        ancestor: g.classList.contains('hf-ancestor'), title: g.querySelector('title').textContent,
      };
    }),
    matched: svg.querySelector('.hf-matched').textContent,
    details: svg.querySelector('.hf-details').textContent,
    resetHidden: svg.querySelector('.hf-reset-zoom').classList.contains('hf-hidden'),
  };
}

// Each frame's path ("all;p;main"), from its depth and range: its parent is the frame one level
// down whose range holds it.
function withPaths(frames) {
  const byDepth = [...frames].sort((a, b) => a.depth - b.depth);
  for (const f of byDepth) {
    if (f.depth === 0) {
      f.path = f.name;
      continue;
    }
    const parent = byDepth.find((p) => p.depth === f.depth - 1 && p.start <= f.start && p.start + p.value >= f.start + f.value && p.path);
    f.path = parent ? `${parent.path};${f.name}` : `?;${f.name}`;
  }
  return frames;
}

// Problems with the drawn frames against the folded stacks' tree.
function treeProblems(drawn, expected) {
  const problems = [];
  const frames = withPaths(drawn.frames);
  if (drawn.rects !== frames.length + 1) problems.push(`${drawn.rects} rectangles for ${frames.length} frames (plus the background)`);
  if (frames.length !== expected.size) problems.push(`${frames.length} frames drawn, the folded stacks make ${expected.size}`);
  const total = expected.get('all');
  for (const f of frames) {
    const value = expected.get(f.path);
    if (value === undefined) {
      problems.push(`frame ${f.path} is not in the folded stacks`);
      continue;
    }
    if (value !== f.value) problems.push(`${f.path}: value ${f.value}, folded stacks say ${value}`);
    const share = (100 * f.w) / drawn.width;
    const want = (100 * value) / total;
    if (Math.abs(share - want) > 1) problems.push(`${f.path}: ${share.toFixed(2)}% of the width, expected ${want.toFixed(2)}%`);
  }
  return problems;
}

// Zooms into `name` and back in the index-th graph: the frame must fill the width, its callees
// scale with it, frames outside it hide (its callers stay), and Reset Zoom restores every frame.
async function zoomProblems(page, index, name) {
  const problems = [];
  const before = await page.evaluate(readFrames, index);
  const target = before.frames.find((f) => f.name === name);
  if (!target) return [`no frame ${name} to zoom into`];
  await page.locator('svg.hotscope-flame').nth(index).locator(`g.frame[data-name="${name}"] rect`).first()
    .click({ force: true });
  const after = await page.evaluate(readFrames, index);
  const zoomed = after.frames.find((f) => f.name === name && f.start === target.start);
  if (Math.abs(zoomed.w - after.width) > 0.5 || Math.abs(zoomed.x - after.margin) > 0.5) {
    problems.push(`zoomed ${name} spans x=${zoomed.x} width ${zoomed.w}, expected x=${after.margin} width ${after.width}`);
  }
  let inside = 0;
  for (const f of after.frames) {
    const within = f.depth > target.depth && f.start >= target.start && f.start + f.value <= target.start + target.value;
    const below = f.depth < target.depth && f.start <= target.start && f.start + f.value >= target.start + target.value;
    if (within) {
      inside++;
      const want = (f.value / target.value) * after.width;
      if (f.hidden || Math.abs(f.w - want) > 0.5) problems.push(`after the zoom, ${f.name} is ${f.hidden ? 'hidden' : `${f.w} wide`}, expected ${want.toFixed(2)}`);
    } else if (below) {
      if (f.hidden || !f.ancestor) problems.push(`after the zoom, caller ${f.name} is not shown faded`);
    } else if (f !== zoomed && !(f.name === name && f.start === target.start) && !f.hidden) {
      problems.push(`after the zoom, ${f.name} (outside ${name}) is still shown`);
    }
  }
  if (after.resetHidden) problems.push('after the zoom, Reset Zoom is not shown');
  await page.locator('svg.hotscope-flame').nth(index).locator('.hf-reset-zoom').click();
  const reset = await page.evaluate(readFrames, index);
  for (let i = 0; i < reset.frames.length; i++) {
    const a = before.frames[i];
    const b = reset.frames[i];
    if (b.hidden || b.ancestor || Math.abs(a.w - b.w) > 0.01 || Math.abs(a.x - b.x) > 0.01) {
      problems.push(`after Reset Zoom, ${b.name} is at x=${b.x} width ${b.w}${b.hidden ? ' (hidden)' : ''}, was x=${a.x} width ${a.w}`);
      break;
    }
  }
  if (!reset.resetHidden) problems.push('after Reset Zoom, the button is still shown');
  return { problems, inside };
}

// Searches `term` through the Search button's prompt; the frames whose name contains it turn the
// highlight colour, and the matched share (their union, from the folded stacks) is shown.
async function searchProblems(page, index, term, expected) {
  const problems = [];
  page.once('dialog', (d) => d.accept(term).catch(() => {}));
  await page.locator('svg.hotscope-flame').nth(index).locator('.hf-search').click();
  const deadline = Date.now() + STEP_LIMIT_MS;
  let s = await page.evaluate(readFrames, index);
  while (!s.matched.startsWith('Matched:') && Date.now() < deadline) {
    await sleep(50);
    s = await page.evaluate(readFrames, index);
  }
  let matchedValue = 0;
  for (const [key, value] of expected) {
    const frames = key.split(';');
    if (frames[frames.length - 1].includes(term) && !frames.slice(0, -1).some((f) => f.includes(term))) matchedValue += value;
  }
  const want = `Matched: ${((100 * matchedValue) / expected.get('all')).toFixed(2)}%`;
  if (!s.matched.startsWith(want)) problems.push(`search "${term}" shows "${s.matched}", expected "${want} ..."`);
  for (const f of s.frames) {
    if ((f.fill === HIGHLIGHT) !== f.name.includes(term)) problems.push(`search "${term}": ${f.name} is ${f.fill}`);
  }
  await page.locator('svg.hotscope-flame').nth(index).locator('.hf-search').click(); // Reset Search
  const cleared = await page.evaluate(readFrames, index);
  if (cleared.matched !== '' || cleared.frames.some((f) => f.fill === HIGHLIGHT)) problems.push('Reset Search left highlights');
  return problems;
}

// Hovering `name` shows "name (time, share%)" at the bottom, as its tooltip (<title>) says.
async function hoverProblems(page, index, name, expected) {
  await page.locator('svg.hotscope-flame').nth(index).locator(`g.frame[data-name="${name}"] rect`).first().hover({ force: true });
  const s = await page.evaluate(readFrames, index);
  const f = s.frames.find((x) => x.name === name);
  const key = [...expected.keys()].find((k) => k.endsWith(`;${name}`));
  const share = ((100 * expected.get(key)) / expected.get('all')).toFixed(2);
  const problems = [];
  if (s.details !== f.title) problems.push(`hovering ${name} shows "${s.details}", its tooltip says "${f.title}"`);
  if (!new RegExp(`^${name} \\([\\d.]+ (ns|µs|ms|s), ${share}%\\)$`).test(f.title)) problems.push(`${name}'s tooltip "${f.title}" does not give its time and ${share}%`);
  return problems;
}

async function openPage(context, url, shot) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_LIMIT_MS);
  const seen = { errors: [] };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') seen.errors.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => seen.errors.push(`page error: ${(e && e.message) || e}`));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.errors.push(`${r.url()}: HTTP ${r.status()}`);
  });
  await page.goto(url, { waitUntil: 'load', timeout: STEP_LIMIT_MS });
  return { page, seen, shot };
}

async function closePage({ page, shot }) {
  await page.screenshot({ path: shot, fullPage: false, timeout: STEP_LIMIT_MS }).catch(() => {});
  await page.close().catch(() => {});
}

async function checkFlameSvg(context, url, expected, shot) {
  const p = await openPage(context, url, shot);
  const problems = [];
  try {
    const doc = await p.page.evaluate(() => ({ root: document.documentElement.localName, parserError: document.getElementsByTagName('parsererror').length }));
    if (doc.root !== 'svg' || doc.parserError) return [`the file does not parse as SVG (root <${doc.root}>, ${doc.parserError} parser errors)`];
    const drawn = await p.page.evaluate(readFrames, 0);
    problems.push(...treeProblems(drawn, expected));
    for (const name of PROGRAM_FRAMES) {
      if (!drawn.frames.some((f) => f.name === name)) problems.push(`no frame ${name}`);
    }
    const zoom = await zoomProblems(p.page, 0, 'handle_request');
    problems.push(...zoom.problems);
    if (zoom.inside < 5) problems.push(`zooming into handle_request kept ${zoom.inside} callees, expected its 5`);
    problems.push(...(await searchProblems(p.page, 0, 'steady_', expected)));
    problems.push(...(await hoverProblems(p.page, 0, 'regressed', expected)));
    problems.push(...p.seen.errors);
  } finally {
    await closePage(p);
  }
  return problems;
}

async function checkHeapSvg(context, url, heap, shot) {
  const p = await openPage(context, url, shot);
  const problems = [];
  try {
    const doc = await p.page.evaluate(() => document.documentElement.localName);
    if (doc !== 'svg') return [`the file does not parse as SVG (root <${doc}>)`];
    const drawn = await p.page.evaluate(readFrames, 0);
    const total = heap.pps.reduce((a, pp) => a + pp.tb, 0);
    const frames = withPaths(drawn.frames);
    if (drawn.rects !== frames.length + 1) problems.push(`${drawn.rects} rectangles for ${frames.length} frames`);
    if (frames[0].value !== total) problems.push(`root is ${frames[0].value} bytes, the profile's total is ${total}`);
    for (const f of frames) {
      const children = frames.filter((c) => c.path === `${f.path};${c.name}`);
      const sum = children.reduce((a, c) => a + c.value, 0);
      if (sum > f.value) problems.push(`${f.path}: its callees hold ${sum} bytes, more than its ${f.value}`);
      if (Math.abs((100 * f.w) / drawn.width - (100 * f.value) / total) > 1) problems.push(`${f.path}: width off its share`);
    }
    if (!frames.some((f) => f.name.includes('leaky_site'))) problems.push('no leaky_site frame');
    problems.push(...p.seen.errors);
  } finally {
    await closePage(p);
  }
  return problems;
}

// The function table's rows, in order: name and the Calls cell's value.
function tableRows(id) {
  return [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => ({
    name: tr.cells[0].dataset.value, calls: Number(tr.cells[1].dataset.value),
  }));
}

async function checkReport(context, url, stats, expected, shot) {
  const p = await openPage(context, url, shot);
  const problems = [];
  try {
    const rows = await p.page.evaluate(tableRows, 'functions-table');
    const names = stats.functions.map((f) => f.name);
    if (JSON.stringify(rows.map((r) => r.name)) !== JSON.stringify(names)) problems.push(`the function table lists ${rows.map((r) => r.name)}, stats.json ${names}`);
    // Sorting: Calls largest first, then smallest first; Function by name.
    const headings = p.page.locator('#functions-table thead th');
    await headings.nth(1).click();
    const down = await p.page.evaluate(tableRows, 'functions-table');
    if (down.some((r, i) => i > 0 && down[i - 1].calls < r.calls)) problems.push(`Calls sorted: ${down.map((r) => r.calls)}`);
    await headings.nth(1).click();
    const up = await p.page.evaluate(tableRows, 'functions-table');
    if (up.some((r, i) => i > 0 && up[i - 1].calls > r.calls)) problems.push(`Calls sorted again: ${up.map((r) => r.calls)}`);
    await headings.nth(0).click();
    const byName = await p.page.evaluate(tableRows, 'functions-table');
    const sortedNames = [...names].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0));
    if (JSON.stringify(byName.map((r) => r.name)) !== JSON.stringify(sortedNames)) problems.push(`Function sorted: ${byName.map((r) => r.name)}`);
    // The flame graph in the page.
    problems.push(...treeProblems(await p.page.evaluate(readFrames, 0), expected));
    problems.push(...(await zoomProblems(p.page, 0, 'handle_request')).problems);
    problems.push(...(await searchProblems(p.page, 0, 'regressed', expected)));
    // Threads and heap sites.
    const sections = await p.page.evaluate(() => ({
      threads: [...document.querySelectorAll('#threads-table tbody tr')].map((tr) => tr.cells[0].dataset.value),
      perThread: [...document.querySelectorAll('#threads table.functions')].map((t) => t.tBodies[0].rows.length),
      heapRows: [...document.querySelectorAll('#heap-table tbody tr')].map((tr) => tr.cells[0].dataset.value),
      graphs: document.querySelectorAll('svg.hotscope-flame').length,
    }));
    for (const name of ['main', 'worker']) if (!sections.threads.includes(name)) problems.push(`no thread ${name} in ${sections.threads}`);
    if (sections.perThread.length !== stats.threads.length || sections.perThread.some((n) => n === 0)) problems.push(`per-thread tables: ${sections.perThread}`);
    if (!sections.heapRows.some((n) => n.includes('leaky_site'))) problems.push(`heap sites: ${sections.heapRows}`);
    if (sections.graphs !== 2) problems.push(`${sections.graphs} flame graphs, expected time and heap`);
    problems.push(...p.seen.errors);
  } finally {
    await closePage(p);
  }
  return problems;
}

async function main() {
  const args = parseArgs(process.argv.slice(2), ['hotscope', 'program', 'node-dir', 'chromium', 'work'], __filename);
  const t0 = Date.now();
  const work = path.resolve(args.work);
  const out = path.join(work, 'out');
  const shotDir = path.join(work, 'screenshots');
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(shotDir, { recursive: true });
  nodeRequireFrom(args['node-dir']).resolve('playwright-core');

  runChecked(args.program, [], { HOTSCOPE_OUT: out, HOTSCOPE_HEAP_MODE: 'full', HOTSCOPE_HEAP_SUMMARY: '0', HOTSCOPE_AGENT: '0' });
  runChecked(args.hotscope, ['report', out]);
  runChecked(args.hotscope, ['flame', path.join(out, 'trace.folded'), '-o', path.join(out, 'flame.svg')]);
  runChecked(args.hotscope, ['flame', path.join(out, 'heap.json'), '-o', path.join(out, 'heap.svg')]);
  const expected = foldedTree(fs.readFileSync(path.join(out, 'trace.folded'), 'utf8'));
  const stats = JSON.parse(fs.readFileSync(path.join(out, 'stats.json'), 'utf8'));
  const heap = JSON.parse(fs.readFileSync(path.join(out, 'heap.json'), 'utf8'));

  const base = await startServer({ out });
  const { context, offsite, version } = await launchBrowser({ nodeDir: args['node-dir'], chromium: args.chromium, work, base });
  console.log(`chromium ${version} (${args.chromium}), served from ${base}; ${expected.size} frames`);
  const { report, offsite: reportOffsite, finish } = reporter();
  const check = async (name, fn) => {
    const t = Date.now();
    const problems = await fn();
    report(problems.length === 0, name, Date.now() - t, problems.slice(0, 20));
  };
  await check('flame.svg: one frame per stack prefix with its share; zoom, search, hover',
    () => checkFlameSvg(context, `${base}/out/flame.svg`, expected, path.join(shotDir, 'flame.png')));
  await check('heap.svg: bytes by allocation stack',
    () => checkHeapSvg(context, `${base}/out/heap.svg`, heap, path.join(shotDir, 'heap.png')));
  await check('report.html: no console error, sortable tables, flame graph, threads, heap sites',
    () => checkReport(context, `${base}/out/report.html`, stats, expected, path.join(shotDir, 'report.png')));
  reportOffsite(offsite);
  return finish(t0);
}

run(main, RUN_LIMIT_MS);

'use strict';
// Opens a real hotscope heap profile in valgrind's own DHAT viewer (dh_view.html, loaded at run
// time from the valgrind installation) in headless Chromium, through the viewer's own Load path:
// the file goes into its file input, which reads it with FileReader. It then re-sorts the tree
// under every sort metric the menu enables for the file, and checks after each one that the
// viewer shows no error (dh_view prints exceptions into the page as a red ".error" span and
// rethrows them; page errors and alerts are caught too) and that the root of the tree shows the
// file's totals: Total, At t-gmax and At t-end, bytes and blocks, equal to Σtb, Σtbk, Σgb, Σgbk,
// Σeb, Σebk. Broken variants of the same file must then fail those checks, so a viewer error
// cannot pass unseen.
//
// usage: node dhview_test.js --hotscope PATH (--program PATH | --guest PATH) --viewer PATH
//          --node-dir DIR --chromium PATH --work DIR
//   --hotscope  the hotscope tool; runs `hotscope run --heap --out <work>/out -- PROGRAM`, or
//               `hotscope vm run GUEST --process --out <work>/out` (docs/guest.md)
//   --program   the profiled program (a tests/heap workload): opens <work>/out/heap.json
//   --guest     a process guest whose allocator reports its blocks (build/guest/
//               sample-guest-process): opens <work>/out/guest-NAME.heap.json
//   --viewer    dh_view.html (/usr/libexec/valgrind/dh_view.html); its directory is served
//   --node-dir  the directory where `npm ci` installed package.json (holds node_modules/)
//   --chromium  the browser binary (/usr/bin/chromium)
//   --work      scratch directory: the profile, broken files, screenshots/
//
// The viewer is served from a local static server on 127.0.0.1; the browser may reach nothing
// else. Every step has a time limit, the whole run has one (RUN_LIMIT_MS), and the server and
// the browser are cleaned up on every exit path (harness.js). Screenshots for humans:
// <work>/screenshots/*.png.

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const {
  parseArgs, sleep, run, nodeRequireFrom, startServer, launchBrowser, reporter,
} = require('./harness');

const RUN_LIMIT_MS = 50000; // CTest's TIMEOUT is above this, so our own cleanup runs first
const STEP_LIMIT_MS = 10000; // one step: load the file, or re-sort
// The sort metrics dh_view enables for bklt:true, bkacc:false (gSelectData in dh_view.js).
// Each with the root figure it sorts by, which the root always shows.
const EXPECTED_METRICS = new Map([
  ['Total (bytes)', 'Total bytes'], ['Total (blocks)', 'Total blocks'],
  ['Total (blocks), tiny', 'Total blocks'], ['Total (blocks), short-lived', 'Total blocks'],
  ['At t-gmax (bytes)', 'At t-gmax bytes'], ['At t-end (bytes)', 'At t-end bytes'],
]);

// ---------------------------------------------------------------------------------------------
// The profile, what the viewer should show for it, and broken variants

function runProfiled(hotscope, program, guest, outDir) {
  fs.rmSync(outDir, { recursive: true, force: true });
  const t0 = Date.now();
  const argv = guest
    ? ['vm', 'run', guest, '--process', '--calls', '5', '--out', outDir]
    : ['run', '--heap', '--no-summary', '--out', outDir, '--', program];
  const r = spawnSync(hotscope, argv, { timeout: 30000, encoding: 'utf8' });
  if (r.error) throw new Error(`running ${hotscope}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${hotscope} ${argv.join(' ')} exited with ${r.status}${r.signal ? ` (${r.signal})` : ''}\n${r.stdout}${r.stderr}`);
  }
  const file = path.join(outDir, guest ? `guest-${path.basename(guest)}.heap.json` : 'heap.json');
  if (!fs.existsSync(file)) throw new Error(`${hotscope} ${argv.join(' ')} wrote no ${file}`);
  console.log(`profile: ${path.basename(hotscope)} ${argv.join(' ')} (${Date.now() - t0} ms)`);
  return file;
}

// The root's figures, summed over the file's program points.
function expectedTotals(doc) {
  const sum = (k) => doc.pps.reduce((a, pp) => a + pp[k], 0);
  return {
    'Total': { bytes: sum('tb'), blocks: sum('tbk') },
    'At t-gmax': { bytes: sum('gb'), blocks: sum('gbk') },
    'At t-end': { bytes: sum('eb'), blocks: sum('ebk') },
  };
}

// Broken variants of the real file, each with the problem the checks must report.
function writeBrokenFiles(doc, text, brokenDir) {
  fs.rmSync(brokenDir, { recursive: true, force: true });
  fs.mkdirSync(brokenDir, { recursive: true });
  const cases = [];
  const add = (name, content, mustReport) => {
    const file = path.join(brokenDir, `${name}.json`);
    fs.writeFileSync(file, content);
    cases.push({ name, file, mustReport });
  };
  add('version-3', JSON.stringify({ ...doc, dhatFileVersion: 3 }),
    /viewer error: .*data file has version number 3/);
  // The deepest stack twice: the viewer requires every fs to be unique.
  const deepest = doc.pps.reduce((a, pp) => (pp.fs.length > a.fs.length ? pp : a));
  add('repeated-fs', JSON.stringify({ ...doc, pps: [...doc.pps, { ...deepest }] }),
    /viewer error: .*repeated location/);
  // A crash mid-write.
  add('truncated', text.slice(0, Math.floor(text.length / 2)), /viewer error: .*JSON/);
  // Parses and builds, but one site's bytes are off: only the totals check can see it.
  add('wrong-total', JSON.stringify({ ...doc, pps: doc.pps.map((pp, i) => (i === 0 ? { ...pp, tb: pp.tb + 1 } : pp)) }),
    /root shows Total \d+ bytes, expected/);
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Driving dh_view

// In the page: the error dh_view printed (tryFunc: a ".error" span in the main div), the title,
// the sort menu's enabled options, and the figures the root node ("PP 1/1", listed first) shows:
// { Total: { bytes, blocks }, ... }. A root that is insignificant under the sort metric shows only
// the metric's own figures (the bold ones), so any figure may be missing.
function pageState() {
  const error = document.querySelector('.error');
  const select = document.querySelector('select');
  const pre = document.querySelector('pre');
  const root = {};
  const text = pre ? pre.textContent : '';
  const start = text.indexOf('PP 1/1 ');
  if (start >= 0) {
    const next = text.slice(start + 1).search(/PP 1\.\d|PP significance threshold/);
    const section = next < 0 ? text.slice(start) : text.slice(start, start + 1 + next);
    const number = (m) => (m ? Number(m[1].replace(/,/g, '')) : undefined);
    for (const title of ['Total', 'At t-gmax', 'At t-end']) {
      const line = new RegExp(`${title}:([^\n]*)`).exec(section);
      if (!line) continue;
      root[title] = {
        bytes: number(/([\d,.]+) bytes \(/.exec(line[1])),
        blocks: number(/([\d,.]+) blocks \(/.exec(line[1])),
      };
    }
  }
  return {
    error: error ? error.textContent : null,
    title: document.title,
    metrics: select ? [...select.options].filter((o) => !o.disabled).map((o) => ({ value: o.value, label: o.label || o.textContent })) : [],
    root,
  };
}

// Waits until the viewer shows the tree sorted by `label` (the title ends with it), or an error.
async function waitForTree(page, seen, label) {
  const deadline = Date.now() + STEP_LIMIT_MS;
  for (;;) {
    const s = await page.evaluate(pageState);
    if (s.error || seen.pageErrors.length || seen.dialogs.length) return s;
    if (s.title.endsWith(` - ${label}`) && Object.keys(s.root).length > 0) return s;
    if (Date.now() > deadline) return { ...s, timedOut: true };
    await sleep(50);
  }
}

// Every problem in what the viewer shows now: errors, root figures other than `expected`, and
// figures missing from the root: the sort metric's own (`key`, e.g. "Total blocks"), or any of
// them when `key` is "all".
function problemsIn(s, seen, expected, key, step) {
  const problems = [];
  if (s.error) problems.push(`${step}: viewer error: ${s.error}`);
  for (const e of seen.pageErrors.splice(0)) problems.push(`${step}: viewer error: page error: ${e}`);
  for (const d of seen.dialogs.splice(0)) problems.push(`${step}: viewer error: alert "${d}"`);
  if (problems.length) return problems;
  if (s.timedOut) return [`${step}: the viewer showed no tree within ${STEP_LIMIT_MS / 1000} s (title "${s.title}")`];
  for (const [title, want] of Object.entries(expected)) {
    for (const unit of ['bytes', 'blocks']) {
      const got = (s.root[title] || {})[unit];
      if (got === undefined) {
        if (key === 'all' || key === `${title} ${unit}`) problems.push(`${step}: the root shows no ${title} ${unit}`);
      } else if (got !== want[unit]) {
        problems.push(`${step}: root shows ${title} ${got} ${unit}, expected ${want[unit]}`);
      }
    }
  }
  return problems;
}

// Loads `file` through the viewer's file input, then re-sorts under every enabled metric.
async function openInDhView(context, viewerURL, file, expected, screenshot) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_LIMIT_MS);
  const seen = { dialogs: [], pageErrors: [], badRequests: [] };
  page.on('pageerror', (e) => seen.pageErrors.push(String((e && e.message) || e)));
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('requestfailed', (r) => seen.badRequests.push(`${r.url()}: ${(r.failure() || {}).errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.badRequests.push(`${r.url()}: HTTP ${r.status()}`);
  });
  const problems = [];
  const sorted = [];
  try {
    await page.goto(viewerURL, { waitUntil: 'load', timeout: STEP_LIMIT_MS });
    // The "Load…" button clicks this hidden input; setting its files fires its onchange.
    await page.locator('input[type=file]').setInputFiles(file);
    const defaultLabel = await page.evaluate(() => document.querySelector('select').selectedOptions[0].textContent);
    let s = await waitForTree(page, seen, defaultLabel);
    // The default metric (Total blocks) makes the root significant: it shows every figure.
    problems.push(...problemsIn(s, seen, expected, 'all', `load (sorted by ${defaultLabel})`));
    if (problems.length === 0) {
      const labels = s.metrics.map((m) => m.label);
      if (JSON.stringify(labels) !== JSON.stringify([...EXPECTED_METRICS.keys()])) {
        problems.push(`the sort menu enables ${JSON.stringify(labels)}, expected ${JSON.stringify([...EXPECTED_METRICS.keys()])}`);
      }
      for (const m of s.metrics) {
        await page.locator('select').selectOption(m.value);
        s = await waitForTree(page, seen, m.label);
        const p = problemsIn(s, seen, expected, EXPECTED_METRICS.get(m.label) || 'all', `sorted by ${m.label}`);
        problems.push(...p);
        if (p.length) break;
        sorted.push(m.label);
      }
    }
    for (const r of seen.badRequests) problems.push(`request failed: ${r}`);
  } finally {
    await page.screenshot({ path: screenshot, fullPage: false, timeout: STEP_LIMIT_MS }).catch(() => {});
    await page.close().catch(() => {});
  }
  return { problems, sorted };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2), ['hotscope', 'viewer', 'node-dir', 'chromium', 'work'], __filename);
  if (!args.program === !args.guest) throw new Error('give one of --program and --guest');
  const t0 = Date.now();
  const work = path.resolve(args.work);
  const shotDir = path.join(work, 'screenshots');
  fs.mkdirSync(work, { recursive: true });
  fs.rmSync(shotDir, { recursive: true, force: true });
  fs.mkdirSync(shotDir, { recursive: true });
  if (!fs.existsSync(args.viewer)) throw new Error(`no DHAT viewer at ${args.viewer} (Debian package valgrind)`);
  nodeRequireFrom(args['node-dir']).resolve('playwright-core'); // a clear error if npm ci has not run

  const file = runProfiled(args.hotscope, args.program, args.guest, path.join(work, 'out'));
  const text = fs.readFileSync(file, 'utf8');
  const doc = JSON.parse(text);
  if (!doc.bklt || doc.bkacc) throw new Error(`${file}: expected bklt:true, bkacc:false (EXPECTED_METRICS)`);
  const expected = expectedTotals(doc);
  const broken = writeBrokenFiles(doc, text, path.join(work, 'broken'));

  const viewerDir = path.dirname(path.resolve(args.viewer));
  const base = await startServer({ viewer: viewerDir });
  // en-US: the viewer formats figures with the browser's locale (Intl.NumberFormat).
  const { context, offsite, version } = await launchBrowser({
    nodeDir: args['node-dir'], chromium: args.chromium, work, base, options: { locale: 'en-US' },
  });
  const viewerURL = `${base}/viewer/${path.basename(args.viewer)}`;
  console.log(`viewer ${args.viewer}\nchromium ${version} (${args.chromium}), served from ${base}`);

  const { report, offsite: reportOffsite, finish } = reporter();
  {
    const t = Date.now();
    const shot = path.join(shotDir, 'dhview-heap-json.png');
    const r = await openInDhView(context, viewerURL, file, expected, shot);
    const totals = Object.entries(expected).map(([k, v]) => `${k} ${v.bytes} bytes in ${v.blocks} blocks`).join('; ');
    report(r.problems.length === 0, `dh_view opens ${path.relative(work, file)} and sorts by every metric`, Date.now() - t,
      r.problems.length ? r.problems : [`${doc.pps.length} sites; root: ${totals}`,
        `sorted by: ${r.sorted.join(' | ')}; screenshot ${shot}`]);
  }
  for (const c of broken) {
    const t = Date.now();
    const shot = path.join(shotDir, `broken-${c.name}.png`);
    const r = await openInDhView(context, viewerURL, c.file, expected, shot);
    const caught = r.problems.find((p) => c.mustReport.test(p));
    report(Boolean(caught), `the check rejects broken/${c.name}.json`, Date.now() - t, caught
      ? [`caught: ${caught.slice(0, 300)}`]
      : [`expected a problem matching ${c.mustReport}, got: ${r.problems.length ? r.problems.join('; ') : 'none (the broken file passed)'}`]);
  }
  reportOffsite(offsite);
  return finish(t0);
}

run(main, RUN_LIMIT_MS);

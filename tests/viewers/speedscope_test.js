'use strict';
// Opens hotscope's real trace.json and trace.folded in the real speedscope web app (the npm
// package's built app, unmodified) in headless Chromium, and checks that speedscope imported
// each one without error: the importer it chose, the document title, one profile per traced
// thread named after the thread, and every frame name of every profile (read from speedscope's
// sandwich table) equal to what the file holds. It then feeds it broken variants of the same
// files and checks that those checks fail, so a speedscope import failure cannot pass unseen.
//
// usage: node speedscope_test.js --demo PATH --node-dir DIR --chromium PATH --work DIR
//   --demo      the hotscope-demo executable; it runs once, with HOTSCOPE_OUT=<work>/out
//   --node-dir  the directory where `npm ci` installed package.json (holds node_modules/)
//   --chromium  the browser binary (/usr/bin/chromium)
//   --work      scratch directory: the demo's output, broken files, screenshots/
//
// Everything is served from a local static server on 127.0.0.1; the browser may reach nothing
// else. Every step has a time limit, the whole run has one (RUN_LIMIT_MS), and the server, the
// browser and its profile directory (<work>/chromium-profile, made afresh each run) are cleaned
// up on every exit path that runs code (success, failure, time limit, SIGINT, SIGTERM). Chromium
// also exits by itself when this process is killed outright, as its control pipe closes.
// Screenshots for humans: <work>/screenshots/*.png.

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const {
  parseArgs, withTimeout, sleep, run, nodeRequireFrom, startServer, launchBrowser, reporter,
} = require('./harness');

const RUN_LIMIT_MS = 85000; // CTest's TIMEOUT is above this, so our own cleanup runs first
const LOAD_LIMIT_MS = 30000; // one file: from navigation to speedscope having imported it
const STEP_LIMIT_MS = 10000; // one UI step (switch view or profile, read a table)
const DEMO_ARGS = ['--seconds', '2', '--threads', '2'];
// Frames the demo must show, whatever else it records (the brief's example, so a demo that
// silently stops tracing its request handler is noticed here too).
const REQUIRED_FRAMES = ['demo::Service::handle'];
// Chromium's own messages about the software (SwiftShader) GL driver, not speedscope's.
const BROWSER_NOISE = /GL Driver Message|GPU stall due to ReadPixels|Automatic fallback to software WebGL/;

// ---------------------------------------------------------------------------------------------
// The demo's output, what speedscope should make of it, and broken variants

function runDemo(demo, outDir) {
  fs.rmSync(outDir, { recursive: true, force: true });
  const t0 = Date.now();
  const r = spawnSync(demo, DEMO_ARGS, {
    // CPU samples too: cpu.folded is a collapsed-stack file of its own (docs/cpu.md).
    env: { ...process.env, HOTSCOPE_OUT: outDir, HOTSCOPE_CPU_HZ: '499' },
    timeout: 30000,
    encoding: 'utf8',
  });
  if (r.error) throw new Error(`running ${demo}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`${demo} ${DEMO_ARGS.join(' ')} exited with ${r.status}${r.signal ? ` (${r.signal})` : ''}\n${r.stdout}${r.stderr}`);
  }
  for (const f of ['trace.json', 'trace.folded', 'cpu.folded']) {
    const p = path.join(outDir, f);
    if (!fs.existsSync(p) || fs.statSync(p).size === 0) throw new Error(`the demo did not write ${p}`);
  }
  console.log(`demo: HOTSCOPE_OUT=${outDir} ${path.basename(demo)} ${DEMO_ARGS.join(' ')} (${Date.now() - t0} ms)`);
}

// What speedscope must show for trace.json: one profile per (pid, tid) that has scopes, named
// "<process_name> (pid P), <thread_name> (tid T)", whose frames are that thread's scope names.
function expectFromTraceJson(file) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const processNames = new Map();
  const threadNames = new Map();
  const framesByThread = new Map();
  for (const e of doc.traceEvents) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'M' && e.name === 'process_name') processNames.set(e.pid, e.args.name);
    if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(key, e.args.name);
    if (e.ph === 'B' || e.ph === 'E' || e.ph === 'X') {
      if (!framesByThread.has(key)) framesByThread.set(key, { pid: e.pid, tid: e.tid, frames: new Set() });
      if (e.ph !== 'E') framesByThread.get(key).frames.add(e.name);
    }
  }
  const profiles = new Map();
  for (const [key, t] of framesByThread) {
    const name = `${processNames.get(t.pid)} (pid ${t.pid}), ${threadNames.get(key)} (tid ${t.tid})`;
    profiles.set(name, t.frames);
  }
  return { importer: 'Importing as Trace Event Format profile', profiles };
}

// The Chrome JSON rules for flows (docs/formats-output.md, trace.json): every "f" has an earlier
// "s" with its id, name and cat; an "s", and an "f" with "bp":"e", lie inside a scope open on
// their thread. The demo's queues must give some.
function flowProblems(file) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const open = new Map(); // pid:tid -> depth of open B/E scopes
  const started = new Map(); // id -> the "s"
  const problems = [];
  let finished = 0;
  for (const e of doc.traceEvents) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'B') open.set(key, (open.get(key) || 0) + 1);
    if (e.ph === 'E') open.set(key, (open.get(key) || 0) - 1);
    if (e.ph === 's') {
      if (!(open.get(key) > 0)) problems.push(`"s" outside any scope: ${JSON.stringify(e)}`);
      if (started.has(e.id)) problems.push(`flow id ${e.id} started twice`);
      started.set(e.id, e);
    }
    if (e.ph === 'f') {
      const s = started.get(e.id);
      if (!s) problems.push(`"f" without an earlier "s": ${JSON.stringify(e)}`);
      else if (s.name !== e.name || s.cat !== e.cat) problems.push(`"f" and its "s" disagree: ${JSON.stringify([s, e])}`);
      if (e.bp === 'e' && !(open.get(key) > 0)) problems.push(`"f" with bp "e" outside any scope: ${JSON.stringify(e)}`);
      ++finished;
    }
  }
  if (finished === 0) problems.push('no flow at all: the demo\'s queues should draw arrows');
  return { problems: problems.slice(0, 5), started: started.size, finished };
}

// What speedscope must show for trace.folded: one profile named after the file, whose frames
// are every frame of every stack line (the process and thread names included).
function expectFromFolded(file, profileName) {
  const frames = new Set();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(.*) (\d+)$/.exec(line);
    if (!m) throw new Error(`${file}: not a folded-stack line: ${JSON.stringify(line)}`);
    for (const f of m[1].split(';')) frames.add(f);
  }
  return { importer: 'Importing as collapsed stack format', profiles: new Map([[profileName, frames]]) };
}

// Broken variants of the real files, each with the check that must catch it.
function writeBrokenFiles(outDir, brokenDir) {
  fs.rmSync(brokenDir, { recursive: true, force: true });
  const json = fs.readFileSync(path.join(outDir, 'trace.json'), 'utf8');
  const folded = fs.readFileSync(path.join(outDir, 'trace.folded'), 'utf8');
  const cases = [];
  const add = (name, file, text, mustReport) => {
    const dir = path.join(brokenDir, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
    cases.push({ name: `broken/${name}/${file}`, rel: `broken/${name}/${file}`, file, mustReport });
  };
  // A crash mid-write: the JSON stops half-way through an event.
  add('truncated', 'trace.json', json.slice(0, Math.floor(json.length / 2)), /alert|did not import|went wrong|page error/);
  // A trailing {} after the last event: speedscope rejects the whole file.
  add('trailing-empty-event', 'trace.json', json.replace(/\n\],"displayTimeUnit"/, ',\n{}\n],"displayTimeUnit"'),
    /alert|did not import|went wrong|page error/);
  // One E event without its name: speedscope warns "Tried to end ..." and leaves the slice open.
  add('unnamed-end', 'trace.json', json.replace(/\{"ph":"E","name":"[^"]*",/, '{"ph":"E",'), /console warning/);
  // Fractional counts on every stack through REQUIRED_FRAMES[0]: speedscope skips those lines.
  const lines = folded.split('\n').map((l) =>
    (l.startsWith('#') || !l.split(' ')[0].split(';').includes(REQUIRED_FRAMES[0]) ? l : l.replace(/ (\d+)$/, ' $1.5')));
  add('fractional-counts', 'trace.folded', lines.join('\n'), new RegExp(`missing frames.*${escapeRegExp(REQUIRED_FRAMES[0])}`));
  // A URL that is not there (speedscope gets a 404 page).
  cases.push({ name: 'broken/missing/trace.json (no such file)', rel: 'broken/missing/trace.json', file: 'trace.json', mustReport: /request failed.*HTTP 404/ });
  return cases;
}
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// ---------------------------------------------------------------------------------------------
// Driving speedscope

// Opens fileURL in speedscope in a new page and reads what it shows: the outcome of the import,
// the title, the profile names, and the frame names of every profile.
async function openInSpeedscope(context, appURL, fileURL, screenshot) {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_LIMIT_MS);
  const seen = { dialogs: [], pageErrors: [], warnings: [], logs: [], badRequests: [] };
  page.on('console', (m) => {
    const type = m.type();
    const text = m.text();
    if (type === 'warning' || type === 'error') {
      if (!BROWSER_NOISE.test(text)) seen.warnings.push(`${type}: ${text}`);
    } else {
      seen.logs.push(text);
    }
  });
  page.on('pageerror', (e) => seen.pageErrors.push(String((e && e.message) || e)));
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('requestfailed', (r) => seen.badRequests.push(`${r.url()}: ${(r.failure() || {}).errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) seen.badRequests.push(`${r.url()}: HTTP ${r.status()}`);
  });
  const result = { seen, title: null, errorShown: false, timedOut: false, profiles: [], frames: new Map() };
  try {
    await page.goto(`${appURL}#profileURL=${encodeURIComponent(fileURL)}`, { waitUntil: 'load', timeout: LOAD_LIMIT_MS });
    // Wait until speedscope is done: the title names the file and the profile list is filled
    // (success), or it gave up (an alert, an error screen, an uncaught exception).
    const deadline = Date.now() + LOAD_LIMIT_MS;
    for (;;) {
      const s = await page.evaluate(pageState);
      Object.assign(result, s);
      const done = s.title !== 'speedscope' && s.profiles.length > 0;
      if (done || s.errorShown || seen.dialogs.length || seen.pageErrors.length) break;
      if (Date.now() > deadline) {
        result.timedOut = true;
        break;
      }
      await sleep(100);
    }
    if (result.title !== 'speedscope' && result.profiles.length > 0 && !result.errorShown) {
      await readFrames(page, result, screenshot);
    }
  } finally {
    await page.screenshot({ path: screenshot.path, timeout: STEP_LIMIT_MS }).catch(() => {});
    await page.close().catch(() => {});
  }
  return result;
}

// In the page: the title, whether speedscope shows its error screen, the profile names and the
// profile on view. The toolbar holds the view tabs, then the name of the profile on view
// ("name (i/N)" when there are several, whose hidden selector lists them all as <tr title=...>),
// then the buttons.
function pageState() {
  const state = {
    title: document.title,
    errorShown: document.body.innerText.includes('Something went wrong'),
    profiles: [],
    current: null,
  };
  const tabs = [...document.querySelectorAll('div')].find((d) => d.children.length === 3 &&
    d.children[0].textContent.endsWith('Time Order') && d.children[2].textContent.endsWith('Sandwich'));
  if (!tabs) return state;
  const bar = tabs.parentElement;
  const text = [...bar.childNodes].filter((n) => n !== tabs && n !== bar.lastElementChild)
    .map((n) => (n.nodeType === Node.TEXT_NODE ? n.textContent : n.innerText)).join('').trim();
  const m = /^(.*?)(?: \((\d+)\/(\d+)\))?$/s.exec(text);
  if (!text || !m) return state;
  state.current = { name: m[1], index: m[2] ? Number(m[2]) - 1 : 0, count: m[3] ? Number(m[3]) : 1 };
  const rows = [...bar.querySelectorAll('tr[title]')].map((r) => r.title);
  state.profiles = rows.length ? rows : [state.current.name];
  return state;
}

// Moves to profile i with "n" (next) and "p" (previous), and waits until the toolbar shows it.
async function goToProfile(page, result, i) {
  const now = (await page.evaluate(pageState)).current;
  for (let k = now.index; k < i; k++) await page.keyboard.press('n');
  for (let k = now.index; k > i; k--) await page.keyboard.press('p');
  const deadline = Date.now() + STEP_LIMIT_MS;
  for (;;) {
    const c = (await page.evaluate(pageState)).current;
    if (c && c.index === i && c.name === result.profiles[i]) return;
    if (Date.now() > deadline) throw new Error(`speedscope did not switch to profile ${i + 1} "${result.profiles[i]}" (shows ${JSON.stringify(c)})`);
    await sleep(50);
  }
}

// For each profile in turn ("n" moves to the next one, "p" back), reads the sandwich view's symbol
// column ("3"), scrolling through the whole list. Leaves the page on the profile that holds
// screenshot.frame, in the left-heavy flame graph ("2"), for the screenshot.
async function readFrames(page, result, screenshot) {
  const n = result.profiles.length;
  let showcase = -1;
  for (let i = 0; i < n; i++) {
    // Leave the sandwich view while switching, so that its table is built anew for this profile.
    await page.keyboard.press('1');
    await goToProfile(page, result, i);
    await page.keyboard.press('3');
    await page.getByText('Symbol Name').waitFor({ state: 'visible', timeout: STEP_LIMIT_MS });
    const names = await withTimeout(page.evaluate(readSandwichColumn), STEP_LIMIT_MS, 'reading the sandwich table');
    result.frames.set(result.profiles[i], new Set(names));
    if (showcase < 0 && names.includes(screenshot.frame)) showcase = i;
  }
  await goToProfile(page, result, Math.max(showcase, 0));
  await page.keyboard.press('2');
  await sleep(500); // let the flame graph draw
}

// In the page: the symbol names of the sandwich table, scrolling its list from top to bottom
// (the list only renders the rows in view). Rows are <tr> of three cells without a title (the
// hidden profile selector's rows have one); the symbol is the last cell's text.
async function readSandwichColumn() {
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const rows = () => [...document.querySelectorAll('tr:not([title])')].filter((r) => r.cells.length === 3 && !r.closest('thead'));
  // The list renders in steps (it measures itself first): wait until the rows stay the same
  // for several frames.
  const settle = async () => {
    let last = null;
    for (let same = 0, k = 0; same < 5 && k < 300; k++) {
      await frame();
      const now = rows().map((r) => r.cells[2].textContent).join('\n');
      same = now !== '' && now === last ? same + 1 : 0;
      last = now;
    }
  };
  await settle();
  const names = new Set();
  const first = rows()[0];
  if (!first) return [];
  let scroller = first.parentElement;
  while (scroller && !(scroller.scrollHeight > scroller.clientHeight && /auto|scroll/.test(getComputedStyle(scroller).overflowY))) {
    scroller = scroller.parentElement;
  }
  const collect = () => rows().forEach((r) => names.add(r.cells[2].textContent));
  collect();
  if (scroller) {
    scroller.scrollTop = 0;
    for (let guard = 0; guard < 1000; guard++) {
      await settle();
      collect();
      if (scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1) break;
      scroller.scrollTop += Math.max(1, Math.floor(scroller.clientHeight / 2));
    }
  }
  return [...names];
}

// ---------------------------------------------------------------------------------------------
// Judging what speedscope showed

function problemsWith(result, expected, fileName, required = REQUIRED_FRAMES) {
  const problems = [];
  const { seen } = result;
  const list = (xs, max = 8) => (xs.length > max ? `${xs.slice(0, max).join(', ')}, … (${xs.length} in all)` : xs.join(', '));
  if (result.timedOut) problems.push(`speedscope did not finish within ${LOAD_LIMIT_MS / 1000} s`);
  for (const d of seen.dialogs) problems.push(`speedscope showed an alert: "${d}"`);
  for (const e of seen.pageErrors) problems.push(`page error: ${e}`);
  if (result.errorShown) problems.push('speedscope went to its error screen ("Something went wrong")');
  if (seen.warnings.length) problems.push(`console warning(s) while importing: ${list(seen.warnings.map((w) => JSON.stringify(w.slice(0, 200))), 3)}`);
  for (const r of seen.badRequests) problems.push(`request failed: ${r}`);
  if (!seen.logs.includes(expected.importer)) {
    problems.push(`speedscope did not import it as expected ("${expected.importer}"); its importer lines: ${list(seen.logs.filter((l) => l.startsWith('Importing as')).map((l) => JSON.stringify(l))) || 'none'}`);
  }
  if (result.title !== `${fileName} - speedscope`) problems.push(`title is ${JSON.stringify(result.title)}, expected "${fileName} - speedscope"`);
  const shown = new Set(result.profiles);
  const missingProfiles = [...expected.profiles.keys()].filter((p) => !shown.has(p));
  const extraProfiles = result.profiles.filter((p) => !expected.profiles.has(p));
  if (missingProfiles.length) problems.push(`missing profiles (threads): ${list(missingProfiles)}`);
  if (extraProfiles.length) problems.push(`unexpected profiles: ${list(extraProfiles)}`);
  for (const [profile, frames] of expected.profiles) {
    const got = result.frames.get(profile);
    if (!got) continue; // reported above, or the import failed
    const missing = [...frames].filter((f) => !got.has(f));
    const extra = [...got].filter((f) => !frames.has(f));
    if (missing.length) problems.push(`missing frames in "${profile}": ${list(missing)}`);
    if (extra.length) problems.push(`unexpected frames in "${profile}": ${list(extra)}`);
  }
  for (const f of required) {
    if (![...result.frames.values()].some((s) => s.has(f))) problems.push(`missing frames: no profile shows ${f}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2), ['demo', 'node-dir', 'chromium', 'work'], __filename);
  const t0 = Date.now();
  const work = path.resolve(args.work);
  const outDir = path.join(work, 'out');
  const shotDir = path.join(work, 'screenshots');
  fs.mkdirSync(work, { recursive: true });
  fs.rmSync(shotDir, { recursive: true, force: true });
  fs.mkdirSync(shotDir, { recursive: true });

  const nodeRequire = nodeRequireFrom(args['node-dir']);
  const appDir = path.join(path.dirname(nodeRequire.resolve('speedscope/package.json')), 'dist', 'release');
  const speedscopeVersion = nodeRequire('speedscope/package.json').version;
  if (!fs.existsSync(path.join(appDir, 'index.html'))) throw new Error(`no speedscope app at ${appDir}`);

  runDemo(args.demo, outDir);
  const good = [
    { name: 'trace.json', rel: 'out/trace.json', file: 'trace.json', expected: expectFromTraceJson(path.join(outDir, 'trace.json')) },
    { name: 'trace.folded', rel: 'out/trace.folded', file: 'trace.folded', expected: expectFromFolded(path.join(outDir, 'trace.folded'), 'trace.folded') },
    // Native frames, named by the symbolizer: every worker thread's stack starts in start_thread.
    { name: 'cpu.folded', rel: 'out/cpu.folded', file: 'cpu.folded', expected: expectFromFolded(path.join(outDir, 'cpu.folded'), 'cpu.folded'), required: ['start_thread'] },
  ];
  for (const c of good) {
    c.required = c.required || REQUIRED_FRAMES;
    const frames = new Set([...c.expected.profiles.values()].flatMap((s) => [...s]));
    for (const f of c.required) {
      if (!frames.has(f)) throw new Error(`${c.rel} itself has no frame ${f}: did the demo change? (REQUIRED_FRAMES in ${path.basename(__filename)})`);
    }
  }
  const broken = writeBrokenFiles(outDir, path.join(work, 'broken'));
  for (const c of broken) c.expected = good.find((g) => g.file === c.file).expected;

  const base = await startServer({ app: appDir, data: work });
  const { context, offsite, version } = await launchBrowser({ nodeDir: args['node-dir'], chromium: args.chromium, work, base });
  console.log(`speedscope ${speedscopeVersion} from ${appDir}\nchromium ${version} (${args.chromium}), served from ${base}`);

  const { report, offsite: reportOffsite, finish } = reporter();
  const flows = flowProblems(path.join(outDir, 'trace.json'));
  report(flows.problems.length === 0, 'out/trace.json: every flow "f" has its "s", bound to scopes', 0,
    flows.problems.length ? flows.problems : [`${flows.finished} arrows from the demo's queues (${flows.started} started)`]);
  for (const c of good) {
    const t = Date.now();
    const shot = path.join(shotDir, `speedscope-${c.file.replace('.', '-')}.png`);
    const r = await openInSpeedscope(context, `${base}/app/index.html`, `${base}/data/${c.rel}`, { path: shot, frame: c.required[0] });
    const problems = problemsWith(r, c.expected, c.file, c.required);
    const nFrames = [...r.frames.values()].reduce((a, s) => a + s.size, 0);
    report(problems.length === 0, `speedscope opens ${c.rel}`, Date.now() - t, problems.length ? problems : [
      `title "${r.title}"; ${r.profiles.length} profile(s): ${r.profiles.join(' | ')}`,
      `${nFrames} frame names checked against the file; screenshot ${shot}`]);
    if (problems.length) console.log(`     speedscope's log: ${r.seen.logs.slice(0, 10).join(' | ')}`);
  }
  for (const c of broken) {
    const t = Date.now();
    const shot = path.join(shotDir, `broken-${c.rel.split('/')[1]}.png`);
    const r = await openInSpeedscope(context, `${base}/app/index.html`, `${base}/data/${c.rel}`, { path: shot, frame: REQUIRED_FRAMES[0] });
    const problems = problemsWith(r, c.expected, c.file);
    const caught = problems.some((p) => c.mustReport.test(p));
    report(caught, `the check rejects ${c.name}`, Date.now() - t, caught
      ? [`caught: ${problems.filter((p) => c.mustReport.test(p))[0].slice(0, 300)}`]
      : [`expected a problem matching ${c.mustReport}, got: ${problems.length ? problems.join('; ') : 'none (the broken file passed)'}`]);
  }
  reportOffsite(offsite);
  return finish(t0);
}

run(main, RUN_LIMIT_MS);

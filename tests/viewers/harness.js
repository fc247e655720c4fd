'use strict';
// What the viewer tests share: argument parsing, a time limit for the whole run, cleanup on every
// exit path that runs code (success, failure, time limit, SIGINT, SIGTERM), the local static
// server, headless Chromium with every request off that server refused, and the PASS/FAIL
// report. Each test is its own process, so this module keeps one run's state.

const fs = require('fs');
const http = require('http');
const path = require('path');
const { createRequire } = require('module');

// `--key value` pairs; every name in `required` must be there.
function parseArgs(argv, required, script) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (argv[i + 1] === undefined) throw new Error(`missing value for ${argv[i]}`);
    out[key] = argv[i + 1];
  }
  for (const k of required) {
    if (!out[k]) throw new Error(`missing --${k} (see the usage at the top of ${script})`);
  }
  return out;
}

function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const cleanups = []; // run last-in first-out, each bounded
let cleaningUp = null;
function onCleanup(what, fn) {
  cleanups.push([what, fn]);
}
function cleanup() {
  if (!cleaningUp) {
    cleaningUp = (async () => {
      while (cleanups.length) {
        const [what, fn] = cleanups.pop();
        try {
          await withTimeout(Promise.resolve().then(fn), 10000, `cleanup: ${what}`);
        } catch (e) {
          console.error(`warning: ${e.message}`);
        }
      }
    })();
  }
  return cleaningUp;
}
let dying = false;
async function die(message) {
  if (dying) return;
  dying = true;
  console.error(`FAIL: ${message}`);
  await cleanup();
  process.exit(1);
}

// Runs main() (which resolves to true when every check passed) under a limit of limitMs, then
// cleans up and exits. CTest's TIMEOUT must be above limitMs, so that this cleanup runs first.
function run(main, limitMs) {
  process.on('SIGINT', () => die('interrupted (SIGINT)'));
  process.on('SIGTERM', () => die('terminated (SIGTERM)'));
  const timer = setTimeout(() => die(`the whole run took longer than ${limitMs / 1000} s`), limitMs);
  main().then(
    async (ok) => {
      clearTimeout(timer);
      await cleanup();
      process.exit(ok ? 0 : 1);
    },
    (e) => die(e && e.stack ? e.stack : String(e)),
  );
}

// require() from the directory where `npm ci` installed package.json.
function nodeRequireFrom(nodeDir) {
  return createRequire(path.join(path.resolve(nodeDir), 'package.json'));
}

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css',
  '.json': 'application/json', '.png': 'image/png', '.ico': 'image/x-icon', '.wasm': 'application/wasm',
  '.woff2': 'font/woff2', '.txt': 'text/plain; charset=utf-8', '.svg': 'image/svg+xml',
};

// A static server on 127.0.0.1: /<mount>/<path> is <roots[mount]>/<path> (index.html for the
// bare mount). Stopped at cleanup. Resolves to its base URL.
async function startServer(roots) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const [, mount, ...rest] = url.pathname.split('/');
    const root = roots[mount];
    const file = root && path.resolve(root, decodeURIComponent(rest.join('/')) || 'index.html');
    if (!file || !file.startsWith(root + path.sep) || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, {
        'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
        'Content-Length': st.size,
        'Cache-Control': 'no-store',
      });
      fs.createReadStream(file).pipe(res);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  onCleanup('stop the server', () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return `http://127.0.0.1:${server.address().port}`;
}

// Headless Chromium, closed at cleanup, that may reach nothing but `base`: anything else is
// refused at once and listed in the returned `offsite`. Its profile directory is
// <work>/chromium-profile, made afresh, so a run killed outright (SIGKILL from a CTest timeout;
// the browser then exits as its control pipe closes) leaves nothing outside the work directory.
async function launchBrowser({ nodeDir, chromium, work, base, options = {} }) {
  const { chromium: launcher } = nodeRequireFrom(nodeDir)('playwright-core');
  const userDataDir = path.join(work, 'chromium-profile');
  fs.rmSync(userDataDir, { recursive: true, force: true });
  fs.mkdirSync(userDataDir, { recursive: true });
  onCleanup('remove the browser profile', () => fs.rmSync(userDataDir, { recursive: true, force: true }));
  const context = await launcher.launchPersistentContext(userDataDir, {
    executablePath: chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
    timeout: 30000,
    ...options,
  });
  onCleanup('close the browser', () => context.close());
  const offsite = [];
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if ((u.protocol === 'http:' && u.host === new URL(base).host) || u.protocol === 'data:' || u.protocol === 'blob:') return route.continue();
    offsite.push(u.href);
    return route.abort('blockedbyclient');
  });
  const version = context.browser() ? context.browser().version() : '?';
  return { context, offsite, version };
}

// PASS/FAIL lines, a count of failures, and the closing summary.
function reporter() {
  let passed = 0;
  let failed = 0;
  const report = (ok, name, ms, details) => {
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name} (${ms} ms)`);
    for (const d of details) console.log(`     ${d}`);
    if (ok) passed++;
    else failed++;
  };
  // The page must have asked only the local server.
  const offsite = (urls) => {
    if (urls.length) report(false, 'the page asked only the local server', 0, [`blocked: ${[...new Set(urls)].join(', ')}`]);
  };
  const finish = (t0) => {
    console.log(`${passed} passed, ${failed} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return failed === 0;
  };
  return { report, offsite, finish };
}

module.exports = {
  parseArgs, withTimeout, sleep, onCleanup, run, nodeRequireFrom, startServer, launchBrowser, reporter,
};

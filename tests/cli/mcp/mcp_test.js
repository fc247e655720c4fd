'use strict';
// `hotscope mcp` driven by the official MCP TypeScript SDK's client (docs/mcp.md): the client
// starts the server over stdio, initializes (its own newest protocol revision), pings, lists the
// tools and calls each against a running hotscope-demo, checking what each result says; then the
// errors: a process that does not exist (a tool error a person can act on) and bad arguments (an
// invalid-params error).
//
// usage: node mcp_test.js --hotscope PATH --demo PATH --node-dir DIR --work DIR [--heap yes|no]
//   --node-dir  where `npm ci` installed package.json (holds node_modules/)
//   --work      scratch directory: the runtime directory, the base run's stats.json
//   --heap no   the demo has no heap profiler (a sanitizer build): heap_top must say so

const fs = require('fs');
const path = require('path');
const { spawn, spawnSync } = require('child_process');
const assert = require('assert');

const RUN_LIMIT_MS = 100000; // CTest's TIMEOUT is above this

function parseArgs() {
  const args = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const key of ['hotscope', 'demo', 'node-dir', 'work']) {
    if (!args[key]) throw new Error(`missing --${key}`);
  }
  return args;
}

function sdk(nodeDir, module) {
  return require(require.resolve(`@modelcontextprotocol/sdk/${module}`, { paths: [nodeDir] }));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, check, limitMs) {
  const end = Date.now() + limitMs;
  while (Date.now() < end) {
    if (check()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function text(result) {
  assert.strictEqual(result.content.length, 1);
  assert.strictEqual(result.content[0].type, 'text');
  return result.content[0].text;
}

// A successful call's JSON.
async function callJson(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  assert.ok(!result.isError, `${name} failed: ${text(result)}`);
  return JSON.parse(text(result));
}

// `heapProfiler`: whether the demo was built with hotscope::heap (--heap yes|no).
async function checkTools(client, demo, base, heapProfiler) {
  const pid = String(demo.pid);
  const listed = await client.callTool({ name: 'list_processes', arguments: {} });
  assert.match(text(listed), new RegExp(`^\\s*${pid}\\s+hotscope-demo\\s`, 'm'));

  const stats = await callJson(client, 'function_stats',
    { process: 'hotscope-demo', sort: 'calls', limit: 3 });
  assert.strictEqual(stats.functions.length, 3);
  assert.match(stats.shown, /^3 of \d+ functions shown \(raise limit, at most 100\)$/);
  assert.ok(stats.functions[0].calls >= stats.functions[2].calls, JSON.stringify(stats));
  assert.ok(stats.functions.some((f) => f.name.startsWith('demo::')), JSON.stringify(stats));
  const filtered = await callJson(client, 'function_stats', { filter: 'Service::handle' });
  assert.ok(filtered.functions.length >= 1);
  assert.ok(filtered.functions.every((f) => f.name.includes('Service::handle')));

  const threads = await callJson(client, 'threads', { process: pid, stuck_ms: 60000 });
  assert.ok(threads.threads.length >= 2, JSON.stringify(threads));
  assert.strictEqual(threads.stuck_threads, 0);
  assert.deepStrictEqual(threads.deadlocks, []);

  if (heapProfiler) {
    const heap = await callJson(client, 'heap_top', { limit: 2, sort: 'total_bytes' });
    assert.strictEqual(heap.sites.length, 2);
    assert.ok(heap.all_sites.total_bytes >= heap.sites[0].total_bytes);
    assert.ok(heap.sites[0].total_bytes >= heap.sites[1].total_bytes);
    assert.match(heap.shown, /^2 of \d+ sites shown/);
  } else {
    // A sanitizer build's demo has no heap profiler: the tool says what would give it one.
    const heap = await client.callTool({ name: 'heap_top', arguments: { limit: 2 } });
    assert.strictEqual(heap.isError, true);
    assert.match(text(heap), /this program has no heap profiler: link it with/);
  }

  const window = await callJson(client, 'cpu_top', { limit: 5 });
  assert.ok(window.total > 0 && window.top_functions_self.length > 0, JSON.stringify(window));
  assert.strictEqual(window.window, 'the measuring window so far');
  const sampled = await callJson(client, 'cpu_top', { seconds: 1, limit: 5 });
  assert.strictEqual(sampled.window, 'the 1 s just sampled');
  assert.ok(sampled.top_stacks.length > 0);

  const slow = await callJson(client, 'slowest_calls', { limit: 3, lines: 4 });
  assert.strictEqual(slow.calls.length, 3, JSON.stringify(slow));
  assert.ok(slow.calls[0].duration_ns >= slow.calls[1].duration_ns);
  assert.match(slow.calls_cut, /^3 of \d+ kept calls shown/);
  assert.ok(slow.calls.every((c) => c.tree.split('\n').length <= 5 && c.tree.includes('> ')),
    JSON.stringify(slow));
  const handle = await callJson(client, 'slowest_calls',
    { function: 'demo::Service::handle', limit: 2 });
  assert.ok(handle.calls.length > 0 && handle.calls.every((c) => c.function === 'demo::Service::handle'),
    JSON.stringify(handle));

  const trace = await callJson(client, 'trace_summary', { seconds: 2, limit: 5 });
  assert.ok(trace.top_stacks.length > 0 && trace.top_stacks.length <= 5);
  assert.ok(trace.top_stacks.some((s) => s.stack_root_first.includes('demo::')),
    JSON.stringify(trace));

  const diff = await client.callTool({ name: 'diff', arguments: { base, process: pid } });
  assert.ok(!diff.isError, text(diff));
  assert.match(text(diff), /^\*\*hotscope: (passes|fails)\*\* — \d+ regressions? beyond noise/);
  assert.match(text(diff), new RegExp(`New: \`process ${pid} \\(hotscope-demo\\)\``));
}

async function checkErrors(client, McpError) {
  const missing = await client.callTool({ name: 'threads', arguments: { process: 'no-such-program' } });
  assert.strictEqual(missing.isError, true);
  assert.match(text(missing), /no-such-program/);
  await assert.rejects(
    client.callTool({ name: 'function_stats', arguments: { limit: 0 } }),
    (error) => error instanceof McpError && error.code === -32602 &&
      /'limit' must be a number from 1 to 100/.test(error.message));
}

async function main() {
  const args = parseArgs();
  const runtime = path.join(args.work, 'run');
  const baseDir = path.join(args.work, 'base');
  fs.rmSync(args.work, { recursive: true, force: true });
  fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const env = { ...process.env, HOTSCOPE_RUNTIME_DIR: runtime };
  // The base of the diff: a short run's stats.json.
  const base = spawnSync(args.demo, ['--seconds', '1'],
    { env: { ...env, HOTSCOPE_OUT: baseDir, HOTSCOPE_AGENT: '0' }, timeout: 30000 });
  assert.strictEqual(base.status, 0, `${base.stderr}`);
  const demo = spawn(args.demo, ['--seconds', '90', '--threads', '2'], {
    // A 4 MiB trace window: a Debug sanitizer build converts a whole 32 MiB window for
    // trace_summary in tens of seconds on a loaded machine.
    env: { ...env, HOTSCOPE_CPU_HZ: '199', HOTSCOPE_HEAP_MODE: 'full', HOTSCOPE_TRACE_MIB: '4' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const { Client } = sdk(args['node-dir'], 'client/index.js');
  const { StdioClientTransport } = sdk(args['node-dir'], 'client/stdio.js');
  const { McpError } = sdk(args['node-dir'], 'types.js');
  const client = new Client({ name: 'hotscope-mcp-test', version: '1.0.0' });
  const limit = setTimeout(() => {
    console.error(`mcp_test: over ${RUN_LIMIT_MS} ms`);
    demo.kill('SIGKILL');
    process.exit(1);
  }, RUN_LIMIT_MS);
  try {
    await waitFor('the demo\'s agent', () => fs.existsSync(path.join(runtime, `${demo.pid}.json`)), 20000);
    await sleep(1500); // a few requests served: functions, heap sites and CPU samples to show
    await client.connect(new StdioClientTransport({
      command: args.hotscope, args: ['mcp'], env, stderr: 'inherit',
    }));
    assert.strictEqual(client.getServerVersion().name, 'hotscope');
    assert.ok(client.getServerCapabilities().tools);
    await client.ping();
    const { tools } = await client.listTools();
    assert.deepStrictEqual(tools.map((t) => t.name).sort(),
      ['cpu_top', 'diff', 'function_stats', 'heap_top', 'list_processes', 'slowest_calls',
        'threads', 'trace_summary']);
    await checkTools(client, demo, path.join(baseDir, 'stats.json'), args.heap !== 'no');
    await checkErrors(client, McpError);
    console.log(`mcp_test: ${tools.length} tools called through the SDK client, errors checked`);
  } finally {
    clearTimeout(limit);
    await client.close().catch(() => {});
    demo.kill('SIGTERM');
  }
}

main().catch((error) => {
  console.error(`mcp_test: ${error.stack || error}`);
  process.exit(1);
});

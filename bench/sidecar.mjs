// MCP sidecar benchmark: 1,000 small JSON-RPC calls (MCP `ping`, then `tools/call echo`) from
// Python to the real server-everything (Streamable HTTP on 127.0.0.1), made
//   1. directly on the host over TCP (the baseline, no relay),
//   2. on the host through a session's sidecar socket (the relay's own cost),
//   3. from inside the runsc sandbox through the sidecar (what sandboxed code sees),
// for the sidecar as a runc container (default) and as a child process; plus requests per second
// through one sidecar with 8 concurrent clients. The same Python client (sandbox_mcp.py, the
// helper sandboxes import) makes every call, so the rows differ only in the path.
//
// Env: SANDBOX_MCP_BIN (required), BENCH_RESULTS_DIR (default bench/results), BENCH_PID_FILE,
// BENCH_SCALE (multiplies the call counts). bench/run.sh runs it after bench.mjs.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectStdio, containersOfSession, waitFor } from '../tests/e2e/harness.mjs';
import { startEverything } from '../tests/e2e/upstreams.mjs';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(BENCH_DIR);
const RESULTS_DIR = process.env.BENCH_RESULTS_DIR || path.join(BENCH_DIR, 'results');
const SCALE = Number(process.env.BENCH_SCALE || 1);
const CALLS = Math.max(50, Math.round(1000 * SCALE));
const THREADS = 8;
const HELPER_DIR = path.join(REPO, 'mcp_server', 'sandbox', 'python');

// The measuring loop, the same on the host and in the sandbox. Prints one JSON line.
function loop(url, proxySocket) {
  const kw = proxySocket === undefined ? '' : `, proxy_socket=${JSON.stringify(proxySocket)}`;
  return `
import json, threading, time
from sandbox_mcp import connect

def pct(values, p):
    s = sorted(values)
    return s[min(len(s), max(1, -(-p * len(s) // 100))) - 1]

def series(client, call, n):
    for _ in range(min(50, n)):
        call(client)  # warm-up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        call(client)
        out.append((time.perf_counter() - t) * 1000)
    return {"n": n, "p50": pct(out, 50), "p99": pct(out, 99), "mean": sum(out) / n}

ping = lambda c: c.ping()
echo = lambda c: c.call_tool("echo", {"message": "x"})
client = connect(${JSON.stringify(url)}${kw})
result = {"ping": series(client, ping, ${CALLS}), "echo": series(client, echo, ${CALLS})}

clients = [connect(${JSON.stringify(url)}${kw}) for _ in range(${THREADS})]
per_thread = max(1, ${CALLS} // ${THREADS})
def worker(c):
    for _ in range(per_thread):
        c.ping()
threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
t = time.perf_counter()
for th in threads: th.start()
for th in threads: th.join()
result["rps"] = per_thread * ${THREADS} / (time.perf_counter() - t)
print(json.dumps(result))
`;
}

function hostPython(code) {
  const out = execFileSync('python3', ['-c', code], {
    env: { ...process.env, PYTHONPATH: HELPER_DIR },
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(out.toString().trim().split('\n').pop());
}

// Runs Python in a session: { value: the JSON its last stdout line prints, sessionId }.
async function sandboxPython(client, args) {
  const res = await client.callTool({ name: 'run_code', arguments: { timeout: 600, ...args } });
  if (res.isError) throw new Error(res.content[0].text);
  const sc = res.structuredContent;
  if (sc.status !== 'success') throw new Error(`benchmark code failed:\n${sc.stderr}`);
  return { value: JSON.parse(sc.stdout.trim().split('\n').pop()), sessionId: sc.session_id };
}

// The host path of the session's sidecar socket (the server's run-time directory).
function hostSocketOf(sessionId) {
  const root = '/run/sandbox-mcp';
  for (const instance of fs.readdirSync(root)) {
    const dir = path.join(root, instance);
    if (!fs.statSync(dir).isDirectory()) continue;
    for (const session of fs.readdirSync(dir)) {
      const audit = path.join(dir, session, 'audit.jsonl');
      if (fs.existsSync(audit) && fs.readFileSync(audit, 'utf8').includes(`"session":"${sessionId}"`)) {
        return path.join(dir, session, 'sock', 'mcp.sock');
      }
    }
  }
  throw new Error(`no sidecar directory found for session ${sessionId}`);
}

async function measureMode(mode, everything, rows) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-'));
  const config = path.join(dir, 'config.json');
  // A loopback upstream is the operator's to grant (a call's own list may name public hosts only).
  const allowlist = [`${new URL(everything.url).origin}/`];
  fs.writeFileSync(config, JSON.stringify({ mcp: { allowlist, sidecar: { mode } } }));
  const conn = await connectStdio(['--config', config]);
  if (process.env.BENCH_PID_FILE) fs.appendFileSync(process.env.BENCH_PID_FILE, `${conn.transport.pid}\n`);
  try {
    const started = Date.now();
    const { sessionId: session } = await sandboxPython(conn.client, { mcp_allowlist: [everything.url], code: 'print("{}")' });
    rows.push({ name: `session create with sidecar (${mode})`, unit: 'ms', value: Date.now() - started });
    const { value: inSandbox } = await sandboxPython(conn.client, { session_id: session, code: loop(everything.url) });
    const viaSocket = hostPython(loop(everything.url, hostSocketOf(session)));
    for (const kind of ['ping', 'echo']) {
      rows.push({ name: `${kind}: host -> sidecar socket (${mode}) -> upstream`, ...viaSocket[kind] });
      rows.push({ name: `${kind}: runsc sandbox -> sidecar (${mode}) -> upstream`, ...inSandbox[kind] });
    }
    rows.push({ name: `ping rps, ${THREADS} clients, host -> sidecar (${mode})`, unit: 'rps', value: viaSocket.rps });
    rows.push({ name: `ping rps, ${THREADS} clients, sandbox -> sidecar (${mode})`, unit: 'rps', value: inSandbox.rps });
    await conn.client.callTool({ name: 'cleanup_session', arguments: { session_id: session } });
    await waitFor(async () => (await containersOfSession(session)).length === 0, 15000, 'cleanup');
  } finally {
    await conn.client.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function fmt(x) {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

async function main() {
  const everything = await startEverything();
  const rows = [];
  try {
    const direct = hostPython(loop(everything.url, ''));
    for (const kind of ['ping', 'echo']) rows.push({ name: `${kind}: host -> upstream directly (baseline)`, ...direct[kind] });
    rows.push({ name: `ping rps, ${THREADS} clients, host -> upstream directly`, unit: 'rps', value: direct.rps });
    for (const mode of ['container', 'process']) await measureMode(mode, everything, rows);
  } finally {
    await everything.stop();
  }
  const baseline = Object.fromEntries(
    ['ping', 'echo'].map((k) => [k, rows.find((r) => r.name.startsWith(`${k}: host -> upstream directly`))]));
  const lines = [
    `## MCP sidecar: ${CALLS} calls per row to server-everything on 127.0.0.1 (${new Date().toISOString()})`,
    '',
    '| path | n | p50 ms | p99 ms | added at p50 vs direct | ratio p50 |',
    '|---|---|---|---|---|---|',
  ];
  for (const row of rows.filter((r) => r.p50 !== undefined)) {
    const base = baseline[row.name.split(':')[0]];
    lines.push(`| ${row.name} | ${row.n} | ${fmt(row.p50)} | ${fmt(row.p99)} | ${row === base ? '—' : `+${fmt(row.p50 - base.p50)} ms`} | ${fmt(row.p50 / base.p50)}x |`);
  }
  lines.push('', '| measure | value |', '|---|---|');
  for (const row of rows.filter((r) => r.p50 === undefined)) lines.push(`| ${row.name} | ${fmt(row.value)} ${row.unit} |`);
  const markdown = `${lines.join('\n')}\n`;
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.writeFileSync(path.join(RESULTS_DIR, 'sidecar.md'), markdown);
  fs.writeFileSync(path.join(RESULTS_DIR, 'sidecar.json'), JSON.stringify({ calls: CALLS, rows }, null, 2));
  process.stdout.write(`\n${markdown}`);
}

await main();

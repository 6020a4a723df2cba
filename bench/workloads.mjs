// Real code, not `1+1`: the same Python workloads run through run_code in a sandbox and in a plain
// runc container of the same image with the same limits (1 CPU, 512 MiB, network none, a tmpfs
// /tmp), in one run; and, as the floor gVisor itself sets, in a plain container of the same image
// and limits on the same gVisor runtime (no agent, no server: `docker exec python3`). Each workload is timed inside the Python process (its untimed set-up first),
// so neither container start nor the MCP round trip is counted; the printing workloads also report
// what a client waits for run_code to return. Prints each workload's medians, the ratio and the
// geometric mean; results in bench/results/workloads.{md,json}. See bench/README.md.
//   BENCH_SCALE=0.4 node bench/workloads.mjs    fewer samples
//   BENCH_WORKLOADS=print,spawn node ...        only some workloads
//   BENCH_PLATFORM=ptrace ...                   the sandbox side on another gVisor platform
//                                               (sandbox.platform; scripts/setup.sh registers them)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  SERVER_BIN, connectHttp, startHttpServer, stopServer,
} from '../tests/e2e/harness.mjs';
import {
  SCALE, docker, finishBenchmark, fmt, machineInfo, managedContainersOf, summarize, timed,
} from './lib.mjs';

const IMAGE = process.env.SANDBOX_IMAGE_TAG || 'sandbox-mcp/python:latest';
const PLATFORM = process.env.BENCH_PLATFORM || '';
const BASELINE_LABEL = 'sandbox-mcp.bench=1';
const samples = Math.max(2, Math.round(5 * SCALE));
const log = (msg) => process.stderr.write(`bench: ${msg}\n`);

// name, what it does, untimed set-up, timed body (Python; `i` is the sample's number).
const WORKLOADS = [
  ['print', 'print 20,000 lines in a loop', '', 'for n in range(20000):\n    print("line", n)'],
  ['python_loop', 'a pure-Python loop of 3M additions', '',
    's = 0\nfor n in range(3_000_000):\n    s += n * n'],
  ['numpy_fresh', '`np.ones(25_000_000).sum()` (200 MB of fresh memory)', 'import numpy as np',
    'np.ones(25_000_000).sum()'],
  ['matmul', 'an 800×800 float64 matmul', 'import numpy as np\na = np.random.rand(800, 800)',
    '(a @ a).sum()'],
  ['groupby', 'a pandas groupby of 1M rows',
    'import numpy as np, pandas as pd\n' +
    'df = pd.DataFrame({"k": np.random.randint(0, 1000, 1_000_000), "v": np.random.rand(1_000_000)})',
    'df.groupby("k")["v"].agg(["mean", "sum", "count"])'],
  ['read_csv', '`pd.read_csv` of 20 MB',
    'import numpy as np, pandas as pd\n' +
    'pd.DataFrame(np.random.rand(200_000, 6)).to_csv("/tmp/bench.csv", index=False)',
    'pd.read_csv("/tmp/bench.csv")'],
  ['matplotlib', 'a matplotlib line plot saved as PNG',
    'import io\nimport matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt',
    'fig, ax = plt.subplots()\nax.plot(range(1000))\nfig.savefig(io.BytesIO(), format="png")\n' +
    'plt.close(fig)'],
  ['small_files', 'write then read 1,000 small files in /tmp',
    'import os, shutil\nd = "/tmp/bench-files-%d" % i\nshutil.rmtree(d, ignore_errors=True)\n' +
    'os.makedirs(d)',
    'for n in range(1000):\n    with open("%s/%d.txt" % (d, n), "w") as f:\n        f.write("x" * 100)\n' +
    'for n in range(1000):\n    with open("%s/%d.txt" % (d, n)) as f:\n        f.read()'],
  ['spawn', '20 × `subprocess.run(["true"])`', 'import subprocess',
    'for n in range(20):\n    subprocess.run(["true"], check=True)'],
  ['import_pandas', 'a fresh `python3 -c "import pandas"`', 'import subprocess, sys',
    'subprocess.run([sys.executable, "-c", "import pandas"], check=True)'],
  ['git', '`git` init, add and commit of 200 small files',
    'import os, shutil, subprocess\nd = "/tmp/bench-git-%d" % i\nshutil.rmtree(d, ignore_errors=True)\n' +
    'os.makedirs(d)\nfor n in range(200):\n    with open("%s/f%d.txt" % (d, n), "w") as f:\n' +
    '        f.write("content %d\\n" % n)\n' +
    'git = ["git", "-C", d, "-c", "user.name=bench", "-c", "user.email=b@example.invalid"]',
    'subprocess.run(git + ["init", "-q"], check=True)\n' +
    'subprocess.run(git + ["add", "."], check=True)\n' +
    'subprocess.run(git + ["commit", "-q", "-m", "bench"], check=True)'],
  ['sqlite', '100,000 `sqlite3` inserts in one transaction (a file in /tmp)',
    'import os, sqlite3\np = "/tmp/bench-%d.db" % i\nif os.path.exists(p): os.remove(p)\n' +
    'db = sqlite3.connect(p)\ndb.execute("create table t (a integer, b text)")',
    'with db:\n    db.executemany("insert into t values (?, ?)", ((n, "row") for n in range(100_000)))'],
].filter(([name]) => !process.env.BENCH_WORKLOADS || process.env.BENCH_WORKLOADS.split(',').includes(name));

// The workload as a script: set-up, then the timed body (output flushed inside the timing).
function script(setup, body, sample) {
  return [`i = ${sample}`, 'import sys as _bs, time as _bt', setup, '_t0 = _bt.perf_counter()', body,
    '_bs.stdout.flush()', '_bs.stderr.flush()', '_bench_ms = (_bt.perf_counter() - _t0) * 1000'].join('\n');
}

const GVISOR_RUNTIME = PLATFORM ? `runsc-${PLATFORM}` : 'runsc';

async function startBaseline(runtime) {
  const id = (await docker(['run', '-d', '--rm', `--runtime=${runtime}`, '--network', 'none',
    '--memory', '512m', '--memory-swap', '512m', '--cpus', '1', '--pids-limit', '256',
    '--read-only', '--tmpfs', '/tmp:rw,exec,size=256m', '--tmpfs', '/workspace:rw,exec,size=256m',
    '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--user', '65534:65534',
    '--label', BASELINE_LABEL, IMAGE, 'sleep', 'infinity'])).toString().trim();
  return id;
}

async function baselineSample(id, setup, body, sample) {
  const code = `${script(setup, body, sample)}\nprint("__BENCH_MS__=%f" % _bench_ms, file=_bs.stderr)`;
  const out = await new Promise((resolve, reject) => {
    const child = spawn('docker', ['exec', '-i', id, 'python3', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const err = [];
    child.stdout.resume();
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (status) => {
      const text = Buffer.concat(err).toString();
      if (status !== 0) reject(new Error(`baseline ${id} exited ${status}: ${text.slice(-800)}`));
      else resolve(text);
    });
    child.stdin.end(code);
  });
  const match = /__BENCH_MS__=([0-9.]+)/.exec(out);
  if (!match) throw new Error(`baseline printed no timing: ${out.slice(-800)}`);
  return Number(match[1]);
}

async function sandboxSample(client, sessionId, setup, body, sample, onprogress) {
  const args = { code: `${script(setup, body, sample)}\n_bench_ms`, session_id: sessionId, timeout: 300 };
  const { ms, value } = await timed(() => client.callTool({ name: 'run_code', arguments: args },
    undefined, { timeout: 600000, ...(onprogress ? { onprogress } : {}) }));
  const out = value.structuredContent;
  if (value.isError || out?.status !== 'success') {
    throw new Error(`run_code failed: ${JSON.stringify(value).slice(0, 800)}`);
  }
  return { inside: Number(out.result), call: ms };
}

const series = new Map();
function record(name, ms) {
  if (!series.has(name)) series.set(name, []);
  series.get(name).push(ms);
}

function report(info) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const md = [`# sandbox-mcp workload benchmark, ${info.date}`, ''];
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), docker ${info.docker}, runsc ${info.runsc}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push(`- image ${IMAGE}; gVisor platform ${PLATFORM || '(the engine\'s runsc)'}; baseline: ` +
    '`docker run --runtime=runc` with the same limits; gVisor alone: the same container on ' +
    `\`--runtime=${GVISOR_RUNTIME}\` (the floor without the agent); each workload timed inside ` +
    `Python, median of ${samples}`, '');
  md.push('| workload | sandbox ms | gVisor alone ms | runc ms | ratio | gVisor alone / runc |',
    '|---|--:|--:|--:|--:|--:|');
  const ratios = [];
  const floors = [];
  for (const [name, what] of WORKLOADS) {
    const s = stats[`${name}.sandbox`];
    const g = stats[`${name}.gvisor`];
    const b = stats[`${name}.runc`];
    if (!s || !g || !b) continue;
    ratios.push(s.p50 / b.p50);
    floors.push(g.p50 / b.p50);
    md.push(`| ${what} | ${fmt(s.p50)} | ${fmt(g.p50)} | ${fmt(b.p50)} | ` +
      `${(s.p50 / b.p50).toFixed(1)}x | ${(g.p50 / b.p50).toFixed(1)}x |`);
  }
  const geo = (xs) => Math.exp(xs.reduce((a, r) => a + Math.log(r), 0) / xs.length);
  const geomean = geo(ratios);
  md.push(`| **geometric mean** | | | | **${geomean.toFixed(2)}x** | **${geo(floors).toFixed(2)}x** |`, '');
  const calls = [['print.call', 'run_code printing 20,000 lines, as the client waits for it'],
    ['print50k.call', 'run_code printing 50,000 lines'],
    ['print50k_streamed.call', 'run_code printing 50,000 lines, streamed (progress requested)']];
  md.push('| whole call | p50 ms | max ms |', '|---|--:|--:|');
  for (const [key, what] of calls) {
    if (stats[key]) md.push(`| ${what} | ${fmt(stats[key].p50)} | ${fmt(stats[key].max)} |`);
  }
  return { md: `${md.join('\n')}\n`, json: { info, platform: PLATFORM, geomean, gvisor_geomean: geo(floors), stats, samples: Object.fromEntries(series) } };
}

async function main() {
  const info = machineInfo();
  log(`server ${SERVER_BIN}; ${WORKLOADS.length} workloads × ${samples} samples per side`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-bench-'));
  const config = path.join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({
    // No warm pool: a pool refilling itself (a container starting, numpy and pandas preloading)
    // after the session is claimed would take CPU from the first workloads.
    pool: { size: 0 }, execution: { max_timeout_s: 600 },
    sandbox: PLATFORM ? { platform: PLATFORM } : {},
  }));
  let server;
  let conn;
  let baseline;
  let floor;
  let failure;
  try {
    server = await startHttpServer(['--config', config]);
    conn = await connectHttp(server.url);
    baseline = await startBaseline('runc');
    floor = await startBaseline(GVISOR_RUNTIME);
    const first = await conn.client.callTool({ name: 'run_code', arguments: { code: '1' } });
    const sessionId = first.structuredContent.session_id;
    for (const [name, , setup, body] of WORKLOADS) {
      // Alternate the sides so a burst of load on the shared machine hits both alike.
      for (let n = 0; n < samples; n++) {
        const s = await sandboxSample(conn.client, sessionId, setup, body, n);
        record(`${name}.sandbox`, s.inside);
        record(`${name}.call`, s.call);
        record(`${name}.gvisor`, await baselineSample(floor, setup, body, n));
        record(`${name}.runc`, await baselineSample(baseline, setup, body, n));
      }
      const p50 = (side) => fmt(summarize(series.get(`${name}.${side}`)).p50);
      log(`${name}: sandbox ${p50('sandbox')} ms, gVisor alone ${p50('gvisor')} ms, runc ${p50('runc')} ms`);
    }
    if (!process.env.BENCH_WORKLOADS || process.env.BENCH_WORKLOADS.split(',').includes('print')) {
      const body = 'for n in range(50000):\n    print("line", n)';
      for (let n = 0; n < samples; n++) {
        record('print50k.call', (await sandboxSample(conn.client, sessionId, '', body, n)).call);
        let events = 0;
        const streamed = await sandboxSample(conn.client, sessionId, '', body, n, () => { events += 1; });
        record('print50k_streamed.call', streamed.call);
        record('print50k_streamed.events', events);
      }
    }
  } catch (error) {
    failure = error;
  } finally {
    await conn?.client.close().catch(() => {});
    for (const id of [baseline, floor]) if (id) await docker(['rm', '-f', id]).catch(() => {});
    if (server) {
      await stopServer(server);
      const left = await managedContainersOf(server.pid);
      if (left.length) log(`WARNING: ${left.length} sandbox containers left behind`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  finishBenchmark('workloads', failure, info, report, log);
}

await main();

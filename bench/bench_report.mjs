// The report of bench.mjs: its rows (each series against its baseline), the breakdown of a warm
// run_code, and the goals, as Markdown for people and JSON for later comparison.
import { SCALE, fmt, fmtRatio, summarize } from './lib.mjs';

// Where one warm run_code's time goes, per call (differences of nested intervals, each measured
// where it starts and ends): the client and transport (client total minus the server's time in
// the tool call), the server itself (minus the agent round trip), the channel to the agent (docker
// socket and gVisor, minus the agent's time), the agent and the interpreter's protocol (minus the
// code's own run time), and the execution.
export const BREAKDOWN = [
  ['client, SDK and transport', (c, t) => c - t.server_ms],
  ['server (MCP, tool, sessions)', (c, t) => t.server_ms - t.channel_ms],
  ['server <-> agent (channel socket, gVisor)', (c, t) => t.channel_ms - t.agent_ms],
  ['agent <-> interpreter (queue, pipes, driver)', (c, t) => t.agent_ms - t.exec_ms],
  ['execution of 1+1 (exec/eval in the interpreter)', (c, t) => t.exec_ms],
  ['total on the client', (c) => c],
];

export function recordBreakdown(record, side, clientMs, timing) {
  if (!timing || timing.exec_ms === undefined) return;
  for (const [what, part] of BREAKDOWN) record(`breakdown.${side}.${what}`, part(clientMs, timing));
}

function breakdownTable(stats) {
  const lines = ['| part of a warm run_code("1+1") | stdio p50 | HTTP p50 |', '|---|--:|--:|'];
  for (const [what] of BREAKDOWN) {
    const cell = (side) => {
      const s = stats[`breakdown.${side}.${what}`];
      return s ? fmt(s.p50) : 'n/a';
    };
    lines.push(`| ${what} | ${cell('stdio')} | ${cell('http')} |`);
  }
  return lines;
}

const DOCKER_PY = "docker exec <container> python3 -c 'print(1+1)'";
const JUPYTER = 'Jupyter kernel execute("1+1") round trip (ipykernel, no container)';
const ROWS = [
  { id: '1', what: 'run_code("1+1") warm, HTTP', ours: 'run_code.http',
    base: 'docker_exec_python.http', baseWhat: DOCKER_PY },
  { id: '1j', what: '″', ours: 'run_code.http', base: 'jupyter_execute', baseWhat: JUPYTER },
  { id: '2', what: 'run_code("1+1") warm, stdio', ours: 'run_code.stdio',
    base: 'docker_exec_python.stdio', baseWhat: DOCKER_PY },
  { id: '2j', what: '″', ours: 'run_code.stdio', base: 'jupyter_execute', baseWhat: JUPYTER },
  { id: '3', what: 'run_shell("true") warm, HTTP', ours: 'run_shell.http',
    base: 'docker_exec.run_shell', baseWhat: 'docker exec <container> true' },
  { id: '3p', what: 'run_shell("true") warm, HTTP, 100 ms between calls', ours: 'run_shell_paced.http',
    base: 'docker_exec.run_shell_paced', baseWhat: 'docker exec <container> true (same pauses)' },
  { id: '4a', what: 'new session from the warm pool + run_code("1+1"), HTTP', ours: 'pool_run_code.http',
    base: 'docker_run.runsc.python', baseWhat: 'docker run --rm runsc python3 -c pass' },
  { id: '4b', what: '″', ours: 'pool_run_code.http',
    base: 'docker_run.runsc.true', baseWhat: 'docker run --rm runsc true' },
  { id: '4c', what: '″', ours: 'pool_run_code.http',
    base: 'docker_run.runc.python', baseWhat: 'docker run --rm runc python3 -c pass' },
  { id: '4d', what: 'cold: new session (container created) + run_code("1+1"), HTTP', ours: 'cold_run_code.http',
    base: 'docker_run.runsc.python', baseWhat: 'docker run --rm runsc python3 -c pass' },
  { id: '4e', what: '″', ours: 'cold_run_code.http',
    base: 'docker_run.runsc.true', baseWhat: 'docker run --rm runsc true' },
  { id: '4f', what: '″', ours: 'cold_run_code.http',
    base: 'docker_run.runc.true', baseWhat: 'docker run --rm runc true' },
  { id: '5a', what: 'upload_file 1 KiB (base64), HTTP', ours: 'upload_1k.http',
    base: 'docker_upload_1k', baseWhat: "docker exec -i <c> sh -c 'cat > f' (1 KiB)" },
  { id: '5b', what: 'upload_file 1 MiB (base64), HTTP', ours: 'upload_1m.http',
    base: 'docker_upload_1m', baseWhat: "docker exec -i <c> sh -c 'cat > f' (1 MiB)" },
  { id: '5c', what: 'upload_file 10 MiB (base64), HTTP', ours: 'upload_10m.http',
    base: 'docker_upload_10m', baseWhat: "docker exec -i <c> sh -c 'cat > f' (10 MiB)" },
  { id: '5d', what: 'download_file 1 MiB (base64), HTTP', ours: 'download_1m.http',
    base: 'docker_download_1m', baseWhat: 'docker exec <c> cat f (1 MiB)' },
  { id: '5e', what: 'download_file 10 MiB (base64), HTTP', ours: 'download_10m.http',
    base: 'docker_download_10m', baseWhat: 'docker exec <c> cat f (10 MiB)' },
  { id: '6a', what: 'run_code("1+1") as a task (create + tasks/result), warm, HTTP', ours: 'run_code_task.http',
    base: 'run_code_plain.http', baseWhat: 'the same run_code as a plain tools/call (interleaved)' },
  { id: '6b', what: 'run_code("1+1") as a task (create + tasks/result), warm, stdio', ours: 'run_code_task.stdio',
    base: 'run_code_plain.stdio', baseWhat: 'the same run_code as a plain tools/call (interleaved)' },
];
const INFO_ROWS = [
  { what: 'run_code("1+1") warm, raw HTTP POST without the SDK (same MCP session)', key: 'run_code.raw_http' },
  { what: 'cleanup_session (after each cold run), HTTP', key: 'cleanup_session.http' },
  { what: 'run_code duration_ms reported by the server, HTTP', key: 'run_code.http.server_duration' },
  { what: 'run_code duration_ms reported by the server, stdio', key: 'run_code.stdio.server_duration' },
  { what: 'run_shell duration_ms reported by the server, HTTP', key: 'run_shell.http.server_duration' },
  { what: 'run_shell duration_ms reported by the server, HTTP, paced', key: 'run_shell_paced.http.server_duration' },
];

// Markdown and JSON of one run; `series` maps each series name to its samples (ms).
export function buildReport(info, series) {
  const stats = Object.fromEntries([...series].map(([k, v]) => [k, summarize(v)]));
  const rows = ROWS.map((row) => {
    const ours = stats[row.ours];
    const base = stats[row.base];
    return { ...row, ours_stats: ours, base_stats: base, ratio_p50: base.p50 / ours.p50,
      ratio_mean: base.mean / ours.mean };
  });
  const row = (id) => rows.find((r) => r.id === id);
  const goal = (text, ok, detail) => `${text}: ${ok ? 'met' : 'NOT met'} (${detail})`;
  const p50 = (id) => row(id).ours_stats.p50;
  const info50 = (key) => stats[key]?.p50 ?? NaN;
  const goals = [
    goal('warm-pool session to first result, p50 under 20 ms', p50('4a') < 20, `${fmt(p50('4a'))} ms`),
    goal('run_code warm over stdio, p50 under 1 ms', p50('2') < 1, `${fmt(p50('2'))} ms`),
    goal('run_code warm over HTTP through the SDK, p50 under 2.5 ms', p50('1') < 2.5, `${fmt(p50('1'))} ms`),
    goal('run_code warm as a raw keep-alive POST, p50 under 1.2 ms', info50('run_code.raw_http') < 1.2,
      `${fmt(info50('run_code.raw_http'))} ms`),
    goal('server-reported duration_ms of run_code, p50 under 0.4 ms',
      info50('run_code.stdio.server_duration') < 0.4, `${fmt(info50('run_code.stdio.server_duration'))} ms`),
    goal('run_code at least 40× faster than docker exec (p50, stdio and HTTP)',
      row('1').ratio_p50 >= 40 && row('2').ratio_p50 >= 40,
      `${row('2').ratio_p50.toFixed(1)}× stdio, ${row('1').ratio_p50.toFixed(1)}× HTTP`),
    goal('run_code at least 2× faster than a bare Jupyter kernel execute (p50, stdio and HTTP)',
      row('1j').ratio_p50 >= 2 && row('2j').ratio_p50 >= 2,
      `${row('2j').ratio_p50.toFixed(2)}× stdio, ${row('1j').ratio_p50.toFixed(2)}× HTTP`),
    goal('run_shell("true") p50 under 6 ms, back to back / paced', p50('3') < 6 && p50('3p') < 6,
      `${fmt(p50('3'))} ms / ${fmt(p50('3p'))} ms`),
    goal('upload_file 10 MiB under 150 ms (p50)', p50('5c') < 150, `${fmt(p50('5c'))} ms`),
    goal('download_file 10 MiB under 150 ms (p50)', p50('5e') < 150, `${fmt(p50('5e'))} ms`),
  ];
  const md = [];
  md.push(`# sandbox-mcp benchmark, ${info.date}`, '');
  md.push(`- machine: ${info.nproc} CPUs (${info.cpu}), ${info.kernel}`);
  md.push(`- docker ${info.docker}, runsc ${info.runsc}, node ${info.node}, ` +
    `@modelcontextprotocol/sdk ${info.sdk}`);
  md.push(`- load average (1/5/15 min): ${info.load_start} at start, ${info.load_end} at end`);
  md.push('- **shared, noisy machine**: other engineers may be building at the same time. ' +
    'Each measurement is interleaved in rounds with its baseline, so ratios are fairer than ' +
    'absolute numbers; compare ratios across runs, not milliseconds.');
  md.push('- ratio = baseline p50 / sandbox-mcp p50 (> 1: sandbox-mcp is faster). ' +
    'All times are wall-clock ms on the client (process.hrtime.bigint); with n < 100, p99 is the max.');
  md.push('');
  md.push('| # | sandbox-mcp | n | p50 | p99 | mean | baseline | n | p50 | p99 | mean | ratio (p50) |');
  md.push('|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    const o = r.ours_stats;
    const b = r.base_stats;
    md.push(`| ${r.id} | ${r.what} | ${o.n} | ${fmt(o.p50)} | ${fmt(o.p99)} | ${fmt(o.mean)} | ` +
      `${r.baseWhat} | ${b.n} | ${fmt(b.p50)} | ${fmt(b.p99)} | ${fmt(b.mean)} | ${fmtRatio(r.ratio_p50)} |`);
  }
  md.push('', '| for context | n | p50 | p99 | mean |', '|---|--:|--:|--:|--:|');
  for (const r of INFO_ROWS) {
    const s = stats[r.key];
    if (s) md.push(`| ${r.what} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.mean)} |`);
  }
  md.push('', 'Where a warm run_code goes (p50 of each part, from the result\'s _meta ' +
    '"sandbox-mcp/timing"; the parts are per-call differences, so their p50s need not add up):', '',
    ...breakdownTable(stats));
  md.push('', 'Goals (reported, not asserted):', ...goals.map((g) => `- ${g}`), '');
  const json = {
    machine: info,
    scale: SCALE,
    rows: rows.map((r) => ({
      id: r.id, measurement: r.what, series: r.ours, stats: r.ours_stats,
      baseline: r.baseWhat, baseline_series: r.base, baseline_stats: r.base_stats,
      ratio_p50: r.ratio_p50, ratio_mean: r.ratio_mean,
    })),
    goals,
    stats,
    samples_ms: Object.fromEntries(series),
  };
  return { md: md.join('\n'), json };
}

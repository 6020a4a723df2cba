// The Jupyter kernel baseline: bench/jupyter_kernel.py runs a bare ipykernel (no container) and
// times its execute("1+1") round trips. One kernel for the whole run; run(n) asks it for n.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { BENCH_DIR } from './lib.mjs';

export function startJupyterKernel() {
  const child = spawn('/usr/bin/python3', [path.join(BENCH_DIR, 'jupyter_kernel.py')],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  const replies = [];
  let waiter = null;
  let buffered = '';
  let exited = null;
  const deliver = (item) => {
    if (waiter) { const w = waiter; waiter = null; w(item); } else replies.push(item);
  };
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      deliver(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
  });
  const gone = new Promise((resolve) => child.on('exit', (code) => { exited = code; resolve(); deliver(null); }));
  const next = async (what) => {
    const reply = replies.length ? replies.shift() : await new Promise((resolve) => { waiter = resolve; });
    if (reply === null) {
      throw new Error(`jupyter_kernel.py exited (${exited}) before ${what}: are python3-ipykernel ` +
        'and python3-jupyter-client installed? (bench/run.sh installs them)');
    }
    return reply;
  };
  return {
    ready: () => next('the kernel was ready'),
    async run(n) {
      child.stdin.write(`${n}\n`);
      return next('answering');
    },
    async close() {
      if (exited === null) child.stdin.end();
      await gone;
    },
  };
}

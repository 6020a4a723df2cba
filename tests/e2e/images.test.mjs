// The sandbox images end to end (official MCP client, real server, dockerd, runsc): the default
// image has the data stack and the command-line tools agents reach for first; the minimal image
// (docker/build-images.sh --minimal) still runs Python, and JavaScript there says which image has
// Node.js.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectStdio, waitFor } from './harness.mjs';
import { call } from './flow.mjs';

const MINIMAL_IMAGE = 'sandbox-mcp/python-minimal:latest';

function writeConfig(config) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-e2e-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(config));
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe('the default image', () => {
  let conn;
  before(async () => {
    conn = await connectStdio();
  });
  after(async () => {
    await conn?.client.close();
  });

  test('has numpy, pandas, matplotlib (Agg), scipy and pillow', async () => {
    const res = await call(conn.client, 'run_code', {
      code: [
        'import numpy as np, pandas as pd, scipy.stats, PIL.Image',
        'import matplotlib, matplotlib.pyplot as plt',
        "fig, ax = plt.subplots(); ax.plot(np.arange(5) ** 2); fig.savefig('/tmp/p.png')",
        "df = pd.DataFrame({'x': np.arange(4)}); df['y'] = df.x * 2",
        "(matplotlib.get_backend(), int(df.y.sum()), round(float(scipy.stats.norm.cdf(0)), 2),",
        " PIL.Image.open('/tmp/p.png').format)",
      ].join('\n'),
    });
    assert.equal(res.structuredContent.status, 'success', res.structuredContent.stderr);
    assert.equal(res.structuredContent.result, "('agg', 12, 0.5, 'PNG')");
    await call(conn.client, 'cleanup_session', { session_id: res.structuredContent.session_id });
  });

  test('a session from the warm pool starts with the data stack imported and no names bound', async () => {
    // The pool refills in the background (preload included); a session made cold does not count.
    let warm;
    await waitFor(async () => {
      const res = await call(conn.client, 'run_code', {
        code: "m = __import__('sys').modules\n" +
          "[k in m for k in ('numpy', 'pandas', 'matplotlib.pyplot')], " +
          "sorted(k for k in globals() if not k.startswith('_'))",
      });
      const sid = res.structuredContent.session_id;
      const stats = await call(conn.client, 'get_session_stats', { session_id: sid });
      if (stats.structuredContent.warm_start) warm = res.structuredContent;
      await call(conn.client, 'cleanup_session', { session_id: sid });
      if (warm === undefined) await new Promise((r) => setTimeout(r, 2000)); // let the pool refill
      return warm !== undefined;
    }, 120000, 'a session from the warm pool');
    assert.equal(warm.status, 'success', warm.stderr);
    assert.equal(warm.result, "([True, True, True], ['m'])");
  });

  test('has node, ps, git, jq, sqlite3, file, zip and unzip on PATH', async () => {
    const res = await call(conn.client, 'run_shell', {
      command: [
        'set -e',
        'node -e "console.log(typeof require)"',
        'ps -o pid= -p $$ >/dev/null && echo ps',
        'git init -q /tmp/repo && git -C /tmp/repo status --short && echo git',
        "echo '{\"a\": [1, 2]}' | jq -c '.a | add'",
        "sqlite3 :memory: 'select 6 * 7'",
        'echo hi > /tmp/f.txt && (cd /tmp && zip -q f.zip f.txt && unzip -p f.zip) && file -b --mime-type /tmp/f.zip',
      ].join('\n'),
    });
    assert.equal(res.structuredContent.status, 'success', res.structuredContent.stderr);
    assert.equal(res.structuredContent.stdout, 'function\nps\ngit\n3\n42\nhi\napplication/zip\n');
    await call(conn.client, 'cleanup_session', { session_id: res.structuredContent.session_id });
  });
});

describe('the minimal image', () => {
  let conn;
  let config;
  before(async () => {
    config = writeConfig({ sandbox: { allowed_images: [MINIMAL_IMAGE] }, pool: { size: 0 } });
    conn = await connectStdio(['--config', config.file]);
  });
  after(async () => {
    await conn?.client.close();
    config?.remove();
  });

  test('runs Python without the data stack, and JavaScript says which image has Node.js', async () => {
    const py = await call(conn.client, 'run_code', {
      code: 'import json, sqlite3\njson.dumps({"n": 1 + 1})', image: MINIMAL_IMAGE,
    });
    assert.equal(py.structuredContent.status, 'success', py.structuredContent.stderr);
    assert.equal(py.structuredContent.result, '\'{"n": 2}\'');
    const sid = py.structuredContent.session_id;

    const numpy = await call(conn.client, 'run_code', { code: 'import numpy', session_id: sid });
    assert.equal(numpy.structuredContent.status, 'error');
    assert.match(numpy.structuredContent.stderr, /ModuleNotFoundError: No module named 'numpy'/);

    const js = await call(conn.client, 'run_code', {
      code: '1 + 1', language: 'javascript', session_id: sid,
    });
    assert.equal(js.isError, true, JSON.stringify(js));
    assert.match(js.content[0].text, /no `node` on PATH/);
    assert.match(js.content[0].text, /sandbox-mcp\/python:latest/);

    // The session is still usable.
    const again = await call(conn.client, 'run_code', { code: '2 * 21', session_id: sid });
    assert.equal(again.structuredContent.result, '42');
    await call(conn.client, 'cleanup_session', { session_id: sid });
  });
});

// The sandbox images end to end (official MCP client, real server, dockerd, runsc): the default
// image has the data stack, the command-line tools agents reach for first, and pip and npm that
// install as the sandbox user into the session; the minimal image
// (docker/build-images.sh --minimal) still runs Python, and JavaScript there says which image has
// Node.js.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectStdio, waitFor } from './harness.mjs';
import { call } from './flow.mjs';
import { buildNpmPackage, buildWheel } from './package_index.mjs';

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

  // No index needed: the packages are local files, built here and uploaded.
  test('pip and npm install as the sandbox user, and running interpreters use what they install', async () => {
    const upload = async (file, body, sid) => {
      const res = await call(conn.client, 'upload_file', {
        path: file, content: body.toString('base64'), encoding: 'base64', session_id: sid,
      });
      assert.equal(res.isError, false, JSON.stringify(res));
    };
    const py = await call(conn.client, 'run_code', { code: "import sys\n'late_a' in sys.modules" });
    const sid = py.structuredContent.session_id;
    for (const name of ['late_a', 'late_b']) {
      const wheel = buildWheel({ name, version: '1.0', source: `NAME = '${name}'\n` });
      await upload(wheel.file, wheel.body, sid);
    }
    // From the shell, between cells (the interpreter is already running) ...
    const shell = await call(conn.client, 'run_shell', {
      command: 'id -u && pip install -q --no-index late_a-1.0-py3-none-any.whl', session_id: sid,
    });
    assert.equal(shell.structuredContent.exit_code, 0, shell.structuredContent.stderr);
    // ... and from the cell that imports it.
    const imported = await call(conn.client, 'run_code', {
      session_id: sid,
      code: [
        'import late_a, site, subprocess, sys',
        "subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-index',",
        "                'late_b-1.0-py3-none-any.whl'], check=True)",
        'import late_b',
        '(late_a.NAME, late_b.NAME, late_b.__file__.startswith(site.getusersitepackages()))',
      ].join('\n'),
    });
    assert.equal(imported.structuredContent.status, 'success', imported.structuredContent.stderr);
    assert.equal(imported.structuredContent.result, "('late_a', 'late_b', True)");
    assert.match(shell.structuredContent.stdout, /^65534\n/);

    const tarball = buildNpmPackage({ name: 'late-js', version: '1.0.0',
      files: { 'index.js': "module.exports = 'late';\n" } });
    await upload('late-js-1.0.0.tgz', tarball.body, sid);
    const js = (code) => call(conn.client, 'run_code', { language: 'javascript', code, session_id: sid });
    const missing = await js("try { require('late-js') } catch (e) { e.code }");
    assert.equal(missing.structuredContent.result, "'MODULE_NOT_FOUND'");
    const npm = await call(conn.client, 'run_shell', {
      command: 'npm install --silent ./late-js-1.0.0.tgz && cd / && node -p \'require("late-js")\'',
      session_id: sid,
    });
    assert.equal(npm.structuredContent.exit_code, 0, npm.structuredContent.stderr);
    assert.equal(npm.structuredContent.stdout, 'late\n');
    const found = await js("require('late-js')");
    assert.equal(found.structuredContent.result, "'late'");
    await call(conn.client, 'cleanup_session', { session_id: sid });
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

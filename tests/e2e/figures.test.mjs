// Figures and tables as MCP content, with the official client over stdio against real sandboxes:
// a matplotlib figure arrives as an `image` block whose PNG decodes to the size the result states,
// within the server's limits, and the full-size file reads back through its sandbox:// resource;
// a DataFrame comes back as a compact table with its shape and dtypes; display() and _repr_png_
// work; the per-call image limit holds; images forged by user code are refused.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connectStdio } from './harness.mjs';
import { call } from './flow.mjs';

const MAX_PX = 1568; // images.max_px default
const MAX_BYTES = 1024 * 1024; // images.max_bytes default

function pngSize(bytes) {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

// Reads a blob resource whole, following its ranges.
async function readBlob(client, uri) {
  const parts = [];
  for (let next = uri; next;) {
    const { contents } = await client.readResource({ uri: next });
    assert.equal(contents.length, 1);
    assert.equal(contents[0].mimeType, 'image/png');
    parts.push(Buffer.from(contents[0].blob, 'base64'));
    next = contents[0]._meta?.['sandbox-mcp/range']?.next_uri;
  }
  return Buffer.concat(parts);
}

// The image blocks of a result, checked against structuredContent.images one by one.
function checkedImages(result) {
  const blocks = result.content.filter((c) => c.type === 'image');
  const listed = result.structuredContent.images ?? [];
  assert.equal(blocks.length, listed.length, 'one image block per listed image');
  return blocks.map((block, i) => {
    assert.equal(block.mimeType, 'image/png');
    const png = Buffer.from(block.data, 'base64');
    const size = pngSize(png);
    assert.equal(size.width, listed[i].sent_width);
    assert.equal(size.height, listed[i].sent_height);
    assert.equal(png.length, listed[i].sent_bytes);
    assert.ok(Math.max(size.width, size.height) <= MAX_PX, `${size.width}x${size.height} within ${MAX_PX} px`);
    assert.ok(png.length <= MAX_BYTES, `${png.length} bytes within ${MAX_BYTES}`);
    return { ...listed[i], png };
  });
}

let conn;
before(async () => {
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
});

test('a matplotlib figure comes back as image content; its full size reads back as a resource', async () => {
  const { client } = conn;
  const r = await call(client, 'run_code', {
    code: [
      'import matplotlib.pyplot as plt, numpy as np',
      'fig, ax = plt.subplots(figsize=(6, 4))',
      'ax.plot(np.sin(np.linspace(0, 6, 100)))',
      'plt.show()',
    ].join('\n'),
  });
  assert.equal(r.structuredContent.status, 'success', r.structuredContent.stderr);
  const sid = r.structuredContent.session_id;
  const [image] = checkedImages(r);
  assert.equal(r.structuredContent.images.length, 1);
  assert.equal(image.width, image.sent_width, 'small enough to be sent at full size');
  const prefix = `sandbox://${sid}/tmp/.sandbox-mcp/figures/`;
  assert.ok(image.uri.startsWith(prefix), image.uri);
  assert.match(image.uri.slice(prefix.length), /^figure-\d+-\d+-1\.png$/);
  const full = await readBlob(client, image.uri);
  assert.deepEqual(pngSize(full), { width: image.width, height: image.height });
  assert.equal(full.length, image.bytes);
  assert.ok(full.equals(image.png));
  const { resources } = await client.listResources();
  assert.ok(resources.some((res) => res.uri === image.uri && res.mimeType === 'image/png'), 'listed');

  // Shown figures are closed, as in a notebook: the next cell starts with none.
  const next = await call(client, 'run_code', { session_id: sid, code: 'plt.get_fignums()' });
  assert.equal(next.structuredContent.result, '[]');
  assert.equal(next.structuredContent.images, undefined);
  assert.equal(next.content.length, 1);
  await call(client, 'cleanup_session', { session_id: sid });
});

test('a figure past the limits is downscaled; the full size stays in the sandbox', async () => {
  const { client } = conn;
  const r = await call(client, 'run_code', {
    code: [
      'import matplotlib.pyplot as plt, numpy as np',
      'plt.figure(figsize=(40, 30), dpi=100)',
      'plt.imshow(np.random.default_rng(1).random((300, 400)))',
      'None',
    ].join('\n'),
  });
  assert.equal(r.structuredContent.status, 'success', r.structuredContent.stderr);
  const [image] = checkedImages(r);
  assert.ok(image.width > MAX_PX, `full size ${image.width} px wide`);
  assert.ok(image.sent_width < image.width);
  const full = await readBlob(client, image.uri);
  assert.deepEqual(pngSize(full), { width: image.width, height: image.height });
  await call(client, 'cleanup_session', { session_id: r.structuredContent.session_id });
});

test('a DataFrame value is a compact table with its shape and dtypes', async () => {
  const { client } = conn;
  const r = await call(client, 'run_code', {
    code: [
      'import pandas as pd, numpy as np',
      "pd.DataFrame({'id': np.arange(1000), 'x': np.linspace(0, 1, 1000),",
      "              'name': ['n%d' % i for i in range(1000)]})",
    ].join('\n'),
  });
  const s = r.structuredContent;
  assert.equal(s.status, 'success', s.stderr);
  assert.match(s.result, /^\s+id\s+x\s+name\n0\s+0\s+0\.0+\s+n0\n/);
  assert.match(s.result, /\n\.\.\s+\.\.\.\s+\.\.\.\s+\.\.\.\n/, 'rows elided');
  assert.match(s.result, /\[1000 rows x 3 columns\]$/);
  assert.ok(s.result.split('\n').length < 20, s.result);
  assert.deepEqual(s.table, {
    kind: 'DataFrame',
    shape: [1000, 3],
    dtypes: [{ column: 'id', dtype: 'int64' }, { column: 'x', dtype: 'float64' }, { column: 'name', dtype: 'object' }],
    dtypes_cut: false,
  });
  assert.match(r.content[0].text, /\[DataFrame of shape \[1000,3\]\]/);
  await call(client, 'cleanup_session', { session_id: s.session_id });
});

test('display() and _repr_png_ show images; past images.max_per_call the rest are counted, not sent', async () => {
  const { client } = conn;
  const r = await call(client, 'run_code', {
    code: [
      'from PIL import Image',
      'import matplotlib.pyplot as plt',
      "display(Image.new('RGB', (200, 100), 'red'))",
      'for i in range(10):',
      '    plt.figure(figsize=(2, 2)); plt.plot([i, i + 1])',
      "Image.new('L', (50, 40))",
    ].join('\n'),
  });
  const s = r.structuredContent;
  assert.equal(s.status, 'success', s.stderr);
  const images = checkedImages(r);
  assert.equal(images.length, 8);
  assert.deepEqual(pngSize(images[0].png), { width: 200, height: 100 }, 'the PIL image comes first');
  assert.deepEqual(pngSize(images[1].png), { width: 50, height: 40 }, 'then the value, then the figures');
  assert.match(s.stderr, /\[display\] 4 more image\(s\) were not sent: at most 8 per execution/);
  await call(client, 'cleanup_session', { session_id: s.session_id });
});

test('images forged by user code on the driver\'s reply pipe are refused', async () => {
  const { client } = conn;
  // User code shares the driver's process, so it can forge the reply of its own cell (reading
  // the cell number from the driver's frame); the images in it must still pass the checks.
  const forged = {
    cell: '@CELL@',
    status: 'success', exit_code: 0, result: 'forged', interrupted: false,
    images: [
      { data_b64: Buffer.from('not a png').toString('base64'), path: '/etc/shadow' },
      { data_b64: 'A'.repeat(3 * 1024 * 1024) },
    ],
    table: { kind: 'Matrix', shape: [1, 2, 3] },
  };
  const r = await call(client, 'run_code', {
    code: [
      'import os, sys, time',
      "cell = sys._getframe().f_back.f_locals['command']['cell']",
      `os.write(4, ${JSON.stringify(JSON.stringify(forged) + '\n')}.replace('"@CELL@"', str(cell)).encode())`,
      'time.sleep(1)',
    ].join('\n'),
  });
  const s = r.structuredContent;
  assert.equal(s.result, 'forged', 'a reply naming the running cell ends it, forged or not');
  assert.equal(s.images, undefined);
  assert.equal(s.table, undefined);
  assert.equal(r.content.filter((c) => c.type === 'image').length, 0);
  assert.match(s.stderr, /\[sandbox\] image 1 is not a PNG/);
  assert.match(s.stderr, /\[sandbox\] image 2 is larger than 1048576 bytes/);
  // The cell's real reply, a second answer to the same cell, is not taken for the next cell's.
  const after = await call(client, 'run_code', { session_id: s.session_id, code: '6 * 7' });
  assert.equal(after.structuredContent.result, '42');
  await call(client, 'cleanup_session', { session_id: s.session_id });
});

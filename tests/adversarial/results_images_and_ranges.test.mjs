// Points 4 and 5 of the second adversarial review, against the real server and sandbox:
// - sandbox code shows, through display() and _repr_png_, PNGs that are real only by their header
//   (a signature and an IHDR with a bad CRC, then junk) and a decompression bomb (an IDAT that
//   inflates far past what its IHDR implies): neither goes out as image content, a real PNG shown
//   beside them still does, and the result's warnings say why and where the files stay;
// - a range link with length=0 (which once came back as its own next_uri) is refused, and
//   following next_uri from degenerate links (1 byte at a time through multi-byte characters,
//   the end of the file) always advances and ends.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertNoLeaks, connectStdio, snapshot } from './attack_lib.mjs';

let conn;
let before_;
before(async () => {
  before_ = await snapshot();
  conn = await connectStdio();
});
after(async () => {
  await conn?.client.close();
  await assertNoLeaks(before_);
});

async function call(name, args) {
  const r = await conn.client.callTool({ name, arguments: args });
  assert.ok(!r.isError, JSON.stringify(r.content));
  return r;
}

// Python: PNG bytes built by hand, shown through display() as objects with _repr_png_.
const SHOW_FORGED_PNGS = `
import struct, zlib

def chunk(kind, data, good_crc=True):
    crc = zlib.crc32(kind + data) ^ (0 if good_crc else 1)
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', crc)

def png(width, height, idat, ihdr_crc_ok=True, tail=None):
    ihdr = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)
    head = b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', ihdr, ihdr_crc_ok)
    return head + (tail if tail is not None else chunk(b'IDAT', idat) + chunk(b'IEND', b''))

class Shown:
    def __init__(self, data): self.data = data
    def _repr_png_(self): return self.data

rows = b''.join(b'\\x00' + bytes(range(96)) for _ in range(24))          # 32x24 RGB
display(Shown(png(32, 24, zlib.compress(rows))))                          # a real PNG
display(Shown(png(32, 24, b'', ihdr_crc_ok=False, tail=b'junk' * 256)))  # header only
display(Shown(png(32, 24, zlib.compress(bytes(16 << 20), 9))))          # a bomb: 16 MiB
`;

test('PNGs real only by their header, and decompression bombs, are not sent as images', async () => {
  const r = await call('run_code', { code: SHOW_FORGED_PNGS });
  const s = r.structuredContent;
  assert.equal(s.status, 'success', s.stderr);
  const blocks = r.content.filter((c) => c.type === 'image');
  assert.equal(blocks.length, 1, 'only the real PNG goes out as image content');
  assert.equal(s.images.length, 1);
  assert.deepEqual([s.images[0].sent_width, s.images[0].sent_height], [32, 24]);
  assert.equal(Buffer.from(blocks[0].data, 'base64').length, s.images[0].sent_bytes);

  const warnings = s.warnings ?? [];
  assert.equal(warnings.length, 2, JSON.stringify(warnings));
  assert.match(warnings[0], /^image 2 of 3 shown was not sent: it failed the PNG check \(chunk 1 \(IHDR\) fails its CRC check\)/);
  assert.match(warnings[1], /^image 3 of 3 shown was not sent: it failed the PNG check \(the image data inflates to more than the 2328 bytes its IHDR implies \(a decompression bomb\)\)/);
  const text = r.content.find((c) => c.type === 'text').text;
  for (const warning of warnings) assert.ok(text.includes(`warning: ${warning}`), 'the text says it too');

  // Each warning names the file, which stays in the sandbox, readable as a resource.
  const uri = warnings[0].match(/(sandbox:\/\/\S+\/tmp\/\.sandbox-mcp\/figures\/figure-\S+\.png)/)?.[1];
  assert.ok(uri?.startsWith(`sandbox://${s.session_id}/`), warnings[0]);
  assert.ok(warnings[0].includes(`/${uri.split('/').slice(3).join('/')}`), 'its path is given too');
  const { contents } = await conn.client.readResource({ uri });
  const kept = Buffer.from(contents[0].blob, 'base64');
  assert.equal(kept.subarray(kept.length - 4).toString(), 'junk', 'the file is the one shown');
  await call('cleanup_session', { session_id: s.session_id });
});

// Follows next_uri from `uri`; every link must point past the one before, and the walk must end.
async function follow(uri, maxReads) {
  let text = '';
  let offset = -1;
  for (let next = uri, reads = 0; next; reads += 1) {
    assert.ok(reads < maxReads, `still following next_uri after ${reads} reads: ${next}`);
    const { contents } = await conn.client.readResource({ uri: next });
    const range = contents[0]._meta['sandbox-mcp/range'];
    assert.ok(range.offset > offset, `offset ${range.offset} after ${offset}: ${next}`);
    offset = range.offset;
    text += contents[0].text ?? Buffer.from(contents[0].blob, 'base64').toString('latin1');
    next = range.next_uri;
  }
  return text;
}

test('range links always advance: length=0 is refused and next_uri ends', async () => {
  const made = await call('run_shell', { command: "printf 'a\\342\\202\\254b' > /tmp/r.txt" });
  const sid = made.structuredContent.session_id;
  const base = `sandbox://${sid}/tmp/r.txt`;
  for (const uri of [`${base}?length=0`, `${base}?offset=2&length=0`]) {
    const error = await conn.client.readResource({ uri }).then(() => null, (e) => e);
    assert.ok(error, `${uri} was answered: a client following it never stops`);
    assert.equal(error.code, -32602, String(error));
    assert.match(error.message, /length must be at least 1/);
  }
  // 1 byte at a time through a 3-byte character: links still advance, and end at the end.
  assert.equal(Buffer.from(await follow(`${base}?length=1`, 10), 'latin1').length, 5);
  assert.equal(await follow(`${base}?offset=5`, 2), '', 'at the end: no link');
  assert.equal(await follow(`${base}?offset=4&length=1000000000`, 2), 'b');
  await call('cleanup_session', { session_id: sid });
});

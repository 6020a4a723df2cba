// Session files as MCP resources, with the official client over Streamable HTTP: output past the
// cap comes back as a resource_link and reads back whole in ranges; resources/list names it;
// another client can read nothing of the session.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectHttp, startHttpServer, stopServer } from './harness.mjs';
import { call } from './flow.mjs';

const LINE = '0123456789abcdefghi'; // 19 characters + newline = 20 bytes
const LINES = 250000; // 5,000,000 bytes

let server;
before(async () => {
  server = await startHttpServer();
});
after(async () => {
  const code = await stopServer(server);
  assert.equal(code, 0, server.logText());
});

// Follows next_uri until the end; returns the text and how many reads it took.
async function readWhole(client, uri) {
  let text = '';
  let reads = 0;
  for (let next = uri; next; reads += 1) {
    const { contents } = await client.readResource({ uri: next });
    assert.equal(contents.length, 1);
    assert.equal(typeof contents[0].text, 'string', 'text content');
    const range = contents[0]._meta['sandbox-mcp/range'];
    assert.equal(range.offset, text.length);
    assert.equal(range.length, contents[0].text.length);
    text += contents[0].text;
    next = range.next_uri;
  }
  return { text, reads };
}

test('the server offers sandbox:// resources', async () => {
  const { client } = await connectHttp(server.url);
  assert.ok(client.getServerCapabilities().resources, 'resources capability');
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['sandbox://{session_id}/{+path}{?offset,length}']);
  await client.close();
});

test('a 5 MB output is saved, linked and read back by ranges', async () => {
  const { client } = await connectHttp(server.url);
  const r = await call(client, 'run_shell', { command: `yes ${LINE} | head -n ${LINES}` });
  assert.equal(r.structuredContent.status, 'success');
  assert.equal(r.structuredContent.truncated, true);
  assert.equal(r.structuredContent.stdout_bytes, LINES * 20);
  const [saved] = r.structuredContent.saved_output;
  assert.equal(saved.stream, 'stdout');
  assert.equal(saved.bytes, LINES * 20);
  assert.equal(saved.complete, true);
  const prefix = `sandbox://${r.structuredContent.session_id}/tmp/.sandbox-mcp/outputs/`;
  assert.ok(saved.uri.startsWith(prefix), saved.uri);
  assert.match(saved.uri.slice(prefix.length), /^exec-\d+-stdout\.txt$/);
  const link = r.content.find((c) => c.type === 'resource_link');
  assert.ok(link, 'a resource_link content block');
  assert.equal(link.uri, saved.uri);
  assert.equal(link.size, LINES * 20);
  assert.match(r.content[0].text, /the whole stdout \(5000000 bytes\) is saved at/);

  const { text, reads } = await readWhole(client, link.uri);
  assert.equal(text.length, LINES * 20);
  assert.equal(text, `${LINE}\n`.repeat(LINES));
  assert.equal(reads, 5, 'five reads of at most 1 MiB');

  // An explicit range, and the same file through download_file.
  const { contents } = await client.readResource({ uri: `${link.uri}?offset=40&length=20` });
  assert.equal(contents[0].text, `${LINE}\n`);
  const { resources } = await client.listResources();
  assert.ok(resources.some((res) => res.uri === link.uri && res.size === LINES * 20), JSON.stringify(resources));
  await client.close();
});

test('workspace files read as text or blob; errors say what is wrong', async () => {
  const { client } = await connectHttp(server.url);
  const made = await call(client, 'run_code', {
    code: "open('data.csv','w').write('a,b\\n1,2\\n'); open('raw.bin','wb').write(bytes(range(256)))",
  });
  const workspace = `sandbox://${made.structuredContent.session_id}/workspace`;
  let { contents } = await client.readResource({ uri: `${workspace}/data.csv` });
  assert.equal(contents[0].text, 'a,b\n1,2\n');
  assert.equal(contents[0].mimeType, 'text/csv');
  ({ contents } = await client.readResource({ uri: `${workspace}/raw.bin` }));
  assert.deepEqual([...Buffer.from(contents[0].blob, 'base64')], [...Array(256).keys()]);
  await assert.rejects(client.readResource({ uri: `${workspace}/missing.txt` }), (e) => {
    assert.ok(e instanceof McpError);
    assert.equal(e.code, -32002);
    assert.match(e.message, /No such file or directory/);
    return true;
  });
  await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }), /sandbox:\/\/\{session_id\}\/\{path\}/);
  await client.close();
});

test("another client cannot read or list a session's resources", async () => {
  const owner = await connectHttp(server.url);
  const other = await connectHttp(server.url);
  const made = await call(owner.client, 'run_code', { code: "open('secret.txt','w').write('s3cret')" });
  const uri = `sandbox://${made.structuredContent.session_id}/workspace/secret.txt`;
  assert.equal((await owner.client.readResource({ uri })).contents[0].text, 's3cret');
  await assert.rejects(other.client.readResource({ uri }), (e) => {
    assert.equal(e.code, -32002);
    assert.doesNotMatch(e.message, /s3cret/);
    return true;
  });
  assert.deepEqual((await other.client.listResources()).resources, []);
  await owner.client.close();
  await other.client.close();
});

// Finding 6 of issue 18, the drain's side: a Dockerfile build held a drain. With
// shutdown.grace_s 3, a RUN step sleeping 90 s kept the server alive 46-90 s after SIGTERM (a
// second signal too), and then a sandbox was started from the new image. Now past the grace the
// build stops (its step container removed, nothing kept), no sandbox starts, the server exits on
// time, and a second signal ends the drain at once. (Cancellation by the client:
// build_cancel_test.cc.)
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  assertNoLeaks, connectHttp, dockerGet, dockerRequest, getEndpoint, snapshot, startHttpServer,
  waitFor,
} from './attack_lib.mjs';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sandbox-mcp-build-drain-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const GRACE_S = 3;
// Grace plus what stopping takes (the step's removal, the transport, the sessions): far below the
// step's 90 s.
const STOP_BUDGET_MS = 5000;

async function buildContainers() {
  const filters = encodeURIComponent(JSON.stringify({ name: ['sandbox-mcp-build-'] }));
  return (await dockerGet(`/containers/json?all=1&filters=${filters}`)).body;
}

async function imagesOf(instanceId) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`sandbox-mcp.instance=${instanceId}`] }));
  return (await dockerGet(`/images/json?all=1&filters=${filters}`)).body.map((i) => i.Id);
}

// A first quick step (a layer committed before the signal), then 90 s of sleep; unique content,
// so no cached image answers it.
function slowDockerfile() {
  return `FROM sandbox-mcp/python:latest\nRUN echo ${randomBytes(4).toString('hex')} > /nonce\nRUN sleep 90\n`;
}

async function startServer(graceS) {
  const instanceId = `adv-build-${randomBytes(4).toString('hex')}`;
  const file = path.join(dir, `${instanceId}.json`);
  writeFileSync(file, JSON.stringify({
    instance_id: instanceId, pool: { size: 0 }, shutdown: { grace_s: graceS },
    sandbox: { allow_dockerfile: true },
  }));
  return { server: await startHttpServer(['--config', file]), instanceId };
}

// Starts run_shell with the slow Dockerfile and resolves once its `sleep 90` step runs, to
// { outcome }: a promise of the call's result or error (wrapped, or awaiting this would wait for
// the whole call).
async function startSlowBuild(client) {
  const outcome = client.callTool(
    { name: 'run_shell', arguments: { command: 'echo the sandbox ran', dockerfile: slowDockerfile() } },
    undefined, { timeout: 180000 }).then((r) => r, (e) => e);
  await waitFor(async () => (await buildContainers())
    .some((c) => c.State === 'running' && c.Command.includes('sleep 90')), 90000, 'the sleep step to run');
  return { outcome };
}

// The exit code once the server ended, or null when it still ran after `ms`: then it is killed
// and its step removed, so that the test fails now, not 90 s later.
async function exitWithin(server, ms) {
  const exited = server.exitCode !== null ? Promise.resolve(server.exitCode)
    : new Promise((resolve) => server.on('exit', (code) => resolve(code)));
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(null), ms))]);
  if (code === null) {
    server.kill('SIGKILL');
    await exited;
  }
  return code;
}

// The containers of `instanceId` created since `since` (seconds, fractional) other than build
// steps: the sandboxes it started.
async function sandboxesCreatedSince(instanceId, since) {
  const filters = encodeURIComponent(JSON.stringify({
    type: ['container'], event: ['create'], label: [`sandbox-mcp.instance=${instanceId}`],
  }));
  const until = (Date.now() / 1000 + 1).toFixed(3);
  const { body } = await dockerGet(`/events?since=${since}&until=${until}&filters=${filters}`);
  // A stream of JSON objects, one a line (one parses as an object, none as null).
  const events = body === null ? [] : typeof body === 'string'
    ? body.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)) : [body];
  return events.filter((e) => !e.Actor.Attributes.name.startsWith('sandbox-mcp-build-'))
    .map((e) => `${e.Actor.Attributes.name} (image ${e.Actor.Attributes.image})`);
}

// What a failed run may leave: its step containers and layers (the server was SIGKILLed).
async function removeLeftovers(instanceId) {
  for (const c of await buildContainers()) await dockerRequest('DELETE', `/containers/${c.Id}?force=1`);
  for (const id of await imagesOf(instanceId)) await dockerRequest('DELETE', `/images/${id}?force=1`);
}

// After the drain: the caller was told "shutting down" (the answer goes out before the transport
// stops), no sandbox was started after `since`, and neither the step's container nor any layer
// remains. Returns what the caller got.
async function assertStoppedCleanly(instanceId, outcome, since) {
  const result = await outcome;
  assert.ok(!(result instanceof Error) && result.isError
    && /^the server is shutting down: the build was stopped/.test(result.content[0].text),
  `the call got no sandbox and a clear error: ${result instanceof Error ? result.message : JSON.stringify(result)}`);
  assert.deepEqual(await sandboxesCreatedSince(instanceId, since), [], 'a sandbox was started during shutdown');
  assert.deepEqual(await buildContainers(), [], 'the build step outlived the server');
  assert.deepEqual(await imagesOf(instanceId), [], 'the stopped build kept a layer');
  return result.content[0].text;
}

test(`SIGTERM during a build step: the drain ends after shutdown.grace_s ${GRACE_S}, nothing starts or stays`, async (t) => {
  const before = await snapshot();
  const { server, instanceId } = await startServer(GRACE_S);
  const conn = await connectHttp(server.url);
  try {
    const { outcome } = await startSlowBuild(conn.client);
    const since = (Date.now() / 1000).toFixed(3);
    const signalled = Date.now();
    server.kill('SIGTERM');
    const code = await exitWithin(server, GRACE_S * 1000 + 15000);
    const ms = Date.now() - signalled;
    assert.equal(code, 0, `the server ${code === null ? 'still ran' : `exited with ${code}`} ${ms} ms after SIGTERM`);
    t.diagnostic(`exited ${ms} ms after SIGTERM (shutdown.grace_s ${GRACE_S})`);
    assert.ok(ms < GRACE_S * 1000 + STOP_BUDGET_MS, `the drain took ${ms} ms with shutdown.grace_s ${GRACE_S}`);
    t.diagnostic(`the call ended with ${await assertStoppedCleanly(instanceId, outcome, since)}`);
  } finally {
    await conn.client.close().catch(() => {});
    await removeLeftovers(instanceId);
  }
  await assertNoLeaks(before);
});

test('a second signal ends a drain that a build step holds, at once', async (t) => {
  const before = await snapshot();
  const { server, instanceId } = await startServer(600);
  const conn = await connectHttp(server.url);
  try {
    const { outcome } = await startSlowBuild(conn.client);
    const since = (Date.now() / 1000).toFixed(3);
    server.kill('SIGTERM');
    await waitFor(async () => (await getEndpoint(server.url, '/readyz')).status === 503, 5000, 'the drain');
    const second = Date.now();
    server.kill('SIGTERM');
    const code = await exitWithin(server, 15000);
    const ms = Date.now() - second;
    assert.equal(code, 0, `the server ${code === null ? 'still ran' : `exited with ${code}`} ${ms} ms after the second signal`);
    t.diagnostic(`exited ${ms} ms after the second signal`);
    assert.ok(ms < STOP_BUDGET_MS, `stopped ${ms} ms after the second signal`);
    t.diagnostic(`the call ended with ${await assertStoppedCleanly(instanceId, outcome, since)}`);
  } finally {
    await conn.client.close().catch(() => {});
    await removeLeftovers(instanceId);
  }
  await assertNoLeaks(before);
});

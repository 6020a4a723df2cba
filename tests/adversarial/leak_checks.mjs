// What an attack may leave behind, read from the engine and the host: managed containers, gVisor
// processes whose container is gone (`docker ps` does not list them), volumes, run-time
// directories. snapshot() before an attack, assertNoLeaks(before) after it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { dockerGet, waitFor } from '../e2e/harness.mjs';

const RUNTIME_ROOT = '/run/sandbox-mcp';

export async function runningContainerIds() {
  const { body } = await dockerGet('/containers/json');
  return body.map((c) => c.Id);
}

async function managedContainerIds() {
  const filters = encodeURIComponent(JSON.stringify({ label: ['sandbox-mcp.managed=1'] }));
  const { body } = await dockerGet(`/containers/json?all=1&filters=${filters}`);
  return body.map((c) => c.Id);
}

// Pids of runsc processes (sandbox, gofer) that name a container id the engine does not run.
export async function strayRunscPids() {
  const running = new Set(await runningContainerIds());
  const stray = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0');
    } catch {
      continue; // exited meanwhile
    }
    if (!cmdline[0] || !/(^|\/)runsc(-|$)/.test(cmdline[0])) continue;
    const ids = cmdline.join(' ').match(/\b[0-9a-f]{64}\b/g) ?? [];
    if (ids.length > 0 && !ids.some((id) => running.has(id))) stray.push(Number(entry));
  }
  return stray;
}

async function volumeNames() {
  const { body } = await dockerGet('/volumes');
  return (body.Volumes ?? []).map((v) => v.Name);
}

function runtimeDirs() {
  return fs.existsSync(RUNTIME_ROOT) ? fs.readdirSync(RUNTIME_ROOT) : [];
}

export async function snapshot() {
  return {
    containers: new Set(await managedContainerIds()),
    volumes: new Set(await volumeNames()),
    dirs: new Set(runtimeDirs()),
  };
}

// Waits (removals run in the background after a session ends) until nothing new remains.
export async function assertNoLeaks(before, timeoutMs = 20000) {
  const leftovers = async () => ({
    containers: (await managedContainerIds()).filter((id) => !before.containers.has(id)),
    volumes: (await volumeNames()).filter((v) => !before.volumes.has(v)),
    dirs: runtimeDirs().filter((d) => !before.dirs.has(d)),
    runsc: await strayRunscPids(),
  });
  let last;
  try {
    await waitFor(async () => {
      last = await leftovers();
      return Object.values(last).every((list) => list.length === 0);
    }, timeoutMs, 'no leftovers');
  } catch {
    assert.fail(`the attack left things behind: ${JSON.stringify(last)}`);
  }
}

import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startHttpServer, stopServer } from './harness.mjs';
const server = await startHttpServer(['--config', '/tmp/same.json']);
for (const mode of ['auto', { pin: '2026-07-28' }, 'legacy']) {
  const client = new Client({ name: 'p', version: '1' }, { versionNegotiation: { mode } });
  try {
    const t0 = Date.now();
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    console.log(JSON.stringify(mode), 'connected', client.getNegotiatedProtocolVersion(), Date.now() - t0, 'ms');
    const r = await client.callTool({ name: 'run_code', arguments: { code: 'x = 5\nx * 2' } });
    const r2 = await client.callTool({ name: 'run_code', arguments: { code: 'x + 1', session_id: r.structuredContent.session_id } });
    console.log(' run_code', r.structuredContent.result, r2.structuredContent.result);
    const res = await client.listResources();
    console.log(' resources', res.resources.length);
    await client.close();
  } catch (e) { console.log(JSON.stringify(mode), 'failed:', e.message.slice(0, 300)); }
}
await stopServer(server);

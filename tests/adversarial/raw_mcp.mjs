// A raw MCP client for attacks: one JSON-RPC POST per connection, no SDK in the way, so a test can
// hold hundreds of requests open, abort them (close the connection) and read status codes.
import assert from 'node:assert/strict';
import http from 'node:http';

export function rawMcp(serverUrl) {
  const url = new URL(serverUrl);
  let nextId = 1;

  // Resolves { status, headers, messages } (messages: the JSON-RPC messages of a JSON or SSE
  // answer); abort() closes the connection.
  function post(sessionId, message) {
    const body = JSON.stringify(message);
    let request;
    const done = new Promise((resolve, reject) => {
      request = http.request({
        host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent: false,
        headers: {
          'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
          'Content-Length': Buffer.byteLength(body), 'MCP-Protocol-Version': '2025-11-25',
          ...(sessionId ? { 'Mcp-Session-Id': sessionId } : {}),
        },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => { text += chunk; });
        res.on('end', () => {
          const messages = res.headers['content-type']?.startsWith('text/event-stream')
            ? text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
            : (text ? [JSON.parse(text)] : []);
          resolve({ status: res.statusCode, headers: res.headers, messages });
        });
        res.on('error', reject);
      });
      request.on('error', reject);
      request.end(body);
    });
    return { done, abort: () => request.destroy() };
  }

  const rpc = (method, params) => ({ jsonrpc: '2.0', id: nextId++, method, params });

  // A new MCP session (initialize + notifications/initialized); resolves with its Mcp-Session-Id.
  async function openSession() {
    const init = await post(null, rpc('initialize', {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'attacker', version: '1' },
    })).done;
    assert.equal(init.status, 200, JSON.stringify(init.messages));
    const id = init.headers['mcp-session-id'];
    await post(id, { jsonrpc: '2.0', method: 'notifications/initialized' }).done;
    return id;
  }

  // One request, answered: the last JSON-RPC message of the answer.
  async function call(sessionId, method, params) {
    const res = await post(sessionId, rpc(method, params)).done;
    return res.messages.at(-1);
  }

  return { post, rpc, openSession, call };
}

// An MCP session driven without the SDK client: bare keep-alive POSTs of tools/call on the
// session the SDK opened (its Mcp-Session-Id and protocol version). The benchmarks use it to show
// how much of a round trip is the client library rather than the server, and to load the server
// with clients that cost little CPU.
import nodeHttp from 'node:http';

export function rawHttpCaller(url, transport) {
  const target = new URL(url);
  const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 1 });
  let id = 1_000_000;
  const call = (name, args) => new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call',
      params: { name, arguments: args } });
    const req = nodeHttp.request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body), 'mcp-session-id': transport.sessionId,
        'mcp-protocol-version': transport.protocolVersion,
      },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let text = Buffer.concat(chunks).toString();
        if (/text\/event-stream/.test(res.headers['content-type'] ?? '')) {
          text = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).join('');
        }
        try {
          const reply = JSON.parse(text);
          if (reply.error || reply.result?.isError) throw new Error(text.slice(0, 500));
          resolve(reply.result.structuredContent);
        } catch (error) {
          reject(new Error(`raw ${name} failed (HTTP ${res.statusCode}): ${error.message}`));
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  return { call, close: () => agent.destroy() };
}

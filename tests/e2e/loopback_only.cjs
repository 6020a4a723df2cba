// Preloaded into upstream MCP servers started by the tests (node -r ./loopback_only.cjs ...):
// every listen() binds 127.0.0.1 (tests never open ports on other addresses), and the port that
// was actually bound is printed as "LOOPBACK_PORT=<n>" on stderr (the servers log only $PORT).
const net = require('node:net');

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  let options = args[0];
  if (typeof options === 'number' || typeof options === 'string') {
    const callback = args.find((arg) => typeof arg === 'function');
    options = { port: Number(options), host: '127.0.0.1' };
    args = callback ? [options, callback] : [options];
  } else if (options && typeof options === 'object' && !options.path) {
    args[0] = { ...options, host: '127.0.0.1' };
  }
  this.once('listening', () => {
    const address = this.address();
    if (address && typeof address === 'object') {
      process.stderr.write(`LOOPBACK_PORT=${address.port}\n`);
    }
  });
  return originalListen.apply(this, args);
};

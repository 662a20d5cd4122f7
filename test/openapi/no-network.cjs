/**
 * Preloaded (`node --require`) into the OpenAPI tools that test/openapi/lint.test.ts runs: writes a
 * line `NETWORK <what>` to stderr for every DNS lookup and every TCP connection a process tries,
 * so the test can assert that the tools need no network (CI reaches only the npm registry). A
 * Unix-socket connection (a tool's own IPC) is not network.
 */
const dns = require('node:dns');
const net = require('node:net');
const { syncBuiltinESMExports } = require('node:module');

const report = (what) => process.stderr.write(`NETWORK ${what}\n`);

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const options = first !== null && typeof first === 'object' ? first : { port: first, host: args[1] };
  if (options.path === undefined) report(`connect ${options.host ?? 'localhost'}:${options.port}`);
  return connect.apply(this, args);
};

for (const [module, name] of [
  [dns, 'lookup'],
  [dns, 'resolve'],
  [dns, 'resolve4'],
  [dns, 'resolve6'],
  [dns.promises, 'lookup'],
  [dns.promises, 'resolve'],
]) {
  const original = module[name];
  module[name] = function (host, ...rest) {
    report(`dns ${name} ${host}`);
    return original.call(this, host, ...rest);
  };
}
syncBuiltinESMExports();

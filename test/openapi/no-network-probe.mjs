// The control of no-network.cjs (lint.test.ts): a DNS lookup, and a fetch from a server of its own
// on localhost (a lookup, then a connection), each of which the preload must report. Needs no network.
import { lookup } from 'node:dns';
import { createServer } from 'node:http';

lookup('example.invalid', () => undefined);
const server = createServer((_, response) => response.end('ok'));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
await (await fetch(`http://localhost:${server.address().port}/`)).text();
process.exit(0);

#!/usr/bin/env node
// agent-state-store: `console --api <url> [--port <n>]` serves the read-only session console on
// 127.0.0.1, forwarding its /v1 GET and HEAD requests to the API at <url> (docs/console.md);
// `workspace <push|pull|ls|diff|cat> …` moves workspace snapshots (docs/workspaces.md).
import { startConsoleServer } from '../dist/lib/console/serve.js';

const USAGE =
  'usage: agent-state-store console --api <url> [--port <n>]\n       agent-state-store workspace --help';
const [command, ...rest] = process.argv.slice(2);
if (command === 'workspace') {
  const { runWorkspaceCli } = await import('../dist/lib/client/node/workspace-cli.js');
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort(new Error('interrupted')));
  const code = await runWorkspaceCli(rest, {
    env: process.env,
    line: (text) => process.stderr.write(`${text}\n`),
    write: (data) => process.stdout.write(data),
    signal: abort.signal,
    tty: Boolean(process.stderr.isTTY),
    status: (text) => process.stderr.write(text),
  });
  process.exit(code);
}
if (command !== 'console') {
  console.error(USAGE);
  process.exit(command === undefined || command === '--help' ? 0 : 2);
}
const option = (name) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};
const api = option('--api') ?? process.env.AGENT_STATE_API;
const port = Number(option('--port') ?? 0);
if (!api || !Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(USAGE);
  process.exit(2);
}
try {
  const { server, url } = await startConsoleServer({
    api,
    port,
    dir: new URL('../dist/console/', import.meta.url),
  });
  console.log(`agent-state console on ${url}  (API: ${new URL(api).origin}; listening on 127.0.0.1 only)`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (error) {
  console.error(`agent-state-store console: ${error.message}`);
  process.exit(1);
}

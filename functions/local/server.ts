/** `npm start`: the same router on node:http, fs storage under DATA_DIR (or any STORE_BACKEND), the in-process lock (or any LOCK_BACKEND). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadConfigOrExit } from '../../lib/config.js';
import { consoleHandler } from '../../lib/console/serve.js';
import { BackendUnsafeError } from '../../lib/contract/errors.js';
import type { FsDriver } from '../../lib/drivers/fs.js';
import { logTo } from '../../lib/http/adapters/guard.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { backendsFrom } from '../../lib/http/backends/local.js';
import { runSweep, sweepOptionsOf } from '../../lib/lifecycle/sweep.js';
import { localSecret } from '../../scripts/local-secret.js';

const env = { ...process.env };
if (!env.AUTH_JWT_SECRET && env.ALLOW_ANONYMOUS !== 'true')
  env.AUTH_JWT_SECRET = await localSecret(env.DATA_DIR ?? './.data');
const config = loadConfigOrExit(env);
let port = config.PORT;
const backends = backendsFrom(config, () => config.PUBLIC_URL ?? `http://${config.HOST}:${port}`);
const app = createApp(config, backends);
// The backend is verified at start, not at the first write (an unsafe one is logged by the app;
// one that could not be probed is probed again at the first write).
app.driver?.verify().catch((error: Error) => {
  if (!(error instanceof BackendUnsafeError))
    app.logger.warn('backend probe failed; the first write retries it', { error });
});
// An engine of its own (STORE_BACKEND=redis or mysql): reachable at start (for mysql, its tables
// there too), or one line saying what is not.
if (!app.driver)
  app.store
    .checkReady()
    .catch((error: Error) => app.logger.error(`${config.STORE_BACKEND} is not ready: ${error.message}`));
// With fs storage (or an engine's BLOB_BACKEND=fs), the server also answers the presigned URLs of
// workspaces and large values.
const fsDriver = (backends.driver ?? backends.blobDriver) as Partial<FsDriver> | undefined;
const blobs = fsDriver?.serveBlob
  ? { serveBlob: fsDriver.serveBlob, limitBytes: config.MAX_BLOB_BYTES }
  : undefined;
const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES, blobs, { onError: logTo(app.logger) });
// The session console (dist/console/, beside this bundle) at /console/, same origin as the API.
const consoleFiles = consoleHandler(new URL('../console/', import.meta.url));
const [api] = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
server.removeAllListeners('request');
server.on('request', (req: IncomingMessage, res: ServerResponse) => {
  if (!consoleFiles(req, res)) api?.(req, res);
});
server.listen(config.PORT, config.HOST, () => {
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : config.PORT;
  console.log(
    `agent-state API on http://${config.HOST}:${port}  (storage: ${config.STORE_BACKEND} ${config.STORE_BACKEND === 'fs' ? config.DATA_DIR : ''}, lock: ${config.LOCK_BACKEND})`,
  );
  console.log(
    `console:      http://${config.HOST}:${port}/console/  (paste a token from npm run token -- <user>)`,
  );
  console.log(
    `get a token:  npm run token -- <user>     then: curl -H "Authorization: Bearer <token>" http://${config.HOST}:${port}/v1/sessions`,
  );
});
// The deployment's sweep (expired MySQL sessions, workspace packs) every SWEEP_INTERVAL_MINUTES, one
// at a time; it never keeps the process alive and stops with the server.
if (config.SWEEP_INTERVAL_MINUTES > 0) {
  let sweeping = false;
  const sweep = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    runSweep(app, sweepOptionsOf(config))
      .catch((error: Error) => app.logger.error('sweep failed', { error }))
      .finally(() => {
        sweeping = false;
      });
  }, config.SWEEP_INTERVAL_MINUTES * 60_000).unref();
  server.on('close', () => clearInterval(sweep));
}
/** How long requests in flight may finish after a signal before their connections are closed. */
const GRACE_MS = 1000;
/** Stops listening at once, closes idle keep-alive connections, then the rest after the grace. */
const stop = () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => server.closeAllConnections(), GRACE_MS).unref();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

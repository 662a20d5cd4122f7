/**
 * `npm run demo`: an agent-like session through the typed client, as in the platform walkthrough of
 * the seed document: turns append messages, the plan and task contexts are overwritten whole, a
 * compaction replaces the history with a summary (the old history is archived, not lost), the
 * archive is read back, and the session is listed. Against BASE_URL (with TOKEN) when given; else
 * against an in-process server on a temporary folder.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { createHttpClient } from '../lib/client/index.js';
import { loadConfig } from '../lib/config.js';
import { createNodeServer } from '../lib/http/adapters/node.js';
import { createApp } from '../lib/http/app.js';
import { backendsFrom } from '../lib/http/backends/local.js';

let baseUrl = process.env.BASE_URL;
let token = process.env.TOKEN;
let stop = async () => {};
if (!baseUrl) {
  const dir = await mkdtemp(path.join(tmpdir(), 'agent-state-demo-'));
  const secret = 'demo-secret';
  const config = loadConfig({ DATA_DIR: dir, AUTH_JWT_SECRET: secret, LOG_LEVEL: 'SILENT' });
  const server = createNodeServer(createApp(config, backendsFrom(config)).handle, config.BODY_LIMIT_BYTES);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  token = await new SignJWT({ sub: 'demo-user' })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret));
  stop = async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  };
  console.log(`(in-process server on ${baseUrl}, fs storage in ${dir})`);
}

const agent = createHttpClient({ baseUrl, token });
const session = 'sandbox/session/demo';
const say = (text: string) => console.log(`\n▶ ${text}`);

say('a new session: the lock, then the first turn');
const lease = await agent.acquireLock(session, { owner: 'demo-runner', leaseMs: 60_000 });
console.log(`  lease token ${lease.token}, until ${lease.expiresAt.toISOString()}`);
const history: Array<{ role: string; content: string }> = [];
for (let turn = 1; turn <= 4; turn++) {
  history.push(
    { role: 'user', content: `question ${turn}` },
    { role: 'assistant', content: `answer ${turn}` },
  );
  const r = await agent.saveList(session, 'memory', history, { token: lease.token });
  await agent.save(session, 'plan', { step: turn, next: `step ${turn + 1}` }, { token: lease.token });
  console.log(`  turn ${turn}: ${r.action}, ${r.count} messages, ${r.hash.slice(0, 19)}…`);
}
await agent.save(session, 'task_context', { goal: 'demo', tools: ['search'] }, { token: lease.token });

say('compaction: the history becomes a summary; the old one is archived, not dropped');
const compacted = [{ role: 'system', content: 'summary of turns 1-4' }, ...history.slice(-2)];
const rewritten = await agent.saveList(session, 'memory', compacted, { token: lease.token });
console.log(`  ${rewritten.action}: now ${rewritten.count} messages`);
const archives = await agent.listArchives(session, 'memory');
for (const a of archives) {
  const page = await agent.getArchive(session, 'memory', a.archiveId, { limit: 2 });
  console.log(
    `  archive ${a.archiveId}: ${a.count} messages from ${a.archivedAt.toISOString()}, first: ${JSON.stringify(page?.items[0])}`,
  );
}

say('the next turn appends only the new messages');
const next = await agent.saveList(
  session,
  'memory',
  [...compacted, { role: 'user', content: 'question 5' }],
  { token: lease.token },
);
console.log(`  ${next.action}: ${next.count} messages`);

say('a stale runner (old token) is fenced');
await agent.releaseLock(session, lease);
const newer = await agent.acquireLock(session, { owner: 'another-runner' });
await agent.save(session, 'plan', { step: 5 }, { token: newer.token });
await agent
  .save(session, 'plan', { step: 'stale' }, { token: lease.token })
  .catch((e: Error) => console.log(`  refused: ${e.name}`));
await agent.releaseLock(session, newer);

say('the session is listed, read back whole, then deleted');
const { sessions } = await agent.listSessionIds();
console.log(
  `  sessions: ${sessions.map((s) => `${s.sessionId} (last activity ${s.lastActivity.toISOString()})`).join(', ')}`,
);
console.log(`  plan: ${JSON.stringify(await agent.get(session, 'plan'))}`);
console.log(`  memory: ${(await agent.getList(session, 'memory')).count} messages`);
await agent.delete(session);
console.log(`  exists after delete: ${await agent.exists(session)}`);
await stop();

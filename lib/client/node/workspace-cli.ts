/**
 * `agent-state-store workspace …`: the workspace snapshot calls of the Node client from a shell
 * (docs/workspaces.md, "Workspace snapshots"). One line per step on stderr, and on a terminal a
 * progress bar of the upload or restore (bytes, rate, ETA); `cat` writes the file's
 * bytes to stdout, `ls` and `diff` their answers. Ctrl-C aborts the calls in flight: a push commits
 * only as its last step, so an interrupted push leaves nothing committed.
 */
import { createHttpClient } from './index.js';

export const WORKSPACE_USAGE = `usage: agent-state-store workspace <command> [flags]

commands:
  push <dir>                  push <dir> as a new snapshot (deduplicated against the newest)
  pull <snapshotId> <dir>     restore a snapshot ("latest": the newest) into an empty <dir>
  ls                          the snapshots, newest first
  diff <a> <b>                added, removed and changed paths from snapshot <a> to <b>
  cat <snapshotId> <path>     one file of a snapshot, to stdout
  gc                          rewrite packs with >= 30 % garbage; replaced snapshots keep their place

flags:
  --session <id>              the session (required)
  --name <workspace>          the workspace (default "workspace")
  --url <url>                 the API (default AGENT_STATE_URL)
  --token <jwt>               the bearer token (default AGENT_STATE_TOKEN)
  --fencing-token <n>         a lease's fencing token, for push and gc
  --no-parent                 push: deduplicate against no snapshot
  --help                      this text`;

/** Where the command writes, and what it reads from its environment. */
export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** A line of progress or an error (stderr). */
  line(text: string): void;
  /** The command's output (stdout). */
  write(data: string | Uint8Array): void;
  /** Aborts the calls in flight (Ctrl-C). */
  readonly signal?: AbortSignal;
  /** Whether stderr is a terminal: a progress bar (bytes, rate, ETA) redrawn in place. */
  readonly tty?: boolean;
  /** Writes to stderr without a newline (the bar). */
  status?(text: string): void;
}

const MB = 1e6;

/** A progress reporter: a bar redrawn in place on a terminal (at most 10 times a second), nothing otherwise. */
export function progressBar(io: CliIo, now = () => Date.now()): (done: number, total: number) => void {
  const started = now();
  let drawn = 0;
  return (done, total) => {
    if (!io.tty || !io.status) return;
    const t = now();
    if (done < total && t - drawn < 100) return;
    drawn = t;
    const width = 24;
    const share = total > 0 ? Math.min(1, done / total) : 1;
    const filled = Math.round(share * width);
    const seconds = Math.max(0.001, (t - started) / 1000);
    const rate = done / seconds;
    const eta = rate > 0 ? Math.ceil((total - done) / rate) : 0;
    io.status(
      `\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(done / MB).toFixed(1)}/${(total / MB).toFixed(1)} MB  ${(rate / MB).toFixed(1)} MB/s  ETA ${eta} s${done >= total ? '\n' : ''}`,
    );
  };
}

const FLAGS = new Set(['--session', '--name', '--url', '--token', '--fencing-token']);

/** Runs `workspace <args…>`; resolves to the exit code (0 done, 1 failed, 2 usage). */
export async function runWorkspaceCli(args: readonly string[], io: CliIo): Promise<number> {
  const flags = new Map<string, string>();
  const words: string[] = [];
  let noParent = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--help' || a === '-h') {
      io.write(`${WORKSPACE_USAGE}\n`);
      return 0;
    }
    if (a === '--no-parent') noParent = true;
    else if (FLAGS.has(a)) {
      const value = args[++i];
      if (value === undefined) return usage(io, `${a} needs a value`);
      flags.set(a, value);
    } else if (a.startsWith('--')) return usage(io, `unknown flag ${a}`);
    else words.push(a);
  }
  const [command, ...rest] = words;
  const session = flags.get('--session');
  const name = flags.get('--name') ?? 'workspace';
  const baseUrl = flags.get('--url') ?? io.env.AGENT_STATE_URL;
  const token = flags.get('--token') ?? io.env.AGENT_STATE_TOKEN;
  const arity: Record<string, number> = { push: 1, pull: 2, ls: 0, diff: 2, cat: 2, gc: 0 };
  if (command === undefined || arity[command] === undefined) return usage(io, 'a command is needed');
  if (rest.length !== arity[command]) return usage(io, `${command} takes ${arity[command]} argument(s)`);
  if (!session) return usage(io, '--session is required');
  if (!baseUrl) return usage(io, '--url or AGENT_STATE_URL is required');
  const fencing = flags.get('--fencing-token');
  if (fencing !== undefined && !/^\d+$/.test(fencing)) return usage(io, '--fencing-token must be an integer');
  const client = createHttpClient({ baseUrl, ...(token ? { token } : {}) });
  const call = io.signal ? { signal: io.signal } : {};
  const ws = client.workspaces;
  try {
    if (command === 'push') {
      const started = Date.now();
      io.line(`pushing ${rest[0]} to ${session}/${name}`);
      const pushed = await ws.push(session, name, rest[0] as string, {
        ...call,
        onProgress: progressBar(io),
        ...(noParent ? { parent: null } : {}),
        ...(fencing !== undefined ? { token: Number(fencing) } : {}),
      });
      io.line(
        `uploaded ${pushed.uploadedPacks} pack(s), ${pushed.uploadedBytes} bytes; ${pushed.unchangedFiles} file(s) unchanged`,
      );
      io.line(
        `committed ${pushed.snapshotId}: ${pushed.entries} entries, ${pushed.bytes} bytes, in ${Date.now() - started} ms`,
      );
      io.write(`${pushed.snapshotId}\n`);
    } else if (command === 'pull') {
      const [id, dir] = rest as [string, string];
      io.line(`restoring ${session}/${name} ${id} into ${dir}`);
      if (!(await ws.pull(session, name, id, dir, { ...call, onProgress: progressBar(io) })))
        return failed(io, `no snapshot ${id}`);
      io.line('restored; every file checked against its SHA-256');
    } else if (command === 'ls') {
      for (const s of await ws.list(session, name, call))
        io.write(`${s.snapshotId}  ${s.createdAt.toISOString()}\n`);
    } else if (command === 'gc') {
      io.line(`repacking ${session}/${name}`);
      const gc = await ws.gc(session, name, {
        ...call,
        ...(fencing !== undefined ? { token: Number(fencing) } : {}),
      });
      for (const r of gc.replaced) io.write(`${r.from} -> ${r.to}\n`);
      io.line(
        `rewrote ${gc.rewrittenPacks} of ${gc.packs} pack(s) (${gc.garbageBytes} bytes of garbage left to the sweep); uploaded ${gc.uploadedPacks} pack(s), ${gc.uploadedBytes} bytes`,
      );
    } else if (command === 'diff') {
      const [a, b] = rest as [string, string];
      const diff = await ws.diff(session, name, a, b, call);
      for (const p of diff.added) io.write(`+ ${p}\n`);
      for (const p of diff.removed) io.write(`- ${p}\n`);
      for (const p of diff.changed) io.write(`~ ${p}\n`);
      io.line(`${diff.newChunkBytes} bytes of new chunks`);
    } else {
      const [id, file] = rest as [string, string];
      const bytes = await ws.readFile(session, name, id, file, call);
      if (!bytes) return failed(io, `no file ${file} in ${id}`);
      io.write(bytes);
    }
    return 0;
  } catch (error) {
    return failed(io, error instanceof Error ? error.message : String(error));
  }
}

function usage(io: CliIo, problem: string): number {
  io.line(`agent-state-store workspace: ${problem}`);
  io.line(WORKSPACE_USAGE);
  return 2;
}

function failed(io: CliIo, problem: string): number {
  io.line(`agent-state-store workspace: ${problem}`);
  return 1;
}

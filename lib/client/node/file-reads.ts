/**
 * How a push reads and hashes large files (docs/DESIGN.md, "Workspace snapshots"): each file in
 * one read into a reused buffer, its SHA-256 in a worker thread that sees the same memory.
 *
 * Measured on the 1 GiB bench tree's second push (860 MB of edited binaries): `readFile` reads
 * 512 KiB per trip through the thread pool into fresh memory, and the kernel's page faults on that
 * memory cost more than the read itself (900 MB read in ~600 ms into new buffers, ~200 ms into
 * reused ones); Web Crypto's digest runs in the thread pool but first copies its input on the main
 * thread, which takes about as long as hashing it there. A buffer in a `SharedArrayBuffer` is
 * reused from file to file and hashed by the worker without a copy.
 */
import { open } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { CHUNK_MAX } from '../../workspace-snapshots/chunker.js';
import { chunkHash } from '../../workspace-snapshots/packs.js';

/** Shared buffers are allocated in steps of this size, so one fits files of nearby sizes. */
const BUFFER_STEP = 8 * 1024 * 1024;

/** Reads whole files; those cut into chunks (over `CHUNK_MAX`) into shared buffers `release` hands back. */
export class FileBuffers {
  readonly #free: SharedArrayBuffer[] = [];

  /** The file's bytes, as many as it holds when read (one read for a file in the page cache). */
  async read(file: string): Promise<Buffer> {
    const handle = await open(file, 'r');
    try {
      const size = (await handle.stat()).size;
      const data = size > CHUNK_MAX ? this.#take(size) : Buffer.allocUnsafe(size);
      let at = 0;
      while (at < size) {
        const { bytesRead } = await handle.read(data, at, size - at, at);
        if (bytesRead === 0) break;
        at += bytesRead;
      }
      return data.subarray(0, at);
    } finally {
      await handle.close();
    }
  }

  /** Hands back the buffer of bytes `read` answered: nothing may use them afterwards. */
  release(data: Uint8Array): void {
    if (data.buffer instanceof SharedArrayBuffer) this.#free.push(data.buffer);
  }

  /** The smallest free buffer that holds `size` bytes, or a new one. */
  #take(size: number): Buffer {
    let best = -1;
    for (const [i, b] of this.#free.entries()) {
      if (
        b.byteLength >= size &&
        (best < 0 || b.byteLength < (this.#free[best] as SharedArrayBuffer).byteLength)
      )
        best = i;
    }
    const buffer =
      best >= 0
        ? (this.#free.splice(best, 1)[0] as SharedArrayBuffer)
        : new SharedArrayBuffer(Math.ceil(size / BUFFER_STEP) * BUFFER_STEP);
    return Buffer.from(buffer, 0, size);
  }
}

/**
 * The worker's code: `sha256:<hex>` of a range of a shared buffer, answered by request id. Its
 * imports are dynamic, so it runs as a script and as a module alike (`--input-type=module` in the
 * parent's flags makes evaluated code a module); it takes none of the parent's flags.
 */
const HASH_WORKER = `
Promise.all([import('node:worker_threads'), import('node:crypto')]).then(([{ parentPort }, { createHash }]) => {
  parentPort.on('message', ({ id, buffer, offset, length }) => {
    const hex = createHash('sha256').update(new Uint8Array(buffer, offset, length)).digest('hex');
    parentPort.postMessage({ id, hash: 'sha256:' + hex });
  });
});
`;

/** `chunkHash` of whole files: off the main thread for bytes in a shared buffer. */
export interface FileHasher {
  hash(data: Uint8Array): Promise<string>;
  /** Stops the worker (started at the first shared buffer's hash). */
  close(): Promise<void>;
}

export function fileHasher(): FileHasher {
  let worker: Worker | undefined;
  let next = 0;
  const waiting = new Map<number, { resolve: (hash: string) => void; reject: (error: Error) => void }>();
  const failAll = (error: Error) => {
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
    worker = undefined;
  };
  const started = (): Worker => {
    if (worker) return worker;
    const w = new Worker(HASH_WORKER, { eval: true, execArgv: [] });
    // It keeps the process alive only while a hash is awaited (an idle one never holds it open).
    w.unref();
    w.on('message', ({ id, hash }: { id: number; hash: string }) => {
      waiting.get(id)?.resolve(hash);
      waiting.delete(id);
      if (waiting.size === 0) w.unref();
    });
    w.on('error', failAll);
    // However it ended, the next hash starts a new worker.
    w.on('exit', (code) => {
      if (worker === w) worker = undefined;
      if (waiting.size > 0) failAll(new Error(`the hashing worker stopped (exit code ${code})`));
    });
    worker = w;
    return w;
  };
  return {
    hash(data) {
      if (!(data.buffer instanceof SharedArrayBuffer)) return Promise.resolve(chunkHash(data));
      const id = next++;
      return new Promise<string>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        const w = started();
        w.ref();
        w.postMessage({ id, buffer: data.buffer, offset: data.byteOffset, length: data.byteLength });
      });
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}

/**
 * A TCP proxy on 127.0.0.1 in front of a Redis or MariaDB server: it counts the bytes each way on
 * the wire and, for the MySQL protocol, the commands the clients sent (a client packet with
 * sequence id 0 starts a command: one round trip). The engine bench measures ours and the seed's
 * pattern through it, so both are counted the same way.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** What crossed the proxy since it started (or since `reset`). */
export interface WireCounts {
  bytesUp: number;
  bytesDown: number;
  /** MySQL protocol only: commands sent (COM_QUERY and the others), each its own round trip. */
  commands: number;
}

export interface WireProxy {
  readonly port: number;
  readonly counts: Readonly<WireCounts>;
  reset(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `targetPort` on 127.0.0.1; `mysql` parses the client's packets to count commands. */
export async function startWireProxy(targetPort: number, protocol: 'redis' | 'mysql'): Promise<WireProxy> {
  const counts: WireCounts = { bytesUp: 0, bytesDown: 0, commands: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    // No Nagle on either leg: a client's multi-packet command must not wait for a delayed ACK.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    sockets.add(client);
    sockets.add(upstream);
    // The client's packet stream: 3-byte length, 1-byte sequence id, payload.
    let pending = Buffer.alloc(0);
    let skip = 0;
    client.on('data', (chunk: Buffer) => {
      counts.bytesUp += chunk.length;
      if (protocol === 'mysql') {
        let data = Buffer.concat([pending, chunk]);
        for (;;) {
          if (skip > 0) {
            const n = Math.min(skip, data.length);
            skip -= n;
            data = data.subarray(n);
            if (skip > 0) break;
          }
          if (data.length < 4) break;
          const length = data.readUIntLE(0, 3);
          if (data[3] === 0) counts.commands++;
          skip = length;
          data = data.subarray(4);
        }
        pending = Buffer.from(data);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      counts.bytesDown += chunk.length;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    counts,
    reset: () => {
      counts.bytesUp = 0;
      counts.bytesDown = 0;
      counts.commands = 0;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

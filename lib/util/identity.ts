/**
 * Who a request was made as, for the log line of a backend's refusal, as far as it is known without
 * another request, and never a secret: the ARN the refusal names (AWS's AccessDenied messages say
 * `User: arn:aws:sts::…:assumed-role/… is not authorized to perform …`), else the access key id
 * that signed the request, shortened to its kind (`AKIA` long-term, `ASIA` temporary, `STS.` on
 * Alibaba Cloud) and its last four characters, as consoles show it.
 */

/** An IAM or STS ARN of a caller in a message. */
const ARN = /\barn:aws[a-z-]*:(?:iam|sts)::\d{12}:[^\s"',;]+/;

/** `AKIA…MPLE` (an id of 12 characters or more), `S3RV…` (a shorter one). */
export function shortKeyId(id: string): string {
  return id.length >= 12 ? `${id.slice(0, 4)}…${id.slice(-4)}` : `${id.slice(0, 4)}…`;
}

/**
 * How a refused request's caller is named: `arn:… (from the backend's message)` when the message
 * names one, else `access key id AKIA…MPLE`; undefined when neither is known.
 */
export function callerIdentity(
  message: string | undefined,
  accessKeyId: string | undefined,
): string | undefined {
  const arn = message ? ARN.exec(message)?.[0] : undefined;
  if (arn) return `${arn} (from the backend's message)`;
  return accessKeyId ? `access key id ${shortKeyId(accessKeyId)}` : undefined;
}

/** The access key id of a SigV4 `Authorization` header (`… Credential=<id>/<date>/<region>/…`). */
export function signingKeyOf(authorization: unknown): string | undefined {
  if (typeof authorization !== 'string') return undefined;
  return /\bCredential=([^/,\s]+)\//.exec(authorization)?.[1];
}

/** The one overload of an AWS SDK v3 client's `middlewareStack.add` that `rememberSigningKey` uses. */
interface MiddlewareStack {
  add(
    middleware: (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>,
    options: { step: 'deserialize'; name: string },
  ): void;
}

const signingKeys = new WeakMap<object, { id?: string }>();

/**
 * Makes an AWS SDK v3 client remember the access key id of the last request it signed (read from
 * the signed request, no call of its own); returns the reader. One recorder per client, however many
 * drivers or locks share it.
 */
export function rememberSigningKey(client: { readonly middlewareStack: object }): () => string | undefined {
  let seen = signingKeys.get(client);
  if (!seen) {
    const record: { id?: string } = {};
    seen = record;
    signingKeys.set(client, record);
    // The deserialize step runs after signing: its request carries the Authorization header.
    (client.middlewareStack as MiddlewareStack).add(
      (next) => (args) => {
        const headers = (args as { request?: { headers?: Record<string, unknown> } }).request?.headers;
        const id = signingKeyOf(headers?.authorization);
        if (id) record.id = id;
        return next(args);
      },
      { step: 'deserialize', name: 'rememberSigningKey' },
    );
  }
  const record = seen;
  return () => record.id;
}

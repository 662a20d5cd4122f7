/** The platform-neutral request and response every adapter translates to and from. */

export interface HttpRequest {
  readonly method: string;
  /** The raw path, ids still encoded. */
  readonly path: string;
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body?: Buffer;
  /** The client's `X-Request-Id` when valid (`REQUEST_ID_PATTERN`), otherwise one generated. */
  readonly requestId: string;
  /** The platform's own id of the request (API Gateway's, Function Compute's); absent locally. */
  readonly platformRequestId?: string;
  /** Claims the platform already verified (API Gateway's JWT authorizer); absent elsewhere. */
  readonly claims?: Readonly<Record<string, unknown>>;
}

export interface HttpResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Record<string, string>;
  /** Text, or (with `isBase64Encoded`) bytes in base64: a compressed body (compression.ts). */
  readonly body?: string;
  /** The body is base64 of bytes, as API Gateway and Function Compute take binary bodies. */
  readonly isBase64Encoded?: boolean;
}

/** A request handler: what the router is and what adapters call. */
export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

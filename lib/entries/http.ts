/**
 * `agent-state-store/http`: the HTTP API as a library: the configuration, the app (router, auth,
 * OpenAPI document), the node:http server and the Function Compute handler. Needs the optional
 * peers `jose` and `@aws-lambda-powertools/logger` and `/metrics`; the drivers and locks come from
 * their own subpaths, and the API Gateway handler (middy) from `agent-state-store/http/apigw`.
 */

export { type Config, ConfigError, loadConfig } from '../config.js';
export { createFunctionComputeHandler, type FcHttpEvent, type FcHttpResult } from '../http/adapters/fc.js';
export { type BlobServer, createNodeServer, type NodeServerOptions } from '../http/adapters/node.js';
export { type App, type AppParts, createApp, type EngineParts } from '../http/app.js';
export { type Authenticator, type AuthOptions, bearerJwtAuth, platformClaimsAuth } from '../http/auth.js';
export { type EngineLibraries, engineFrom, loadEngine } from '../http/backends/engines.js';
export { createRouter } from '../http/router.js';
export type { HttpHandler, HttpRequest, HttpResponse } from '../http/types.js';

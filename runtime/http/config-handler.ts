/**
 * @module `GET /api/_webAppConfig` on plain `node:http`, beside `api-handler.ts` and
 * `function-handler.ts`: the route a web app asks first on every page load, and the cheapest request
 * svc serves (no data), so it skips the Express application's routers (bench/README.md, the `ping` row).
 * The same steps as the Express route of `auth-routes.ts`: request id and log line, authentication (a
 * bad token is refused as there), then the body `webAppConfig` builds, written as Express writes it
 * (`express-answer.ts`: `Content-Type`, `Content-Length`, weak `ETag`).
 *
 * Left to Express, which answers as before: another spelling of the path (letter case, a trailing
 * slash, percent-escapes), another method (405 there), and conditional requests (`If-None-Match`,
 * `If-Modified-Since`), whose freshness check Express does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthService } from '../auth/auth-service.js';
import { authenticateCredentials, credentialInput } from '../auth/authenticate.js';
import { webAppConfig } from '../auth/sign-in.js';
import type { Logger } from '../log.js';
import type { LogStore } from '../logs/log-store.js';
import { noteCaller } from '../logs/request-log.js';
import type { Metrics } from '../metrics/metrics.js';
import { trackRequest } from './api-handler.js';
import { jsonBody, send, sendError, type JsonBody } from './express-answer.js';

const PATH = '/api/_webAppConfig';

/**
 * Builds the handler; it returns false for a request it does not serve (see the module comment).
 * Source: DESIGN §11 (`_webAppConfig`), §4 (error body).
 */
export function configHandler(logger: Logger, auth: AuthService, logs?: LogStore, metrics?: Metrics): (req: IncomingMessage, res: ServerResponse) => boolean {
  const series = metrics?.route(PATH);
  // The body is the same object until the providers change (`svc dev`): serialized once per object.
  let lastConfig: object | undefined;
  let body: JsonBody | undefined;
  return (req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(PATH) || (url.length !== PATH.length && url[PATH.length] !== '?')) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) return false;
    const reqId = trackRequest(logger, req, res, logs, series, auth.trustedPeer, { idHeader: false });
    void (async () => {
      try {
        const { caller } = await authenticateCredentials(auth, credentialInput(req, auth));
        noteCaller(res, caller);
        const config = webAppConfig(auth);
        if (config !== lastConfig || !body) {
          body = jsonBody(JSON.stringify(config));
          lastConfig = config;
        }
        send(res, 200, body, { 'x-request-id': reqId });
      } catch (err) {
        sendError(logger, res, reqId, err);
      }
    })();
    return true;
  };
}

/**
 * @module The HTTP endpoints of real-time (SPEC §4.7, DESIGN §4 "Real-time details"), on plain
 * `node:http` beside the data routes:
 * - `GET /api/_rt/ws` → `{ url }`: a one-time `ws://…/api/_rt/client?access_token=…` URL for the Web
 *   PubSub client, carrying the caller's identity (anonymous callers get an anonymous connection).
 * - `GET /api/_rt/hub` → `{ url, accessToken }`: where the SignalR client negotiates (the redirect form).
 * - `POST /api/_rt/hub/negotiate`: the same answer for a bare `withUrl(<base>/api/_rt/hub)` client.
 * - `POST /api/_rt/signalr/negotiate`: the SignalR negotiate itself (`hub.ts`).
 * - `POST /api/_rt/join` `{ connectionId, channel, readOnly? }` and `POST /api/_rt/send`
 *   `{ channel, body }`: clients must be signed in; private channels are refused (400); a client joins
 *   only its own connections (admins any).
 * - `POST /api/{collection}/_listen` `{ connectionId, type, id?, lookupIds? }`: needs the collection's
 *   LISTEN rule (refused without one, admins too); 400 `LISTEN_ON_VIEW` on a view or a query; 400
 *   past `MAX_LISTEN_IDS` ids and lookupIds of one connection and collection (`listen-filter.ts`).
 * Each answers 200 with `{ group }`, the wire group its messages arrive on (`<api-name>:<name>`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from '../errors.js';
import { authenticateCredentials, credentialInput } from '../auth/authenticate.js';
import { ANONYMOUS, type Caller } from '../auth/caller.js';
import type { AuthService } from '../auth/auth-service.js';
import type { AppRuntime } from '../core/context.js';
import { readJsonBody } from '../http/body.js';
import { sendError, trackRequest } from '../http/api-handler.js';
import { noteCaller } from '../logs/request-log.js';
import { entityGroup } from './channels.js';
import { authorizeListen, joinChannel, JOINING, requireSignedIn, sendToChannel, SENDING } from './client-rules.js';
import { actorOf, type RealtimeService } from './service.js';
import { signRealtimeToken } from './tokens.js';
import { hubNegotiate } from './hub.js';

/** Largest body of a real-time request, bytes (a `_rt/send` body is a channel message). */
const MAX_RT_BODY_BYTES = 1024 * 1024;

/** The SignalR negotiate of the hub (`hub.ts`). */
const NEGOTIATE = '/api/_rt/signalr/negotiate';

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Route = (ctx: { req: IncomingMessage; caller: Caller; body: () => Promise<Record<string, unknown>> }) => Promise<unknown>;

/**
 * The public origin the client reached us at, as `http(s)://` and `ws(s)://` (`AuthService.publicOrigin`:
 * svc.json `publicUrl`, else a trusted proxy's `X-Forwarded-Proto`/`X-Forwarded-Host`, else the socket).
 */
export function originOf(req: IncomingMessage, auth: Pick<AuthService, 'publicOrigin'>): { http: string; ws: string } {
  const http = auth.publicOrigin(req) ?? 'http://localhost';
  return { http, ws: http.replace(/^http/, 'ws') };
}

/** The object body of a real-time request. @throws HttpError INVALID_JSON (400) for anything else */
async function objectBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJsonBody(req, MAX_RT_BODY_BYTES);
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError('INVALID_JSON', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

function connectionIdOf(body: Record<string, unknown>): string {
  const id = body.connectionId;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw new HttpError('INVALID_PARAMETER', 'connectionId must be a non-empty string');
  return id;
}

/**
 * Builds the handler of the real-time HTTP endpoints; it returns false for any other request.
 * Source: SPEC §4.7 (table and rules 1–7), DESIGN §4 "Real-time details".
 */
export function realtimeHttpHandler(service: RealtimeService, app: AppRuntime): (req: IncomingMessage, res: ServerResponse) => boolean {
  const hubInfo = async (req: IncomingMessage, caller: Caller) => ({
    url: `${originOf(req, service.auth).http}/api/_rt/signalr`,
    accessToken: await signRealtimeToken(service.auth, 'hub', caller),
  });
  const routes = new Map<string, Route>([
    [
      'GET /api/_rt/ws',
      async ({ req, caller }) => ({
        url: `${originOf(req, service.auth).ws}/api/_rt/client?access_token=${await signRealtimeToken(service.auth, 'ws', caller)}`,
      }),
    ],
    ['GET /api/_rt/hub', ({ req, caller }) => hubInfo(req, caller)],
    ['POST /api/_rt/hub/negotiate', ({ req, caller }) => hubInfo(req, caller)],
    [`POST ${NEGOTIATE}`, ({ req }) => hubNegotiate(service, req)],
    [
      'POST /api/_rt/join',
      async ({ caller, body }) => {
        requireSignedIn(caller, JOINING);
        const b = await body();
        const connectionId = connectionIdOf(b);
        if (b.readOnly !== undefined && typeof b.readOnly !== 'boolean') throw new HttpError('INVALID_PARAMETER', 'readOnly must be a boolean');
        return { group: await joinChannel(service, caller, connectionId, b.channel, b.readOnly === true) };
      },
    ],
    [
      'POST /api/_rt/send',
      async ({ caller, body }) => {
        requireSignedIn(caller, SENDING);
        const b = await body();
        if (!('body' in b) || b.body === undefined) throw new HttpError('INVALID_PARAMETER', 'body is required (any JSON value)');
        return { group: sendToChannel(service, caller, b.channel, b.body) };
      },
    ],
  ]);

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const listen = /^\/api\/([^/]+)\/_listen\/?$/.exec(path);
    const route = listen ? undefined : routes.get(`${req.method} ${path.endsWith('/') ? path.slice(0, -1) : path}`);
    if (!listen && !route) {
      if (!path.startsWith('/api/_rt/')) return false;
      const reqId = trackRequest(service.logger, req, res, app.logs, undefined, service.auth.trustedPeer);
      sendError(
        app,
        req,
        res,
        reqId,
        new HttpError(routes.has(`GET ${path}`) || routes.has(`POST ${path}`) ? 'METHOD_NOT_ALLOWED' : 'NOT_FOUND', `no route ${req.method} ${path}`),
      );
      return true;
    }
    const reqId = trackRequest(service.logger, req, res, app.logs, undefined, service.auth.trustedPeer);
    void (async () => {
      try {
        // The hub's negotiate carries the hub's own token as its bearer token, not an access token.
        const caller = path === NEGOTIATE ? ANONYMOUS : (await authenticateCredentials(service.auth, credentialInput(req, service.auth))).caller;
        noteCaller(res, caller);
        const body = () => objectBody(req);
        const answer = listen ? await listenRoute(service, app, safeDecode(listen[1]), req.method ?? 'GET', caller, body) : await route!({ req, caller, body });
        const text = JSON.stringify(answer);
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
      } catch (err) {
        sendError(app, req, res, reqId, err);
      }
    })();
    return true;
  };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError('INVALID_PARAMETER', 'the path is not valid percent-encoding');
  }
}

/** `POST /api/{collection}/_listen` (SPEC §4.7 rules 1–3). */
async function listenRoute(
  service: RealtimeService,
  app: AppRuntime,
  name: string,
  method: string,
  caller: Caller,
  body: () => Promise<Record<string, unknown>>,
): Promise<unknown> {
  const resource = app.resources.get(name);
  if (!resource) throw new HttpError('NOT_FOUND', `no collection named ${JSON.stringify(name)}`);
  if (resource.kind === 'external') throw new HttpError('METHOD_NOT_ALLOWED', `${name} is an external collection: it has no change feed`);
  if (resource.kind === 'query' || resource.view) {
    throw new HttpError('LISTEN_ON_VIEW', `${name} is a ${resource.kind === 'query' ? 'query' : 'view'}: listen on its collection instead`);
  }
  if (method !== 'POST') throw new HttpError('METHOD_NOT_ALLOWED', '_listen takes POST');
  authorizeListen(service, caller, resource.collection);
  const b = await body();
  const connectionId = connectionIdOf(b);
  if (b.type !== 'ws' && b.type !== 'hub') throw new HttpError('INVALID_PARAMETER', 'type must be "ws" or "hub"');
  if (b.id !== undefined && (typeof b.id !== 'string' || !GUID.test(b.id))) throw new HttpError('INVALID_PARAMETER', 'id must be a GUID');
  if (b.lookupIds !== undefined && (!Array.isArray(b.lookupIds) || !b.lookupIds.every((v) => typeof v === 'string' && GUID.test(v)))) {
    throw new HttpError('INVALID_PARAMETER', 'lookupIds must be an array of GUIDs');
  }
  await service.apply({
    op: 'listen',
    connectionId,
    type: b.type,
    collection: name,
    id: b.id as string | undefined,
    lookupIds: b.lookupIds as string[] | undefined,
    actor: actorOf(caller),
  });
  return { group: entityGroup(service.rules, name) };
}

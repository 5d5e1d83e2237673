/**
 * @module The hub: the SignalR JSON hub protocol over WebSockets (SPEC §4.7, §6.1; DESIGN §4
 * "Real-time details"; ../shared/notes/realtime-protocols.md §2). STUB: to be written.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from '../errors.js';
import type { RealtimeService } from './service.js';

/**
 * `POST /api/_rt/signalr/negotiate?negotiateVersion=1` with the hub access token as a bearer token.
 * @returns the negotiate v1 body
 */
export async function hubNegotiate(service: RealtimeService, req: IncomingMessage): Promise<unknown> {
  void service;
  void req;
  throw new HttpError('NOT_FOUND', 'the hub is not built yet');
}

/** Serves the hub's WebSocket endpoint `/api/_rt/signalr` for `service`. */
export function serveHub(service: RealtimeService): void {
  void service;
}

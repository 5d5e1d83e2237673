/**
 * @module The channel rules of SPEC §4.7 for clients, in one place (issue 20 §7): the HTTP endpoints
 * (`http.ts`), the Web PubSub socket (`wps-frames.ts`) and the hub (`hub.ts`) all call these, so that a
 * request is allowed or refused — with the same status and message — whatever the transport carries it.
 * Function code has its own, wider rules (`functions.ts`: private channels allowed).
 *
 * | operation | anonymous | regular channel | collection name | private (name has `:`) |
 * |---|---|---|---|---|
 * | join | 401 | yes | 400 | 400 (only functions join them) |
 * | send | 401 | yes; 403 on a receive-only membership | 400 | 400, unless a function joined the sending connection read-write |
 * | leave | yes | yes | 400 | yes |
 * | listen | by the collection's LISTEN rules (401 / 403); 403 without any LISTEN rule | | | |
 */
import type { Caller } from '../auth/caller.js';
import { authorize } from '../auth/authorize.js';
import type { Collection } from '../manifest.js';
import { HttpError } from '../errors.js';
import type { Connection, DataType } from './broker.js';
import { groupOfChannel } from './channels.js';
import { actorOf, type RealtimeService } from './service.js';

/** The operations named in a sign-in refusal. */
export const JOINING = 'joining a channel';
export const SENDING = 'sending to a channel';

/**
 * @param what - the operation, e.g. `joining a channel`
 * @throws HttpError UNAUTHORIZED (401) for an anonymous caller
 */
export function requireSignedIn(caller: Caller, what: string): void {
  if (caller.kind === 'anonymous') throw new HttpError('UNAUTHORIZED', `${what} requires authentication`);
}

/**
 * Joins the client connection `connectionId` (on any instance) to `channel`. A receive-only membership a
 * function gave stays receive-only, whatever `readOnly` says.
 * @returns the wire group (`<api-name>:<channel>`)
 * @throws HttpError UNAUTHORIZED (401) anonymous; INVALID_PARAMETER (400) for a bad, private or
 *   collection-named channel; FORBIDDEN (403) for another identity's connection; NOT_FOUND (404) for an
 *   unknown connection
 */
export async function joinChannel(service: RealtimeService, caller: Caller, connectionId: string, channel: unknown, readOnly = false): Promise<string> {
  requireSignedIn(caller, JOINING);
  const group = groupOfChannel(service.rules, channel, 'client');
  await service.apply({ op: 'join', connectionId, group, readOnly, sticky: true, actor: actorOf(caller) });
  return group;
}

/**
 * Takes the client connection `connectionId` out of `channel` (private ones included: a client may
 * leave what a function joined it to).
 * @throws HttpError INVALID_PARAMETER (400) for a bad or collection-named channel; as `joinChannel` for the connection
 */
export async function leaveChannel(service: RealtimeService, caller: Caller, connectionId: string, channel: unknown): Promise<string> {
  const group = groupOfChannel(service.rules, channel, 'function');
  await service.apply({ op: 'leave', connectionId, group, actor: actorOf(caller) });
  return group;
}

/** How a client's message arrives. */
export interface ClientSend {
  dataType?: DataType;
  /** The sending connection (sockets); absent over HTTP. */
  from?: Connection;
  noEcho?: boolean;
}

/**
 * Sends a client's message to `channel` on every instance.
 * @returns the wire group
 * @throws HttpError UNAUTHORIZED (401) anonymous; INVALID_PARAMETER (400) for a bad or collection-named
 *   channel, a private one the sending connection was not joined to read-write by a function, or data
 *   nested too deep; FORBIDDEN (403) when the sending connection joined the channel receive-only
 */
export function sendToChannel(service: RealtimeService, caller: Caller, channel: unknown, data: unknown, how: ClientSend = {}): string {
  requireSignedIn(caller, SENDING);
  const group = groupOfChannel(service.rules, channel, 'function');
  const member = how.from?.groups.get(group);
  // A private channel is open to a client only once a function joined it read-write (the agent's channel).
  if (!member) groupOfChannel(service.rules, channel, 'client');
  if (member?.readOnly) throw new HttpError('FORBIDDEN', `channel ${JSON.stringify(channel)} was joined receive-only`);
  service.send({
    group,
    dataType: how.dataType ?? 'json',
    data,
    fromConnectionId: how.from?.id ?? null,
    fromUserId: caller.id,
    noEcho: how.noEcho === true,
  });
  return group;
}

/**
 * Admits `caller` to the change feed of `collection` (SPEC §4.7 rule 1): every LISTEN rule counts,
 * combined as `authorize` combines the rules of any method.
 * @throws HttpError FORBIDDEN (403) when the collection has no LISTEN rule (admins too) or the caller has
 *   none of its roles; UNAUTHORIZED (401) for an anonymous caller the rules do not admit
 */
export function authorizeListen(service: RealtimeService, caller: Caller, collection: Collection): void {
  if (!collection.access.some((r) => r.method === 'LISTEN')) {
    throw new HttpError('FORBIDDEN', `${collection.name} has no LISTEN rule: its changes cannot be listened to`);
  }
  authorize(caller, service.manifest, collection, 'LISTEN', collection.access, { what: `LISTEN on ${collection.name}` });
}

/**
 * True when `caller` may keep (or regain) a change feed of the app's collection `name`: the check of
 * `authorizeListen`, as a yes or no; false for a name that is no collection of the app (any more).
 */
export function mayListen(service: RealtimeService, caller: Caller, name: string): boolean {
  const collection = service.manifest.collections.find((c) => c.name === name);
  if (!collection) return false;
  try {
    authorizeListen(service, caller, collection);
    return true;
  } catch {
    return false;
  }
}

/**
 * @module Channel names (SPEC §4.7 rules 4–5, DESIGN §4 "Real-time details"). A channel `chat` is the
 * group `<api-name>:chat` on the wire; a name with `:` after the prefix is private (only functions may
 * join or send to it); a name equal to a collection's is refused, because `<api-name>:<collection>` is
 * the group entity change notifications arrive on.
 */
import { HttpError } from '../errors.js';

/** Longest channel name (without the prefix), characters. */
export const MAX_CHANNEL_LENGTH = 200;

/** What the channel rules need to know of the app. */
export interface ChannelRules {
  apiName: string;
  collections: ReadonlySet<string>;
}

/** Who asks to join or send: a client (HTTP caller or socket) or function code (private channels allowed). */
export type ChannelUser = 'client' | 'function';

/** The wire group of a channel: `<api-name>:<channel>`. */
export const wireGroup = (rules: ChannelRules, channel: string): string => `${rules.apiName}:${channel}`;

/** The group entity notifications of `collection` arrive on (SPEC §6.1 via the WebSocket service). */
export const entityGroup = (rules: ChannelRules, collection: string): string => `${rules.apiName}:${collection}`;

/**
 * Checks a channel name given without the prefix (HTTP `_rt/join`, `_rt/send`, functions, the hub) and
 * returns its wire group.
 * @param field - the request field named in the message (`channel`)
 * @throws HttpError INVALID_PARAMETER (400) for a missing, empty, too long or collection-named channel,
 *   and for a private one (`:` in it) asked for by a client
 */
export function groupOfChannel(rules: ChannelRules, channel: unknown, user: ChannelUser, field = 'channel'): string {
  if (typeof channel !== 'string' || channel.length === 0) throw new HttpError('INVALID_PARAMETER', `${field} must be a non-empty string`);
  if (channel.length > MAX_CHANNEL_LENGTH) throw new HttpError('INVALID_PARAMETER', `${field} is longer than ${MAX_CHANNEL_LENGTH} characters`);
  if (rules.collections.has(channel)) {
    throw new HttpError('INVALID_PARAMETER', `${field} "${channel}" is the name of a collection: its change notifications are received with _listen`);
  }
  if (user === 'client' && channel.includes(':')) {
    throw new HttpError('INVALID_PARAMETER', `${field} "${channel}" is private (it contains ":"): only functions may join or send to it`);
  }
  return wireGroup(rules, channel);
}

/**
 * @module The client frames of a Web PubSub connection (../shared/notes/realtime-protocols.md §1.3):
 * `joinGroup`, `leaveGroup`, `sendToGroup` (`noEcho`; `dataType` json, text or binary), `event`, `ping`
 * (→ `pong`) and `sequenceAck`. Channel rules are the shared ones of `client-rules.ts`; every `ackId`
 * gets exactly one ack: success, an error (`Forbidden` for a rule's refusal, `BadRequest` for a
 * malformed frame), or `Duplicate` for an id this connection already completed. A binary frame closes
 * with 1003, invalid JSON or an unknown type without `ackId` with 1007, a flood with 1008.
 */
import type { RawData } from 'ws';
import { answerError, HttpError } from '../errors.js';
import type { DataType } from './broker.js';
import { joinChannel, leaveChannel, sendToChannel } from './client-rules.js';
import { describe } from './guard.js';
import { MAX_DATA_DEPTH, nestedTooDeep, type RealtimeService } from './service.js';
import type { AckError, WpsSession } from './wps-session.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Reads an optional `ackId`: an unsigned integer, or undefined. @throws Error for another value */
function ackIdOf(frame: Record<string, unknown>): number | undefined {
  const ackId = frame.ackId;
  if (ackId === undefined || ackId === null) return undefined;
  if (typeof ackId !== 'number' || !Number.isSafeInteger(ackId) || ackId < 0) throw new Error('ackId must be an unsigned integer');
  return ackId;
}

/**
 * The channel of a group name written on the socket (`<api-name>:<channel>`, SPEC §4.7 rule 4).
 * @throws HttpError INVALID_PARAMETER (400) for a name without the prefix
 */
function channelOfGroup(service: RealtimeService, group: unknown): string {
  const prefix = `${service.rules.apiName}:`;
  if (typeof group !== 'string' || !group.startsWith(prefix))
    throw new HttpError('INVALID_PARAMETER', `group must be a channel name with the "${prefix}" prefix`);
  return group.slice(prefix.length);
}

/** Handles one client frame (see the module notes). */
export async function onFrame(service: RealtimeService, session: WpsSession, data: RawData, isBinary: boolean): Promise<void> {
  session.alive = true;
  if (!session.socket) return;
  if (!session.flood.take()) {
    service.logger.warn({ connectionId: session.connection.id }, 'connection closed: message flood');
    return session.close(1008, 'too many messages: slow down');
  }
  if (isBinary) return session.close(1003, 'binary frames are not supported: send JSON text frames');
  let frame: Record<string, unknown>;
  let ackId: number | undefined;
  try {
    const parsed: unknown = JSON.parse(data.toString());
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a frame must be a JSON object');
    frame = parsed as Record<string, unknown>;
    ackId = ackIdOf(frame);
  } catch (err) {
    return session.close(1007, err instanceof SyntaxError ? 'invalid JSON' : (err as Error).message);
  }
  const { connection } = session;
  const { caller } = connection;
  const refuse = (name: AckError, message: string) => (ackId === undefined ? undefined : session.ack(ackId, { name, message }));
  if (session.isDuplicate(ackId)) return refuse('Duplicate', `Message with ack-id: ${ackId} has been processed`);
  try {
    switch (frame.type) {
      case 'ping':
        return session.write('{"type":"pong"}');
      case 'sequenceAck':
        return session.acknowledged(frame.sequenceId);
      case 'joinGroup':
        await joinChannel(service, caller, connection.id, channelOfGroup(service, frame.group));
        return session.ack(ackId);
      case 'leaveGroup':
        await leaveChannel(service, caller, connection.id, channelOfGroup(service, frame.group));
        return session.ack(ackId);
      case 'sendToGroup': {
        const dataType = frame.dataType ?? 'json';
        const problem = dataProblem(dataType, frame.data);
        if (problem) return refuse('BadRequest', problem);
        sendToChannel(service, caller, channelOfGroup(service, frame.group), frame.data, {
          dataType: dataType as DataType,
          from: connection,
          noEcho: frame.noEcho === true,
        });
        return session.ack(ackId);
      }
      case 'event':
        if (typeof frame.event !== 'string') return refuse('BadRequest', 'event must be a string');
        return session.ack(ackId);
      default:
        if (ackId === undefined) return session.close(1007, `unknown message type ${describe(frame.type)}`);
        return refuse('BadRequest', `unknown message type ${describe(frame.type)}`);
    }
  } catch (err) {
    // A rule's refusal (400, 401, 403) is Azure's `Forbidden`: permission is missing (notes §1.3). An
    // infrastructure error (database down: 503) is answered too; anything else goes to the guard (1011).
    const { status, body } = answerError(err);
    if (status < 500) return refuse('Forbidden', body.error);
    if (body.code !== 'INTERNAL') return refuse('InternalServerError', body.error);
    throw err;
  }
}

/** Why `data` does not fit `dataType`, or null. */
function dataProblem(dataType: unknown, data: unknown): string | null {
  switch (dataType) {
    case 'json':
      if (data === undefined || data === null) return 'data is required';
      return nestedTooDeep(data) ? `data is nested deeper than ${MAX_DATA_DEPTH} levels` : null;
    case 'text':
      return typeof data === 'string' ? null : 'data must be a string when dataType is text';
    case 'binary':
      return typeof data === 'string' && BASE64.test(data) ? null : 'data must be base64 text when dataType is binary';
    default:
      return 'dataType must be json, text or binary';
  }
}

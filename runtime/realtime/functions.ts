/**
 * @module Real-time for function code (SPEC §4.7 channel table: functions join and send, private
 * channels included; DESIGN §4 "Real-time from functions"): `rt.join` and `rt.send` of a worker arrive
 * here as `RealtimeRequest`s and are answered like API calls.
 */
import { answerError, HttpError } from '../errors.js';
import type { CallRealtime } from '../functions/call-api.js';
import { groupOfChannel } from './channels.js';
import { FUNCTION_ACTOR, type RealtimeService } from './service.js';

/**
 * The `CallRealtime` of `service`: joins any connection on any instance, sends to any channel.
 * @returns 200 `{ group }`; 400 for a bad channel or arguments, 404 for an unknown connection (as the error body)
 */
export function functionRealtime(service: RealtimeService): CallRealtime {
  return async (request) => {
    try {
      const group = groupOfChannel(service.rules, request.channel, 'function');
      if (request.op === 'join') {
        const { connectionId, readOnly } = request;
        if (typeof connectionId !== 'string' || connectionId === '') throw new HttpError('INVALID_PARAMETER', 'connectionId must be a non-empty string');
        if (readOnly !== undefined && typeof readOnly !== 'boolean') throw new HttpError('INVALID_PARAMETER', 'readOnly must be a boolean');
        await service.apply({ op: 'join', connectionId, group, readOnly: readOnly === true, actor: FUNCTION_ACTOR });
      } else {
        if (request.body === undefined) throw new HttpError('INVALID_PARAMETER', 'body is required (any JSON value)');
        service.send({ group, dataType: 'json', data: request.body, fromConnectionId: null, fromUserId: null, noEcho: false });
      }
      return { status: 200, body: { group } };
    } catch (err) {
      const { status, body } = answerError(err);
      if (status >= 500) service.logger.error({ err }, 'real-time call of a function failed');
      return { status, body };
    }
  };
}

/**
 * @module Where a `ctx.agent` call on one identity's session runs when several instances share a
 * database and a bus (issue 13 "Many instances"; DESIGN §7): on the instance holding the identity's
 * lease, reached over the bus after a liveness ping — or here, when there is no live holder, when
 * the holder is gone (taken over at once), or once a holder that does not answer has let its lease
 * lapse (taken over then).
 */
import { HttpError } from '../errors.js';
import type { AgentRequest, ApiReply } from '../functions/call-api.js';
import type { Logger } from '../log.js';
import type { RealtimeService } from '../realtime/service.js';
import { LEASE_MS, type Leases } from './lease.js';

/** `ctx.agent` operations that act on one identity's session, run where that session runs. */
export const FORWARDED_OPS = new Set(['connect', 'wake', 'prompt', 'close']);
/** How long a forwarded operation may take, ms (a `prompt` waits for its whole turn). */
const RPC_MS = 10_000;
const PROMPT_RPC_MS = 10 * 60_000;
/** The bus topic of the liveness ping a call sends a session's holder before forwarding to it. */
export const PING_TOPIC = 'agent-ping';
/** How long a holder has to answer that ping before it is thought gone (or frozen), ms. */
const PING_MS = 2000;
/**
 * How long a call waits for a holder that does not answer — until its lease lapses and this instance
 * takes the session over — or for a session another instance is starting, ms. A lease lapses at most
 * `LEASE_MS` after its holder died.
 */
export const TAKEOVER_WAIT_MS = LEASE_MS + 10_000;

/** The identity's lease was taken by another instance first (it is starting the session there). */
export class LeaseTaken extends HttpError {
  constructor() {
    super('SERVICE_UNAVAILABLE', 'this agent session is starting on another instance: try again');
  }
}

export interface ForwardingDeps {
  leases: Leases;
  realtime: RealtimeService;
  logger: Logger;
  /** Whether this instance runs (or is starting) the identity's session. */
  runsHere(identityId: string): boolean;
}

export class Forwarding {
  /** Identities whose lease this instance may take from an instance that no longer listens. */
  readonly takeOver = new Map<string, string>();

  constructor(private readonly deps: ForwardingDeps) {}

  /**
   * Forwards `request` to the instance holding the identity's session and answers its reply, or null
   * when this instance is to run it (no live holder, or the holder is gone: then marked for takeover).
   * A holder that does not answer its ping is asked again until its lease lapses or `deadline`.
   * @throws HttpError SERVICE_UNAVAILABLE (503) when the holder neither answers nor lets its lease lapse in time
   */
  async forward(identityId: string, request: AgentRequest, deadline: number): Promise<ApiReply | null> {
    const bus = this.deps.realtime;
    let warned = false;
    for (;;) {
      if (this.deps.runsHere(identityId)) return null;
      const holder = await this.deps.leases.holder(identityId);
      if (!holder) return null;
      const ping = await bus.rpc(holder, PING_TOPIC, null, PING_MS);
      const answer = ping.delivered && !ping.timedOut ? await bus.rpc(holder, 'agent', request, request.op === 'prompt' ? PROMPT_RPC_MS : RPC_MS) : ping;
      if (!answer.delivered) {
        this.deps.logger.warn({ identityId, instance: holder }, 'the instance running this agent session is gone: taking it over');
        this.takeOver.set(identityId, holder);
        return null;
      }
      if (!answer.timedOut) return answer.reply as ApiReply;
      // A prompt's turn may run long; any other answer comes at once from a live holder.
      if ((ping.delivered && !ping.timedOut && request.op === 'prompt') || Date.now() > deadline)
        throw new HttpError('SERVICE_UNAVAILABLE', 'the instance running this agent session did not answer in time');
      if (!warned)
        this.deps.logger.warn({ identityId, instance: holder }, 'the instance running this agent session does not answer: waiting for its lease to lapse');
      warned = true;
    }
  }
}

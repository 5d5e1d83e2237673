/**
 * @module Hub connections whose socket opened on another instance than the one that negotiated them
 * (issue 20 §4; DESIGN §6). A connection id names the instance that made it (`<instance>.<random>`,
 * `bus.ts`), and operations on a connection go to that instance. SignalR's negotiate makes the id on
 * instance A, but without sticky sessions the socket may open on B. So, before B accepts such a
 * socket, it tells A — the id's "home" — that it holds the connection (`rpc` topic `home`); A
 * remembers that and passes the connection operations it receives for the id on to B (one hop), until
 * B says the connection closed. B itself runs operations on connections it holds, whatever their id
 * names. If A is gone, B still serves the connection for callers that reach B; others get 404.
 */
import { instanceOf } from './bus.js';

/** What the homes need of the real-time service: its instance id and its calls between instances. */
export interface InstanceCalls {
  readonly instanceId: string;
  onRpc(topic: string, handler: (payload: unknown) => Promise<unknown>): void;
  rpc(instanceId: string, topic: string, payload: unknown, timeoutMs: number): Promise<unknown>;
}

/** The `rpc` topic of home notices. */
export const HOME_TOPIC = 'home';
/** How long B waits for A to note a connection before accepting the socket anyway, ms. */
const HOME_TIMEOUT_MS = 2000;

/** A home notice: `holder` holds `connectionId` now, or (null) no longer. */
interface HomeNotice {
  connectionId: string;
  holder: string | null;
}

/** The connections made here that another instance holds, and the notices that keep that current. */
export class ConnectionHomes {
  /** Connection id → the instance holding it (only ids this instance made). */
  private readonly away = new Map<string, string>();

  constructor(private readonly service: InstanceCalls) {
    service.onRpc(HOME_TOPIC, async (payload) => {
      const { connectionId, holder } = payload as HomeNotice;
      if (instanceOf(connectionId) !== service.instanceId) return false;
      if (holder === null) this.away.delete(connectionId);
      else this.away.set(connectionId, holder);
      return true;
    });
  }

  /** The instance holding a connection made here but held elsewhere, or undefined. */
  holderOf(connectionId: string): string | undefined {
    return this.away.get(connectionId);
  }

  /**
   * Before this instance accepts the socket of `connectionId`: when another instance made the id,
   * waits (at most 2 s) until that instance has noted where the connection lives. Never throws.
   */
  async adopt(connectionId: string): Promise<void> {
    const home = instanceOf(connectionId);
    if (home === null || home === this.service.instanceId) return;
    const notice: HomeNotice = { connectionId, holder: this.service.instanceId };
    await this.service.rpc(home, HOME_TOPIC, notice, HOME_TIMEOUT_MS);
  }

  /** After the socket of `connectionId` closed here: tells its home instance to forget it (not awaited). */
  release(connectionId: string): void {
    const home = instanceOf(connectionId);
    if (home === null || home === this.service.instanceId) return;
    const notice: HomeNotice = { connectionId, holder: null };
    void this.service.rpc(home, HOME_TOPIC, notice, HOME_TIMEOUT_MS);
  }
}

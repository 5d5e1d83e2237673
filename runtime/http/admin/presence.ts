/**
 * @module Which instances are up, and what real-time each holds (DESIGN §9 `GET /api/_admin/realtime`
 * and `status`). Every `PRESENCE_MS` each instance sends a report — its id, its connection count and
 * its channels with their member counts (the largest `MAX_CHANNELS_REPORTED`) — as a channel message
 * on the private group `<api-name>:_svc:presence` (private: clients can neither join nor send to it),
 * which the real-time service carries to every instance over the bus (Redis) like any channel
 * message. An instance is "seen" while its last report is younger than three periods. With one
 * instance (no Redis) there is nothing to carry and the answer is this instance alone.
 */
import type { RealtimeService } from '../../realtime/service.js';

/** How often an instance reports, ms. */
export const PRESENCE_MS = 5000;
/** Channels per instance report (the ones with the most members). */
export const MAX_CHANNELS_REPORTED = 500;

/** What one instance reports. */
export interface InstanceReport {
  instance: string;
  /** When the report was made (ISO 8601). */
  seenAt: string;
  connections: number;
  channels: { name: string; members: number }[];
}

function isReport(v: unknown): v is InstanceReport {
  const r = v as InstanceReport;
  return typeof r === 'object' && r !== null && typeof r.instance === 'string' && typeof r.connections === 'number' && Array.isArray(r.channels);
}

export class Presence {
  private readonly seen = new Map<string, { at: number; report: InstanceReport }>();
  private readonly group: string;

  constructor(private readonly realtime: RealtimeService) {
    this.group = `${realtime.rules.apiName}:_svc:presence`;
  }

  /** Listens for reports and sends one now and every `PRESENCE_MS` until the real-time service closes. */
  start(): this {
    this.realtime.onGroupMessage((m) => {
      if (m.group !== this.group || !isReport(m.data) || m.data.instance === this.realtime.instanceId) return;
      this.seen.set(m.data.instance, { at: Date.now(), report: m.data });
    });
    const timer = setInterval(() => this.send(), PRESENCE_MS);
    timer.unref();
    this.realtime.onClose(() => clearInterval(timer));
    this.send();
    return this;
  }

  private send(): void {
    try {
      this.realtime.send({ group: this.group, dataType: 'json', data: this.local(), fromConnectionId: null, fromUserId: null, noEcho: false });
    } catch (err) {
      this.realtime.logger.warn({ err: (err as Error).message }, 'presence report not sent');
    }
  }

  /** This instance's report, as of now. */
  local(): InstanceReport {
    const prefix = `${this.realtime.rules.apiName}:`;
    const members = new Map<string, number>();
    const connections = this.realtime.broker.all();
    for (const c of connections) {
      for (const group of c.groups.keys()) {
        const name = group.startsWith(prefix) ? group.slice(prefix.length) : group;
        members.set(name, (members.get(name) ?? 0) + 1);
      }
    }
    const channels = [...members]
      .map(([name, n]) => ({ name, members: n }))
      .sort((a, b) => b.members - a.members || a.name.localeCompare(b.name))
      .slice(0, MAX_CHANNELS_REPORTED);
    return { instance: this.realtime.instanceId, seenAt: new Date().toISOString(), connections: connections.length, channels };
  }

  /** This instance (live) and every other seen within three periods, this one first. */
  instances(): (InstanceReport & { self: boolean })[] {
    const now = Date.now();
    const others: (InstanceReport & { self: boolean })[] = [];
    for (const [id, { at, report }] of this.seen) {
      if (now - at > 3 * PRESENCE_MS) this.seen.delete(id);
      else others.push({ ...report, self: false });
    }
    return [{ ...this.local(), self: true }, ...others.sort((a, b) => a.instance.localeCompare(b.instance))];
  }
}

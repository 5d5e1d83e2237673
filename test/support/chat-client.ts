/**
 * A chat client of the embedded agent for e2e tests (SPEC §4.12, §6.3): a real
 * `@azure/web-pubsub-client` that follows the flow (`_me`, `_rt/ws`, connected, the app's
 * `agentConnect` function, the channel) and collects the agent's frames.
 */
import { expect } from 'vitest';
import { WebPubSubClient, WebPubSubJsonProtocol } from '@azure/web-pubsub-client';
import type { Identity } from './auth.js';
import { waitFor } from './wait.js';

/** POSTs JSON to `<base>/<path>` as `who`; the status and the parsed body. */
export async function postJson(base: string, who: Identity, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${base}/${path}`, { method: 'POST', headers: { ...who.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

/** A client following SPEC §4.12, collecting the agent's frames (parsed from their JSON strings). */
export class ChatClient {
  readonly events: any[] = [];
  /** Other group messages (change notifications carry objects). */
  readonly others: { group: string; data: any }[] = [];
  connectionId = '';
  channel = '';
  private readonly client: WebPubSubClient;

  constructor(
    private readonly base: string,
    private readonly who: Identity,
  ) {
    this.client = new WebPubSubClient(
      { getClientAccessUrl: async () => (await (await fetch(`${base}/_rt/ws`, { headers: who.headers })).json()).url },
      { protocol: WebPubSubJsonProtocol(), messageRetryOptions: { maxRetries: 0 } },
    );
    this.client.on('connected', (e) => (this.connectionId = e.connectionId));
    this.client.on('group-message', (e) => {
      const data = e.message.data;
      // Server frames carry data as a JSON string (SPEC §6.3 rule 1); our own echoes are objects.
      if (typeof data === 'string') this.events.push(JSON.parse(data));
      else this.others.push({ group: e.message.group!, data });
    });
  }

  async connect(body: Record<string, unknown> = {}): Promise<any> {
    const me = await (await fetch(`${this.base}/_me`, { headers: this.who.headers })).json();
    expect(me.id).toBe(this.who.id);
    await this.client.start();
    await waitFor(() => this.connectionId);
    const r = await postJson(this.base, this.who, 'agentConnect', { connectionId: this.connectionId, ...body });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    this.channel = r.json.channel;
    return r.json;
  }

  send(payload: Record<string, unknown>): Promise<unknown> {
    return this.client.sendToGroup(this.channel, payload, 'json', { noEcho: true });
  }

  /** Waits for an event of `type` after index `from` (default: any). */
  async next(type: string, from = 0, timeoutMs = 10_000): Promise<any> {
    return waitFor(() => this.events.slice(from).find((e) => e.type === type), timeoutMs);
  }

  /** Sends a message and waits for its `turn-completed`; returns the turn's events. */
  async turn(text: string, id?: string): Promise<any[]> {
    const from = this.events.length;
    await this.send({ type: 'message', text, ...(id && { id }) });
    await this.next('turn-completed', from, 20_000);
    return this.events.slice(from);
  }

  stop(): void {
    this.client.stop();
  }
}

/** The text of a turn's `text` deltas. */
export const textOf = (events: any[]) =>
  events
    .filter((e) => e.type === 'text')
    .map((e) => e.delta)
    .join('');

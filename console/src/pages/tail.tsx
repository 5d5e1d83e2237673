/**
 * The real-time live tail: the console's own WebSocket connection (SPEC §4.7, the
 * `json.webpubsub.azure.v1` subprotocol, as docs/realtime.md describes) subscribed to one
 * collection's change notifications (`POST /api/<collection>/_listen`) or joined to one channel
 * (`POST /api/_rt/join`); the newest 200 messages are shown, as text.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf } from '../api';
import type { Model } from '../model';

interface Line {
  at: string;
  group: string;
  data: string;
}

export function LiveTail({ model }: { model: Model }) {
  const collections = model.resources.filter((r) => r.kind === 'collection').map((r) => r.name);
  const [target, setTarget] = useState(`collection:${collections[0] ?? ''}`);
  const [channel, setChannel] = useState('');
  const [state, setState] = useState('stopped');
  const [lines, setLines] = useState<Line[]>([]);
  const socket = useRef<WebSocket | undefined>(undefined);
  useEffect(() => () => socket.current?.close(), []);
  const stop = () => {
    socket.current?.close();
    socket.current = undefined;
    setState('stopped');
  };
  const start = async () => {
    stop();
    setLines([]);
    setState('connecting');
    try {
      const { url } = await api<{ url: string }>('GET', '/_rt/ws');
      const ws = new WebSocket(url, 'json.webpubsub.azure.v1');
      socket.current = ws;
      ws.onmessage = async (e) => {
        const frame = JSON.parse(String(e.data)) as { type?: string; event?: string; connectionId?: string; group?: string; data?: unknown };
        if (frame.type === 'system' && frame.event === 'connected') {
          try {
            const [kind, name] = target.split(':');
            if (kind === 'collection') await api('POST', `/${encodeURIComponent(name)}/_listen`, { connectionId: frame.connectionId, type: 'ws' });
            else await api('POST', '/_rt/join', { connectionId: frame.connectionId, channel, readOnly: true });
            setState('listening');
          } catch (err) {
            setState(`refused: ${messageOf(err)}`);
            ws.close();
          }
        } else if (frame.type === 'message') {
          const data = typeof frame.data === 'string' ? frame.data : JSON.stringify(frame.data);
          setLines((old) => [{ at: new Date().toISOString(), group: String(frame.group ?? ''), data }, ...old].slice(0, 200));
        }
      };
      ws.onclose = () => setState((s) => (s === 'listening' || s === 'connecting' ? 'closed' : s));
    } catch (err) {
      setState(`failed: ${messageOf(err)}`);
    }
  };
  return (
    <section id="live-tail">
      <h3>Live tail</h3>
      <div class="toolbar">
        <select id="tail-target" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
          {collections.map((c) => (
            <option value={`collection:${c}`}>changes of {c}</option>
          ))}
          <option value="channel:">a channel…</option>
        </select>
        {target === 'channel:' && <input id="tail-channel" placeholder="channel name" value={channel} onInput={(e) => setChannel(e.currentTarget.value)} />}
        <button type="button" id="tail-start" onClick={start}>
          Start
        </button>
        <button type="button" onClick={stop}>
          Stop
        </button>
        <span id="tail-state" class="muted">
          {state}
        </span>
      </div>
      <table class="table" id="tail-lines">
        <tbody>
          {lines.map((l) => (
            <tr>
              <td>{l.at}</td>
              <td>{l.group}</td>
              <td>
                <code>{l.data}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

#!/usr/bin/env node
/**
 * The baseline of the real-time bench (bench/realtime.mjs): a plain `ws` server that speaks just enough
 * of the Web PubSub JSON subprotocol for the same client harness — `connected` on open, `joinGroup`
 * (ack), `sendToGroup` (ack, then one frame built once and written to every member) — with no auth,
 * no channel rules, no bounds and no bus. What a hand-written broadcast server costs.
 * Env: PORT (0 = any). Prints `listening at ws://127.0.0.1:<port>`.
 */
import { WebSocketServer } from 'ws';

const groups = new Map();
let next = 0;
const wss = new WebSocketServer({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0), handleProtocols: (offered) => [...offered][0] ?? false });
wss.on('connection', (ws) => {
  const id = `c${++next}`;
  ws.send(JSON.stringify({ type: 'system', event: 'connected', connectionId: id, userId: null }));
  ws.on('message', (raw) => {
    const m = JSON.parse(String(raw));
    if (m.type === 'joinGroup') {
      let members = groups.get(m.group);
      if (!members) groups.set(m.group, (members = new Set()));
      members.add(ws);
    } else if (m.type === 'sendToGroup') {
      const frame = JSON.stringify({ type: 'message', from: 'group', group: m.group, dataType: m.dataType, data: m.data, fromUserId: null });
      for (const member of groups.get(m.group) ?? []) if (!(m.noEcho && member === ws)) member.send(frame);
    }
    if (m.ackId !== undefined) ws.send(JSON.stringify({ type: 'ack', ackId: m.ackId, success: true }));
  });
  ws.on('close', () => {
    for (const members of groups.values()) members.delete(ws);
  });
});
wss.on('listening', () => process.stdout.write(`listening at ws://127.0.0.1:${wss.address().port}\n`));

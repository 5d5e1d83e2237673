#!/usr/bin/env node
/**
 * The client side of the real-time bench, in its own process (forked by bench/realtime.mjs, driven
 * over IPC) so that the subscribers never share a CPU queue with the server under test. It opens raw
 * `ws` sockets speaking the Web PubSub JSON subprotocol (`json.webpubsub.azure.v1`, as the official
 * client does with `WebPubSubJsonProtocol()`), waits for `connected`, joins a group with an ack, and
 * records each message's latency from the send time it carries (`"t":<ms since the epoch, fractional>`,
 * read without parsing the whole frame; clocks are `performance.timeOrigin + performance.now()`).
 *
 * Commands (process.send): { cmd: 'open', urls: string[], group?: string } → { ok, connectionIds };
 * { cmd: 'reset' } → { ok }; { cmd: 'stats' } → { ok, received, latencies: {p50, p99, max}, count, histogram }
 * (`histogram`: latency in 0.1 ms buckets → count, so that several client processes can be merged);
 * { cmd: 'arrivals' } → { ok, arrivals } (times of messages without `"t"`); { cmd: 'close' } → { ok }.
 */
import WebSocket from 'ws';

const now = () => performance.timeOrigin + performance.now();
const sockets = [];
let received = 0;
let latencies = [];
/** Arrival times of messages without a send time (change notifications). */
let arrivals = [];

function open(url, group) {
  return new Promise((ok, fail) => {
    const ws = new WebSocket(url, 'json.webpubsub.azure.v1', { perMessageDeflate: false });
    let connectionId;
    ws.on('error', fail);
    ws.on('message', (raw) => {
      const text = raw.toString();
      if (connectionId === undefined) {
        connectionId = JSON.parse(text).connectionId;
        if (!group) return ok({ ws, connectionId });
        ws.send(JSON.stringify({ type: 'joinGroup', group, ackId: 1 }));
        return;
      }
      if (text.startsWith('{"type":"ack"')) return ok({ ws, connectionId });
      const at = text.indexOf('"t":');
      if (at < 0) {
        arrivals.push(now());
        return;
      }
      received += 1;
      latencies.push(now() - Number.parseFloat(text.slice(at + 4, at + 30)));
    });
  });
}

function percentile(sorted, p) {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** Sorted latencies (ms) as 0.1 ms buckets → count. */
function histogramOf(sorted) {
  const buckets = {};
  for (const v of sorted) {
    const b = Math.max(0, Math.round(v * 10));
    buckets[b] = (buckets[b] ?? 0) + 1;
  }
  return buckets;
}

process.on('message', async (m) => {
  try {
    if (m.cmd === 'open') {
      const opened = [];
      // In batches: 10,000 handshakes at once would only measure the accept queue.
      for (let i = 0; i < m.urls.length; i += 200) opened.push(...(await Promise.all(m.urls.slice(i, i + 200).map((u) => open(u, m.group)))));
      sockets.push(...opened.map((o) => o.ws));
      process.send({ ok: true, connectionIds: opened.map((o) => o.connectionId) });
    } else if (m.cmd === 'reset') {
      received = 0;
      latencies = [];
      arrivals = [];
      process.send({ ok: true });
    } else if (m.cmd === 'stats') {
      const sorted = Float64Array.from(latencies).sort();
      process.send({
        ok: true,
        received,
        count: sorted.length,
        latencies: { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: percentile(sorted, 1) },
        histogram: histogramOf(sorted),
      });
    } else if (m.cmd === 'arrivals') {
      process.send({ ok: true, arrivals });
    } else if (m.cmd === 'close') {
      for (const ws of sockets.splice(0)) ws.terminate();
      process.send({ ok: true });
    }
  } catch (err) {
    process.send({ ok: false, error: String(err?.stack ?? err) });
  }
});

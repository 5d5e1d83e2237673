/**
 * The broker of one instance (runtime/realtime/broker.ts): group delivery with `noEcho`, change feeds
 * filtered by `id` and `lookupIds` and delivered once per connection however many `_listen` calls it
 * made, the transport told when a subscription widens or ends, the caps on channels and on listened ids
 * per connection, and the drop of a connection whose send buffer is over its
 * bound. Transports are recording objects: the wire formats are proven by the e2e suites.
 */
import { describe, expect, it } from 'vitest';
import { ANONYMOUS } from '../../../dist/runtime/auth/caller.js';
import { HttpError } from '../../../dist/runtime/errors.js';
import { Broker, Connection, MAX_GROUPS_PER_CONNECTION, type ConnectionTransport, type GroupMessage } from '../../../dist/runtime/realtime/broker.js';
import { MAX_LISTEN_IDS } from '../../../dist/runtime/realtime/listen-filter.js';

function recording(buffered = 0) {
  const got: unknown[] = [];
  const closed: number[] = [];
  const transport: ConnectionTransport & { buffered: number } = {
    buffered,
    sendGroupMessage: (m) => got.push(m.data),
    sendChange: (group, n) => got.push({ group, ...n }),
    bufferedBytes: () => transport.buffered,
    close: (code) => closed.push(code),
  };
  return { transport, got, closed };
}

const message = (data: unknown, from: string | null = null, noEcho = false): GroupMessage => ({
  group: 'app:chat',
  dataType: 'json',
  data,
  fromConnectionId: from,
  fromUserId: null,
  noEcho,
});

describe('Broker', () => {
  it('delivers to members, skips the sender under noEcho, and stops after leave', () => {
    const broker = new Broker('app', 1024);
    const a = recording();
    const b = recording();
    const ca = new Connection('i.a', 'ws', ANONYMOUS, a.transport);
    const cb = new Connection('i.b', 'ws', ANONYMOUS, b.transport);
    broker.add(ca);
    broker.add(cb);
    broker.join(ca, 'app:chat', false);
    broker.join(cb, 'app:chat', false);
    broker.deliverGroup(message(1, 'i.a', true));
    expect(a.got).toEqual([]);
    expect(b.got).toEqual([1]);
    broker.leave(cb, 'app:chat');
    broker.deliverGroup(message(2));
    expect(a.got).toEqual([2]);
    expect(b.got).toEqual([1]);
  });

  it('filters change feeds by id and lookupIds and delivers each change once per connection', () => {
    const broker = new Broker('app', 1024);
    const t = recording();
    const c = new Connection('i.c', 'ws', ANONYMOUS, t.transport);
    broker.add(c);
    broker.listen(c, 'Order', { id: 'x' });
    broker.listen(c, 'Order', { lookupIds: ['p'] });
    broker.deliverChange({ collection: 'Order', action: 'PATCH', ids: ['y'], lookupIds: ['q'] });
    expect(t.got).toEqual([]);
    broker.deliverChange({ collection: 'Order', action: 'PATCH', ids: ['x'], lookupIds: ['p'] });
    broker.deliverChange({ collection: 'Order', action: 'POST', ids: ['z'], lookupIds: ['p'] });
    expect(t.got).toEqual([
      { group: 'app:Order', action: 'PATCH', path: 'app/Order', ids: ['x'] },
      { group: 'app:Order', action: 'POST', path: 'app/Order', ids: ['z'] },
    ]);
    broker.remove(c);
    broker.deliverChange({ collection: 'Order', action: 'DELETE', ids: ['x'], lookupIds: [] });
    expect(t.got).toHaveLength(2);
  });

  it('tells the transport when a _listen widens a subscription or it ends, not when a _listen repeats; a restored one is merged untold', () => {
    const broker = new Broker('app', 1024);
    const t = recording();
    const told: string[] = [];
    t.transport.listened = (collection, f) => told.push(`${collection} all=${f.all} ids=${[...f.ids]} lookupIds=${[...f.lookupIds]}`);
    t.transport.unlistened = (collection) => told.push(`${collection} ended`);
    const c = new Connection('i.c', 'ws', ANONYMOUS, t.transport);
    broker.add(c);
    broker.listen(c, 'Order', { id: 'x' });
    broker.listen(c, 'Order', { id: 'x' });
    broker.listen(c, 'Order', { lookupIds: ['p', 'q'] });
    broker.listen(c, 'Order', { lookupIds: ['q'] });
    broker.listen(c, 'Line', {});
    broker.listen(c, 'Line', { id: 'y' });
    broker.unlisten(c, 'Line');
    broker.unlisten(c, 'Line');
    expect(told).toEqual(['Order all=false ids=x lookupIds=', 'Order all=false ids=x lookupIds=p,q', 'Line all=true ids= lookupIds=', 'Line ended']);
    broker.restoreListen(c, 'Order', { all: false, ids: new Set(['z']), lookupIds: new Set() });
    expect(told).toHaveLength(4);
    broker.deliverChange({ collection: 'Order', action: 'PATCH', ids: ['z'], lookupIds: [] });
    broker.deliverChange({ collection: 'Order', action: 'PATCH', ids: ['x'], lookupIds: [] });
    broker.deliverChange({ collection: 'Order', action: 'PATCH', ids: ['w'], lookupIds: [] });
    expect(t.got.map((n) => (n as { ids: string[] }).ids[0])).toEqual(['z', 'x']);
  });

  it(`refuses a subscription past ${MAX_LISTEN_IDS} ids and lookupIds of one collection; the whole collection is always allowed`, () => {
    const broker = new Broker('app', 1024);
    const c = new Connection('i.c', 'ws', ANONYMOUS, recording().transport);
    broker.add(c);
    const ids = Array.from({ length: MAX_LISTEN_IDS - 1 }, (_, i) => `k${i}`);
    broker.listen(c, 'Order', { lookupIds: ids });
    broker.listen(c, 'Order', { id: 'one', lookupIds: ids.slice(0, 10) });
    expect(() => broker.listen(c, 'Order', { id: 'two' })).toThrow(HttpError);
    expect(() => broker.listen(c, 'Line', { lookupIds: [...ids, 'a', 'b'] })).toThrow(HttpError);
    expect(c.listening.has('Line')).toBe(false);
    broker.listen(c, 'Order', {});
    expect(() => broker.listen(c, 'Order', { id: 'two' })).not.toThrow();
  });

  it(`refuses a connection's channel number ${MAX_GROUPS_PER_CONNECTION + 1} and accepts a rejoin`, () => {
    const broker = new Broker('app', 1024);
    const c = new Connection('i.c', 'ws', ANONYMOUS, recording().transport);
    broker.add(c);
    for (let i = 0; i < MAX_GROUPS_PER_CONNECTION; i++) broker.join(c, `app:g${i}`, false);
    expect(() => broker.join(c, 'app:one-more', false)).toThrow(HttpError);
    expect(() => broker.join(c, 'app:g0', true)).not.toThrow();
    expect(c.groups.get('app:g0')).toEqual({ readOnly: true });
  });

  it('drops and counts a connection whose send buffer is over the bound, and keeps delivering to the others', () => {
    const broker = new Broker('app', 1024);
    const slow = recording(4096);
    const fast = recording();
    const cs = new Connection('i.s', 'ws', ANONYMOUS, slow.transport);
    const cf = new Connection('i.f', 'ws', ANONYMOUS, fast.transport);
    for (const c of [cs, cf]) {
      broker.add(c);
      broker.join(c, 'app:chat', false);
    }
    broker.deliverGroup(message('m'));
    expect(slow.got).toEqual([]);
    expect(slow.closed).toEqual([1008]);
    expect(fast.got).toEqual(['m']);
    expect(broker.stats()).toMatchObject({ connections: 1, slowDropped: 1 });
    expect(broker.get('i.s')).toBeUndefined();
  });

  it('a write that throws drops that connection with 1011 and tells; the other members still receive', () => {
    const failures: string[] = [];
    const broker = new Broker('app', 1024, undefined, (c) => failures.push(c.id));
    const broken = recording();
    broken.transport.sendGroupMessage = () => {
      throw new TypeError('broken transport');
    };
    const fine = recording();
    const cx = new Connection('i.x', 'ws', ANONYMOUS, broken.transport);
    const cf = new Connection('i.f', 'ws', ANONYMOUS, fine.transport);
    for (const c of [cx, cf]) {
      broker.add(c);
      broker.join(c, 'app:chat', false);
    }
    expect(() => broker.deliverGroup(message('m'))).not.toThrow();
    expect(broken.closed).toEqual([1011]);
    expect(failures).toEqual(['i.x']);
    expect(fine.got).toEqual(['m']);
    expect(broker.get('i.x')).toBeUndefined();
  });

  it('a reader whose buffer a burst filled keeps its connection while it drains; one that stays over the bound past the grace, or past the burst room, is dropped', () => {
    let now = 0;
    const broker = new Broker('app', { sendBufferBytes: 1000, burstBytes: 4000, graceMs: 2000, now: () => now });
    const reading = recording();
    const stuck = recording();
    const flooded = recording();
    const [cr, cs, cf] = [reading, stuck, flooded].map((t, i) => new Connection(`i.${i}`, 'ws', ANONYMOUS, t.transport));
    for (const c of [cr, cs, cf]) {
      broker.add(c);
      broker.join(c, 'app:chat', false);
    }
    // Another sender's burst: every buffer is over the bound, under the burst room.
    for (const t of [reading, stuck, flooded]) t.transport.buffered = 3000;
    broker.deliverGroup(message(1));
    now = 1500;
    broker.deliverGroup(message(2));
    expect([reading.got, stuck.got, flooded.got]).toEqual([
      [1, 2],
      [1, 2],
      [1, 2],
    ]);
    // The reader drains; the stuck one does not; the flooded one grows past the bound plus the burst room.
    reading.transport.buffered = 0;
    flooded.transport.buffered = 5001;
    broker.deliverGroup(message(3));
    expect(flooded.closed).toEqual([1008]);
    reading.transport.buffered = 3000;
    now = 2500;
    broker.deliverGroup(message(4));
    expect(stuck.closed).toEqual([1008]);
    expect(reading.closed).toEqual([]);
    expect(reading.got).toEqual([1, 2, 3, 4]);
    expect(broker.stats()).toMatchObject({ connections: 1, slowDropped: 2 });
  });
});

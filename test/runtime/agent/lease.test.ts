/**
 * The `mcp` column of an agent session's lease row (agent/lease.ts; issue 23 item 7), on a real
 * SQLite file and a real PostgreSQL database holding `_svc_agent_sessions` with the columns the
 * system model emits: `acquire` records the session's servers, `recordMcp` writes one change at a
 * time and coalesces a burst into one more write of the latest list, only the lease holder writes,
 * a renewal writes the list current when its row is written, and `release` clears it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { backends, createPgDatabase, type Backend } from '../../support/backends.js';
import { waitFor } from '../../support/wait.js';
import { openDatabase, type Database } from '../../../dist/runtime/data/database.js';
import { raw, renderSql, sql } from '../../../dist/runtime/query/sql.js';
import { Leases } from '../../../dist/runtime/agent/lease.js';
import { ThreadStore } from '../../../dist/runtime/agent/threads.js';

type Status = { name: string; status: 'connecting' | 'connected' | 'reconnecting' | 'failed' };

/** `_svc_agent_sessions` as the system model (generator/emit/system-models.ts) makes it. */
function createTable(backend: Backend): string {
  const time = backend === 'sqlite' ? 'DATETIME' : 'TIMESTAMPTZ(3)';
  return `CREATE TABLE "_svc_agent_sessions" ("identityId" TEXT PRIMARY KEY, "threadId" TEXT, "sessionCredits" INTEGER NOT NULL DEFAULT 0,
    "sessionCreditsUsed" INTEGER NOT NULL DEFAULT 0, "instanceId" TEXT, "leaseUntil" ${time}, "channel" TEXT, "options" TEXT, "state" TEXT,
    "startedAt" ${time}, "mcp" TEXT, "createdAt" ${time} NOT NULL DEFAULT CURRENT_TIMESTAMP, "updatedAt" ${time} NOT NULL)`;
}

describe.each(backends())('the mcp column of agent leases on %s', (backend) => {
  let db: Database;
  let cleanup: () => Promise<void>;
  /** UPDATE statements that set `mcp` alone (the writes of `recordMcp`). */
  let mcpWrites = 0;
  /** `recordMcp`'s writes wait for this before they reach the database. */
  let gate: Promise<void> = Promise.resolve();
  let a: Leases;
  let b: Leases;
  const failures: unknown[] = [];
  const onError = (err: unknown) => failures.push(err);

  const mcpOf = async (identityId: string): Promise<unknown> => {
    const [row] = await db.query<{ mcp: unknown }>(sql`SELECT "mcp" FROM "_svc_agent_sessions" WHERE "identityId" = ${identityId}`);
    return row.mcp === null ? null : JSON.parse(String(row.mcp));
  };

  beforeAll(async () => {
    if (backend === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'svc-lease-'));
      db = await openDatabase('sqlite', `file:${join(dir, 'lease.db')}`);
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    } else {
      const pg = await createPgDatabase('svc_lease');
      db = await openDatabase('postgresql', pg.url);
      cleanup = pg.drop;
    }
    await db.query(sql`${raw(createTable(backend))}`);
    const counted: Database = {
      ...db,
      query: async (statement, tx, options) => {
        if (/^UPDATE \S+ SET "mcp" = /.test(renderSql(statement, backend).text.trim())) {
          mcpWrites++;
          await gate;
        }
        return db.query(statement, tx, options);
      },
    };
    a = new Leases(counted, new ThreadStore(db), 'instance-a');
    b = new Leases(db, new ThreadStore(db), 'instance-b');
  });
  afterAll(async () => {
    await db?.close();
    await cleanup?.();
  });

  it('records the servers at acquire, and a burst of changes as one write after the running one, ending on the latest list', async () => {
    const id = randomUUID();
    let current: Status[] = [
      { name: 'docs', status: 'connecting' },
      { name: 'files', status: 'connecting' },
    ];
    expect(await a.acquire(id, { channel: 'app:agent:x', options: {}, mcp: current })).toBe(true);
    expect(await mcpOf(id)).toEqual(current);

    mcpWrites = 0;
    let open = () => {};
    gate = new Promise<void>((resolve) => (open = resolve));
    current = [current[0], { name: 'files', status: 'failed' }];
    const first = a.recordMcp(id, () => current, onError);
    await waitFor(() => mcpWrites === 1);
    // While the first write runs, three more changes: one write follows, reading the list as it is then.
    current = [{ name: 'docs', status: 'connected' }, current[1]];
    const second = a.recordMcp(id, () => current, onError);
    current = [current[0], { name: 'files', status: 'reconnecting' }];
    const third = a.recordMcp(id, () => current, onError);
    current = [current[0], { name: 'files', status: 'connected' }];
    expect(third).toBe(second);
    open();
    await Promise.all([first, second, third]);
    expect(mcpWrites).toBe(2);
    expect(await mcpOf(id)).toEqual([
      { name: 'docs', status: 'connected' },
      { name: 'files', status: 'connected' },
    ]);
    expect(failures).toEqual([]);
  });

  it('writes only while this instance holds the lease; a renewal writes the current list; release clears it', async () => {
    const id = randomUUID();
    const held: Status[] = [{ name: 'docs', status: 'connected' }];
    expect(await a.acquire(id, { channel: 'app:agent:y', options: {}, mcp: held })).toBe(true);
    await b.recordMcp(id, () => [{ name: 'docs', status: 'failed' }], onError);
    expect(await mcpOf(id)).toEqual(held);

    let now: Status[] = [{ name: 'docs', status: 'reconnecting' }];
    const session = { identityId: id, state: 'busy', mcpList: () => now };
    expect(await a.renew([session])).toEqual([]);
    expect(await mcpOf(id)).toEqual(now);
    // Another instance's renewal of a session it does not hold writes nothing and reports it lost.
    now = [{ name: 'docs', status: 'failed' }];
    expect(await b.renew([session])).toEqual([id]);
    expect(await mcpOf(id)).toEqual([{ name: 'docs', status: 'reconnecting' }]);

    await a.release(id);
    expect(await mcpOf(id)).toBeNull();
    await a.recordMcp(id, () => [{ name: 'docs', status: 'connected' }], onError);
    expect(await mcpOf(id)).toBeNull();
    expect(failures).toEqual([]);
  });

  it('passes a failed write to onError and never rejects', async () => {
    const broken = new Leases(
      {
        ...db,
        query: () => Promise.reject(new Error('the database is down')),
      },
      new ThreadStore(db),
      'instance-a',
    );
    const seen: unknown[] = [];
    await expect(
      broken.recordMcp(
        randomUUID(),
        () => [],
        (err) => seen.push(err),
      ),
    ).resolves.toBeUndefined();
    expect(seen).toEqual([expect.objectContaining({ message: 'the database is down' })]);
  });
});

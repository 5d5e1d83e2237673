/**
 * @module Agent threads in the database (SPEC §2 "Agent session data", §6.3 `thread-list`,
 * `thread-resume`, `rollback`, `compact`; DESIGN §7 "Threads"): the system tables `_svc_agent_threads`
 * (one row per conversation of an identity), `_svc_agent_turns` (one row per turn: the user's text
 * and the ids of its attachments, the model messages the turn added, and its `history` items) and `_svc_agent_sessions` (one row per
 * identity: its current thread and its session credit counters). Threads survive a restart.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../data/database.js';
import { ident, sql } from '../query/sql.js';
import { toDate } from '../auth/store.js';

const THREADS = ident('_svc_agent_threads');
const TURNS = ident('_svc_agent_turns');
const SESSIONS = ident('_svc_agent_sessions');
const APP = ident('_svc_app');

/** Most threads `thread-list` answers (SPEC §8). */
export const THREAD_LIST_LIMIT = 50;
/** Characters of a thread's preview (SPEC §8). */
export const PREVIEW_CHARS = 200;

/** A thread as `thread-list` shows it: `createdAt` in unix seconds (UTC). */
export interface ThreadSummary {
  id: string;
  preview: string;
  createdAt: number;
}

/** One stored turn. `messages` are AI SDK model messages (assistant and tool); `items` the `history` events. */
export interface StoredTurn {
  id: string;
  seq: number;
  userText: string;
  /** The ids of the uploads the user message carried (uploads.ts), in order; empty for none. */
  attachments: string[];
  messages: unknown[];
  items: Record<string, unknown>[];
  status: 'completed' | 'failed';
  error: string | null;
}

/** A thread with what its model requests need: the summary of compacted turns and the turns after it. */
export interface ThreadState {
  id: string;
  identityId: string;
  summary: string | null;
  /** How many of the oldest turns the summary replaces. */
  summaryTurns: number;
  turns: StoredTurn[];
}

/** The per-identity row: current thread and session credit counters (issue "credits" fills the counters). */
export interface SessionRow {
  identityId: string;
  threadId: string | null;
  sessionCredits: number;
  sessionCreditsUsed: number;
}

type Raw = Record<string, unknown>;

function parseJson<T>(text: unknown, fallback: T): T {
  try {
    return JSON.parse(String(text)) as T;
  } catch {
    return fallback;
  }
}

/** Reads and writes agent threads; every method is one statement or one transaction. */
export class ThreadStore {
  constructor(private readonly db: Database) {}

  /** The app's id (`apiId` of the stats callback): made once, then read back on every start. */
  async appId(): Promise<string> {
    const rows = await this.db.query<Raw>(sql`SELECT ${ident('id')} FROM ${APP} ORDER BY ${ident('createdAt')} LIMIT 1`);
    if (rows.length > 0) return String(rows[0].id);
    const id = randomUUID();
    await this.db.query(sql`INSERT INTO ${APP} (${ident('id')}, ${ident('createdAt')}) VALUES (${id}, ${new Date()})`);
    const again = await this.db.query<Raw>(sql`SELECT ${ident('id')} FROM ${APP} ORDER BY ${ident('createdAt')}, ${ident('id')} LIMIT 1`);
    return String(again[0].id);
  }

  /** The identity's session row, made (no thread, no limit) when it has none. */
  async session(identityId: string): Promise<SessionRow> {
    const read = async () =>
      (await this.db.query<Raw>(sql`SELECT * FROM ${SESSIONS} WHERE ${ident('identityId')} = ${identityId}`, undefined, { point: true }))[0];
    let row = await read();
    if (!row) {
      const now = new Date();
      await this.db.query(
        sql`INSERT INTO ${SESSIONS} (${ident('identityId')}, ${ident('sessionCredits')}, ${ident('sessionCreditsUsed')}, ${ident('createdAt')}, ${ident('updatedAt')})
            VALUES (${identityId}, ${0}, ${0}, ${now}, ${now}) ON CONFLICT (${ident('identityId')}) DO NOTHING`,
      );
      row = await read();
    }
    return {
      identityId,
      threadId: row.threadId === null || row.threadId === undefined ? null : String(row.threadId),
      sessionCredits: Number(row.sessionCredits),
      sessionCreditsUsed: Number(row.sessionCreditsUsed),
    };
  }

  /** Sets the identity's current thread (null: the next message starts a new one). */
  async setCurrentThread(identityId: string, threadId: string | null): Promise<void> {
    await this.session(identityId);
    await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('threadId')} = ${threadId}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('identityId')} = ${identityId}`,
    );
  }

  /** Seeds the session credit limit (`connect`'s `sessionCredits`, only when it has none) or resets it (`setCredits`). */
  async setSessionCredits(identityId: string, limit: number, mode: 'seed' | 'reset'): Promise<SessionRow> {
    const row = await this.session(identityId);
    if (mode === 'seed' && row.sessionCredits !== 0) return row;
    await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('sessionCredits')} = ${limit}, ${ident('sessionCreditsUsed')} = ${0}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('identityId')} = ${identityId}`,
    );
    return { ...row, sessionCredits: limit, sessionCreditsUsed: 0 };
  }

  /** Adds a turn's credits to the identity's used counter (one statement: no lost update under concurrency). */
  async addSessionCreditsUsed(identityId: string, credits: number): Promise<void> {
    await this.db.query(
      sql`UPDATE ${SESSIONS} SET ${ident('sessionCreditsUsed')} = ${ident('sessionCreditsUsed')} + ${credits}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('identityId')} = ${identityId}`,
    );
  }

  /** Starts a thread whose preview is the first user message (trimmed to 200 characters) and makes it current. */
  async createThread(identityId: string, firstMessage: string): Promise<string> {
    const id = randomUUID();
    const now = new Date();
    await this.db.query(
      sql`INSERT INTO ${THREADS} (${ident('id')}, ${ident('identityId')}, ${ident('preview')}, ${ident('summaryTurns')}, ${ident('createdAt')}, ${ident('updatedAt')})
          VALUES (${id}, ${identityId}, ${firstMessage.trim().slice(0, PREVIEW_CHARS)}, ${0}, ${now}, ${now})`,
    );
    await this.setCurrentThread(identityId, id);
    return id;
  }

  /** The identity's threads, newest first, at most 50. */
  async list(identityId: string): Promise<ThreadSummary[]> {
    const rows = await this.db.query<Raw>(
      sql`SELECT ${ident('id')}, ${ident('preview')}, ${ident('createdAt')} FROM ${THREADS} WHERE ${ident('identityId')} = ${identityId}
          ORDER BY ${ident('createdAt')} DESC, ${ident('id')} DESC LIMIT ${THREAD_LIST_LIMIT}`,
    );
    return rows.map((r) => ({ id: String(r.id), preview: String(r.preview), createdAt: Math.floor(toDate(r.createdAt).getTime() / 1000) }));
  }

  /** A thread of `identityId` with its turns in order, or null when it is not that identity's. */
  async load(identityId: string, threadId: string): Promise<ThreadState | null> {
    const [thread] = await this.db.query<Raw>(sql`SELECT * FROM ${THREADS} WHERE ${ident('id')} = ${threadId}`, undefined, { point: true });
    if (!thread || String(thread.identityId) !== identityId) return null;
    const turns = await this.db.query<Raw>(sql`SELECT * FROM ${TURNS} WHERE ${ident('threadId')} = ${threadId} ORDER BY ${ident('seq')}`);
    return {
      id: threadId,
      identityId,
      summary: thread.summary === null || thread.summary === undefined ? null : String(thread.summary),
      summaryTurns: Number(thread.summaryTurns),
      turns: turns.map((t) => ({
        id: String(t.id),
        seq: Number(t.seq),
        userText: String(t.userText),
        attachments: parseJson<string[]>(t.attachments ?? '[]', []),
        messages: parseJson<unknown[]>(t.messages, []),
        items: parseJson<Record<string, unknown>[]>(t.items, []),
        status: String(t.status) === 'completed' ? 'completed' : 'failed',
        error: t.error === null || t.error === undefined ? null : String(t.error),
      })),
    };
  }

  /** Appends a finished turn (its number is one past the thread's last), with the credits it was charged (the console shows them). */
  async appendTurn(threadId: string, turn: Omit<StoredTurn, 'id' | 'seq' | 'attachments'> & { attachments?: string[] }, credits = 0): Promise<void> {
    const attachments = turn.attachments?.length ? JSON.stringify(turn.attachments) : null;
    await this.db.transaction(async (tx) => {
      const [last] = await this.db.query<Raw>(sql`SELECT MAX(${ident('seq')}) AS ${ident('n')} FROM ${TURNS} WHERE ${ident('threadId')} = ${threadId}`, tx);
      const seq = last?.n === null || last?.n === undefined ? 1 : Number(last.n) + 1;
      await this.db.query(
        sql`INSERT INTO ${TURNS} (${ident('id')}, ${ident('threadId')}, ${ident('seq')}, ${ident('userText')}, ${ident('messages')}, ${ident('items')}, ${ident('status')}, ${ident('error')}, ${ident('credits')}, ${ident('attachments')}, ${ident('createdAt')})
            VALUES (${randomUUID()}, ${threadId}, ${seq}, ${turn.userText}, ${JSON.stringify(turn.messages)}, ${JSON.stringify(turn.items)}, ${turn.status}, ${turn.error}, ${Math.round(credits)}, ${attachments}, ${new Date()})`,
        tx,
      );
      await this.db.query(sql`UPDATE ${THREADS} SET ${ident('updatedAt')} = ${new Date()} WHERE ${ident('id')} = ${threadId}`, tx);
    });
  }

  /**
   * Removes the last `turns` turns of a thread (and a summary that covered any of them).
   * @returns how many turns were removed
   */
  async rollback(threadId: string, turns: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await this.db.query<Raw>(
        sql`SELECT ${ident('id')} FROM ${TURNS} WHERE ${ident('threadId')} = ${threadId} ORDER BY ${ident('seq')} DESC LIMIT ${turns}`,
        tx,
      );
      for (const r of rows) await this.db.query(sql`DELETE FROM ${TURNS} WHERE ${ident('id')} = ${String(r.id)}`, tx);
      const [left] = await this.db.query<Raw>(sql`SELECT COUNT(*) AS ${ident('n')} FROM ${TURNS} WHERE ${ident('threadId')} = ${threadId}`, tx);
      const remaining = Number(left?.n ?? 0);
      await this.db.query(
        sql`UPDATE ${THREADS} SET ${ident('summary')} = CASE WHEN ${ident('summaryTurns')} > ${remaining} THEN NULL ELSE ${ident('summary')} END,
            ${ident('summaryTurns')} = CASE WHEN ${ident('summaryTurns')} > ${remaining} THEN 0 ELSE ${ident('summaryTurns')} END,
            ${ident('updatedAt')} = ${new Date()} WHERE ${ident('id')} = ${threadId}`,
        tx,
      );
      return rows.length;
    });
  }

  /**
   * Deletes a thread of `identityId` with its turns (its uploads are the caller's to delete, uploads.ts);
   * the identity's current thread becomes none when it was this one.
   * @returns false when it is not a thread of that identity
   */
  async deleteThread(identityId: string, threadId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [thread] = await this.db.query<Raw>(sql`SELECT ${ident('identityId')} FROM ${THREADS} WHERE ${ident('id')} = ${threadId}`, tx);
      if (!thread || String(thread.identityId) !== identityId) return false;
      await this.db.query(sql`DELETE FROM ${TURNS} WHERE ${ident('threadId')} = ${threadId}`, tx);
      await this.db.query(sql`DELETE FROM ${THREADS} WHERE ${ident('id')} = ${threadId}`, tx);
      await this.db.query(
        sql`UPDATE ${SESSIONS} SET ${ident('threadId')} = ${null}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('identityId')} = ${identityId} AND ${ident('threadId')} = ${threadId}`,
        tx,
      );
      return true;
    });
  }

  /** Records a summary that replaces the oldest `summaryTurns` turns in later model requests. */
  async setSummary(threadId: string, summary: string, summaryTurns: number): Promise<void> {
    await this.db.query(
      sql`UPDATE ${THREADS} SET ${ident('summary')} = ${summary}, ${ident('summaryTurns')} = ${summaryTurns}, ${ident('updatedAt')} = ${new Date()} WHERE ${ident('id')} = ${threadId}`,
    );
  }
}

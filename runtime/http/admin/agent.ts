/**
 * @module `/api/_admin/agent/*` (DESIGN §9): running agent sessions on every instance (the live leases
 * of `_svc_agent_sessions`, agent/lease.ts, with each session's MCP server statuses as its holder
 * recorded them), the MCP servers configured (`agent.mcpServers`: name, transport, time limit, whether
 * its references resolved — never a URL, header, argument or environment value), an identity's threads, one thread's transcript (turns with
 * their `history` items — text, tool calls, MCP calls, errors — and the credits each was charged), and
 * credits per time step: every charge of the ledger (turns, `ask`, `compact`) per source, from
 * `_svc_agent_credit_usage` (agent/credit-usage.ts), so the chart adds up to the ledger's use.
 */
import { Router, type Request, type Response } from 'express';
import type { Database } from '../../data/database.js';
import { HttpError } from '../../errors.js';
import { ident, sql } from '../../query/sql.js';
import { toDate, type Raw } from '../../auth/store.js';
import { invalidParameter } from '../../query/list-params.js';
import { mcpTransport, type McpServerConfig } from '../../agent/mcp.js';
import { CreditUsage } from '../../agent/credit-usage.js';
import { AGENT_USAGE_MINUTE_KEEP_DAYS as MINUTE_KEEP_DAYS } from '../../contract/limits.js';
import { idParam, intParam, isOffset, pageOf, pageParams, requireAdmin, textParam, timeParam } from './params.js';

const THREADS = ident('_svc_agent_threads');
const TURNS = ident('_svc_agent_turns');
const SESSIONS = ident('_svc_agent_sessions');

function parseJson(text: unknown): unknown {
  try {
    return JSON.parse(String(text));
  } catch {
    return null;
  }
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : toDate(v).toISOString());

/** A lease row's `mcp` column as `[{ name, status }]` (empty when unset or not such a list). */
function mcpOf(text: unknown): { name: string; status: string }[] {
  const list = parseJson(text);
  if (!Array.isArray(list)) return [];
  return list
    .filter((e): e is { name: unknown; status: unknown } => typeof e === 'object' && e !== null && 'name' in e && 'status' in e)
    .map((e) => ({ name: String(e.name), status: String(e.status) }));
}

/**
 * The router; mount it under `/api/_admin`. Source: DESIGN §7 (sessions, threads, credits), §9.
 * @param mcpServers - `agent.mcpServers` as the sessions of this instance use them (resolved at start)
 */
export function agentAdminRouter(db: Database, mcpServers: readonly McpServerConfig[] = []): Router {
  const router = Router();

  router.get('/agent/sessions', async (req: Request, res: Response) => {
    requireAdmin(res);
    const page = pageParams(req.query as Record<string, unknown>, isOffset);
    const offset = page.after ?? 0;
    const rows = await db.query<Raw>(
      sql`SELECT * FROM ${SESSIONS} WHERE "instanceId" IS NOT NULL AND "leaseUntil" > ${new Date()} ORDER BY "identityId" LIMIT ${page.pageSize + 1} OFFSET ${offset}`,
    );
    const sessions = rows.map((r) => ({
      identityId: String(r.identityId),
      instance: String(r.instanceId),
      channel: r.channel === null || r.channel === undefined ? null : String(r.channel),
      state: r.state === null || r.state === undefined ? null : String(r.state),
      threadId: r.threadId === null || r.threadId === undefined ? null : String(r.threadId),
      startedAt: iso(r.startedAt),
      sessionCredits: Number(r.sessionCredits ?? 0),
      sessionCreditsUsed: Number(r.sessionCreditsUsed ?? 0),
      mcp: mcpOf(r.mcp),
    }));
    res.json(pageOf(sessions, page.pageSize, () => offset + page.pageSize));
  });

  router.get('/agent/mcp-servers', (_req: Request, res: Response) => {
    requireAdmin(res);
    const data = mcpServers.map((c) => ({ name: c.name, transport: mcpTransport(c), timeoutMs: c.timeoutMs, usable: !('problem' in c) }));
    res.json({ data });
  });

  router.get('/agent/threads', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const page = pageParams(query, isOffset);
    const identity = textParam(query, 'identity', 200);
    if (!identity) throw invalidParameter('identity', 'is required: the id of the user or service account whose threads to list');
    const offset = page.after ?? 0;
    const rows = await db.query<Raw>(
      sql`SELECT t."id", t."preview", t."createdAt", t."updatedAt", (SELECT COUNT(*) FROM ${TURNS} u WHERE u."threadId" = t."id") AS "turns",
          (SELECT COALESCE(SUM(u."credits"), 0) FROM ${TURNS} u WHERE u."threadId" = t."id") AS "credits"
        FROM ${THREADS} t WHERE t."identityId" = ${identity} ORDER BY t."updatedAt" DESC, t."id" LIMIT ${page.pageSize + 1} OFFSET ${offset}`,
    );
    const threads = rows.map((r) => ({
      id: String(r.id),
      identityId: identity,
      preview: String(r.preview),
      createdAt: iso(r.createdAt),
      updatedAt: iso(r.updatedAt),
      turns: Number(r.turns),
      credits: Number(r.credits),
    }));
    res.json(pageOf(threads, page.pageSize, () => offset + page.pageSize));
  });

  router.get('/agent/threads/:id', async (req: Request, res: Response) => {
    requireAdmin(res);
    const id = String(req.params.id);
    const checked = idParam(id);
    const [thread] = checked === null ? [] : await db.query<Raw>(sql`SELECT * FROM ${THREADS} WHERE "id" = ${checked}`);
    if (!thread) throw new HttpError('NOT_FOUND', `no agent thread has the id ${JSON.stringify(id)}`);
    const turns = await db.query<Raw>(sql`SELECT * FROM ${TURNS} WHERE "threadId" = ${id} ORDER BY "seq"`);
    res.json({
      id,
      identityId: String(thread.identityId),
      preview: String(thread.preview),
      summary: thread.summary === null || thread.summary === undefined ? null : String(thread.summary),
      summaryTurns: Number(thread.summaryTurns ?? 0),
      createdAt: iso(thread.createdAt),
      updatedAt: iso(thread.updatedAt),
      credits: turns.reduce((n, t) => n + Number(t.credits ?? 0), 0),
      turns: turns.map((t) => ({
        seq: Number(t.seq),
        userText: String(t.userText),
        // The upload ids of the user message (DESIGN §7a), for the record; the bytes are the user's.
        attachments: parseJson(t.attachments ?? '[]') ?? [],
        status: String(t.status),
        error: t.error === null || t.error === undefined ? null : String(t.error),
        credits: Number(t.credits ?? 0),
        createdAt: iso(t.createdAt),
        items: parseJson(t.items) ?? [],
      })),
    });
  });

  router.get('/agent/usage', async (req: Request, res: Response) => {
    requireAdmin(res);
    const query = req.query as Record<string, unknown>;
    const stepSeconds = intParam(query, 'step', 60, 31 * 86_400) ?? 86_400;
    if (stepSeconds % 60 !== 0) throw invalidParameter('step', 'must be a whole number of minutes (a multiple of 60 seconds)');
    const stepMs = stepSeconds * 1000;
    const to = timeParam(query, 'to') ?? new Date();
    const from = timeParam(query, 'from') ?? new Date(to.getTime() - 30 * 86_400_000);
    if (from > to) throw invalidParameter('from', 'must not be after to');
    if ((to.getTime() - from.getTime()) / stepMs > 2000) throw invalidParameter('step', 'gives more than 2000 steps between from and to: choose a longer step');
    if (stepSeconds % 3600 !== 0 && from.getTime() < Date.now() - MINUTE_KEEP_DAYS * 86_400_000)
      throw invalidParameter(
        'step',
        `must be whole hours (a multiple of 3600) for a from more than ${MINUTE_KEEP_DAYS} days ago: credits per minute are kept ${MINUTE_KEEP_DAYS} days`,
      );
    const data = await new CreditUsage(db).perStep(from, to, stepSeconds);
    res.json({ from: from.toISOString(), to: to.toISOString(), step: stepSeconds, data });
  });

  return router;
}

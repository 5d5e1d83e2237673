/**
 * @module The admin endpoints under `/api/_admin/` (DESIGN §9; shapes in docs/console.md "Admin
 * endpoints"): identities, logs, real-time, agent, jobs, schema and status. Admin users and admin service
 * accounts only (401 anonymous, 403 anyone else), JSON with the DESIGN §4 error body; in
 * `openapi.json` under the tag `admin` with `x-svc-agent: false`, never offered to the agent.
 */
import { Router } from 'express';
import type { Database } from '../../data/database.js';
import type { AuthService } from '../../auth/auth-service.js';
import { HttpError } from '../../errors.js';
import { identitiesRouter } from './identities.js';
import { logsRouter } from './logs.js';
import { agentAdminRouter } from './agent.js';
import { systemRouter, type SystemDeps } from './system.js';
import { requireAdmin } from './params.js';
import type { McpServerConfig } from '../../agent/mcp.js';
import type { AgentUploads } from '../../agent/uploads.js';
import type { JobEngine } from '../../jobs/engine.js';
import { jobsAdminRouter } from './jobs.js';

/** What the admin endpoints read and change. */
export interface AdminDeps extends SystemDeps {
  db: Database;
  auth: AuthService;
  /** `agent.mcpServers` as the agent resolved them at start (none when the server has no agent). */
  mcpServers?: readonly McpServerConfig[];
  /** The job engine (DESIGN §12); absent: the jobs endpoints answer 503. */
  jobs?: JobEngine;
  /** The agent's attachments: an identity's are deleted, bytes too, with it (DESIGN §7a). */
  agentUploads?: AgentUploads;
}

/** The router; mount it at `/api/_admin` after authentication and a JSON body parser. */
export function adminRouter(deps: AdminDeps): Router {
  const router = Router();
  router.use(
    identitiesRouter(deps.db, deps.auth, deps.agentUploads),
    logsRouter(deps.db),
    agentAdminRouter(deps.db, deps.mcpServers),
    jobsAdminRouter(deps.jobs),
    systemRouter(deps),
  );
  // Anything else under /api/_admin: the admin check first (no route list for others), then 404.
  router.use((req, res) => {
    requireAdmin(res);
    throw new HttpError('NOT_FOUND', `no admin endpoint ${req.method} /api/_admin${req.path}`);
  });
  return router;
}

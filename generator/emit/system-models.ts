/**
 * @module The system tables every app has, emitted into `schema.prisma` beside the collections so that
 * migrations create them (DESIGN §3 access model, §11, SPEC §4.6, §4.9): users, service accounts, mail
 * tokens and sent mails (sign-up and password reset), refresh
 * tokens (hashed, with a family id for reuse detection), the token signing keys, and the client log
 * `_log`, and the agent's tables (DESIGN §7): threads, their turns, one row per identity's session
 * (current thread, session credit counters, and the lease of the instance running it: `instanceId`,
 * `leaseUntil`, with the channel, options, state and start of the running session, and `mcp`: its MCP
 * servers' statuses as JSON, `[{ name, status }]`, written by the lease holder), the attachments of agent messages
 * (`_svc_agent_uploads`: one row per upload, its identity, the thread it was sent in (null until then),
 * name, sniffed type, size and blob-store key; `_svc_agent_turns.attachments` lists a turn's upload ids
 * as JSON; runtime/agent/uploads.ts), the app's id (`apiId` of the stats callback) and its agent credits (one row: consumed, added,
 * this Europe/Oslo month's use, an admin's cap, the pause), with where they went (`_svc_agent_credit_usage`:
 * credits and calls per source — turn, ask, compact — per minute and per hour bucket, keyed by
 * `spanSeconds`, `startMs` (epoch ms, UTC) and `source`; runtime/agent/credit-usage.ts). Their tables are prefixed `_svc_` (or named `_log`); collection names start with a letter, so
 * table names never clash, but the Prisma model names below are reserved for collections.
 */

/** One field of a system model: name, Prisma type, attributes (per provider). */
export interface SystemField {
  name: string;
  type: string;
  sqlite: string;
  postgresql: string;
}

/** A system model: Prisma model name, table name (`@@map`), fields, indexed columns, unique column groups (`"a, b"`). */
export interface SystemModel {
  name: string;
  table: string;
  fields: SystemField[];
  indexes: string[];
  uniques?: string[];
}

const field = (name: string, type: string, sqlite = '', postgresql = sqlite): SystemField => ({ name, type, sqlite, postgresql });
const id = field('id', 'String', '@id');
const createdAt = field('createdAt', 'DateTime', '@default(now())', '@default(now()) @db.Timestamptz(3)');
const updatedAt = field('updatedAt', 'DateTime', '@updatedAt', '@updatedAt @db.Timestamptz(3)');
const time = (name: string, optional = false) => field(name, optional ? 'DateTime?' : 'DateTime', '', '@db.Timestamptz(3)');

/**
 * The system models, in emission order. Roles are stored as a JSON array of names (text); secrets and
 * passwords as argon2id hashes; refresh tokens and mail tokens as SHA-256 hex digests. A user's `email` is
 * kept as given and `emailKey` (its lower-cased form) is unique, so addresses are unique
 * case-insensitively (DESIGN §11); mail tokens are single use (`usedAt`), `purpose` `verify` or
 * `reset`; `_svc_mail_sent` has one row per mail sent, counted per address over the last hour;
 * `_svc_user_providers` links a user to identity-provider subjects (unique per provider and subject,
 * deleted with the user). A user or service account with
 * `disabledAt` set can neither sign in nor use its tokens (`svc user disable`); a user with `admin` bypasses access
 * rules and policies like an admin service account (DESIGN §9); `lastSignInAt` is the last sign-in
 * (password, client secret or identity provider). `_svc_log_batches` is the log store of DESIGN §9 (request lines, client `_log` entries,
 * function output): one row per batch written by `runtime/logs/log-store.ts` (its entries as a JSON
 * array, the ids and times of its oldest and newest entry), read through the view `_svc_logs`; `_svc_agent_turns.credits` is
 * what a turn was charged. `_log` has the columns of a
 * collection row (`id`, `createdAt`, `updatedAt`, `createdBy`) so the runtime reads it with the list
 * machinery of SPEC §4.2.
 */
export const SYSTEM_MODELS: readonly SystemModel[] = [
  {
    name: 'SvcUser',
    table: '_svc_users',
    indexes: [],
    fields: [
      id,
      field('username', 'String', '@unique'),
      field('passwordHash', 'String'),
      field('roles', 'String'),
      createdAt,
      updatedAt,
      time('disabledAt', true),
      field('email', 'String?'),
      field('emailKey', 'String?', '@unique'),
      field('emailVerified', 'Boolean', '@default(false)'),
      field('admin', 'Boolean', '@default(false)'),
      time('lastSignInAt', true),
    ],
  },
  {
    name: 'SvcUserProvider',
    table: '_svc_user_providers',
    indexes: ['userId'],
    uniques: ['provider, subject'],
    fields: [id, field('userId', 'String'), field('provider', 'String'), field('subject', 'String'), field('email', 'String?'), createdAt],
  },
  {
    name: 'SvcMailToken',
    table: '_svc_mail_tokens',
    indexes: ['userId'],
    fields: [
      id,
      field('tokenHash', 'String', '@unique'),
      field('userId', 'String'),
      field('purpose', 'String'),
      time('expiresAt'),
      time('usedAt', true),
      createdAt,
    ],
  },
  {
    name: 'SvcMailSent',
    table: '_svc_mail_sent',
    indexes: ['address'],
    fields: [id, field('address', 'String'), field('purpose', 'String'), createdAt],
  },
  {
    name: 'SvcServiceAccount',
    table: '_svc_service_accounts',
    indexes: [],
    fields: [
      id,
      field('name', 'String'),
      field('clientId', 'String', '@unique'),
      field('secretHash', 'String'),
      field('roles', 'String'),
      field('admin', 'Boolean', '@default(false)'),
      createdAt,
      updatedAt,
      time('disabledAt', true),
      time('lastSignInAt', true),
    ],
  },
  {
    name: 'SvcRefreshToken',
    table: '_svc_refresh_tokens',
    indexes: ['familyId'],
    fields: [
      id,
      field('tokenHash', 'String', '@unique'),
      field('familyId', 'String'),
      field('subjectKind', 'String'),
      field('subjectId', 'String'),
      field('clientId', 'String'),
      time('expiresAt'),
      time('usedAt', true),
      time('revokedAt', true),
      createdAt,
    ],
  },
  {
    name: 'SvcSigningKey',
    table: '_svc_signing_keys',
    indexes: [],
    fields: [id, field('algorithm', 'String'), field('privateJwk', 'String'), field('publicJwk', 'String'), createdAt],
  },
  {
    name: 'SvcLog',
    table: '_log',
    indexes: ['createdBy'],
    fields: [
      field('id', 'String', '@id', '@id @db.Uuid'),
      field('message', 'String', '', '@db.Text'),
      field('severity', 'Int'),
      field('username', 'String?'),
      field('reqId', 'String?'),
      createdAt,
      updatedAt,
      field('createdBy', 'String?'),
    ],
  },
  {
    name: 'SvcLogBatch',
    table: '_svc_log_batches',
    indexes: ['last'],
    fields: [
      field('id', 'String', '@id'),
      field('firstId', 'String'),
      time('first'),
      time('last'),
      field('instance', 'String'),
      field('count', 'Int'),
      field('entries', 'String', '', '@db.Text'),
    ],
  },
  {
    name: 'SvcApp',
    table: '_svc_app',
    indexes: [],
    fields: [id, createdAt],
  },
  {
    name: 'SvcAgentThread',
    table: '_svc_agent_threads',
    indexes: ['identityId'],
    fields: [
      id,
      field('identityId', 'String'),
      field('preview', 'String'),
      field('summary', 'String?'),
      field('summaryTurns', 'Int', '@default(0)'),
      createdAt,
      updatedAt,
    ],
  },
  {
    name: 'SvcAgentTurn',
    table: '_svc_agent_turns',
    indexes: ['threadId'],
    fields: [
      id,
      field('threadId', 'String'),
      field('seq', 'Int'),
      field('userText', 'String'),
      field('messages', 'String'),
      field('items', 'String'),
      field('status', 'String'),
      field('error', 'String?'),
      field('credits', 'Int', '@default(0)'),
      field('attachments', 'String?'),
      createdAt,
    ],
  },
  {
    name: 'SvcAgentUpload',
    table: '_svc_agent_uploads',
    indexes: ['identityId', 'threadId'],
    fields: [
      id,
      field('identityId', 'String'),
      field('threadId', 'String?'),
      field('name', 'String'),
      field('type', 'String'),
      field('size', 'Int'),
      field('storageKey', 'String'),
      createdAt,
    ],
  },
  {
    name: 'SvcAgentSession',
    table: '_svc_agent_sessions',
    indexes: [],
    fields: [
      field('identityId', 'String', '@id'),
      field('threadId', 'String?'),
      field('sessionCredits', 'Int', '@default(0)'),
      field('sessionCreditsUsed', 'Int', '@default(0)'),
      field('instanceId', 'String?'),
      time('leaseUntil', true),
      field('channel', 'String?'),
      field('options', 'String?'),
      field('state', 'String?'),
      time('startedAt', true),
      field('mcp', 'String?'),
      createdAt,
      updatedAt,
    ],
  },
  {
    name: 'SvcAgentCredits',
    table: '_svc_agent_credits',
    indexes: [],
    fields: [
      id,
      field('consumed', 'BigInt', '@default(0)'),
      field('added', 'BigInt', '@default(0)'),
      field('monthKey', 'String?'),
      field('monthUsed', 'BigInt', '@default(0)'),
      field('monthlyCap', 'BigInt?'),
      field('capSet', 'Boolean', '@default(false)'),
      field('paused', 'Boolean', '@default(false)'),
      updatedAt,
    ],
  },
  {
    name: 'SvcAgentCreditUsage',
    table: '_svc_agent_credit_usage',
    indexes: [],
    // The key leads with the bucket size and start, so it also serves the chart's range reads and the prune.
    uniques: ['spanSeconds, startMs, source'],
    fields: [
      field('spanSeconds', 'Int'),
      field('startMs', 'BigInt'),
      field('source', 'String'),
      field('credits', 'BigInt', '@default(0)'),
      field('calls', 'Int', '@default(0)'),
    ],
  },
];

/** Collection names that would clash with a system model (compared case-insensitively). */
export const RESERVED_COLLECTION_NAMES: readonly string[] = SYSTEM_MODELS.map((m) => m.name);

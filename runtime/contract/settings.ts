/**
 * @module Typed app settings of `svc.json` (DESIGN §3) as they stand in the manifest, defaults applied,
 * including the agent and credits settings of DESIGN §7 and the connection of an external collection.
 * Values may carry `${secrets.NAME}` / `${env.NAME}` references: they are resolved by the runtime at
 * start and never written resolved into the manifest.
 */

/** An OpenAI-compatible chat-completions endpoint (DESIGN §7 `agent.providers.<name>`). */
export interface AgentProvider {
  /** Base URL of the API, e.g. `https://llm.example/v1`. */
  baseURL: string;
  /** Bearer key; usually `${env.NAME}` or `${secrets.NAME}`. */
  apiKey?: string;
}

/**
 * A model rung (DESIGN §7 `agent.rungs.<name>`, SPEC §4.11 "Model rungs"): which provider and model
 * run it and its prices in credits per 1,000 tokens (100,000 credits = 1 USD).
 */
export interface AgentRung {
  /** A key of `agent.providers`. */
  provider: string;
  model: string;
  inputPer1k: number;
  /** Price of cached input tokens; absent = `inputPer1k`. Never applied to `norway-*` rungs. */
  cachedInputPer1k?: number;
  outputPer1k: number;
  /**
   * Whether the model takes file parts (default true). false: a PDF attachment reaches it as its
   * extracted text, an image as a note that it cannot be seen (docs/agent.md "Attachments").
   */
  files?: boolean;
}

/** An MCP server the agent connects (DESIGN §7 `agent.mcpServers.<name>`): over HTTP or as a child process. */
export type McpServerSettings = ({ url: string; headers?: Record<string, string> } | { command: string; args?: string[]; env?: Record<string, string> }) & {
  /** Most milliseconds one tool call may take (default 30,000); a later answer is an error. */
  timeoutMs?: number;
};

/** The agent settings (DESIGN §7), defaults applied (see `AGENT_DEFAULTS`). */
export interface AgentSettings {
  providers: Record<string, AgentProvider>;
  /** Rung name (`base`, `pro`, `max`, `norway-base`, `norway-pro`, `norway-max`) → its model and prices. */
  rungs: Record<string, AgentRung>;
  /** Sent to the model as a system message. */
  instructions?: string;
  mcpServers: Record<string, McpServerSettings>;
  /** A session with no turn for this long stops (`idle-stopped`). */
  idleTimeoutSeconds: number;
  /** Most model calls in one turn. */
  maxStepsPerTurn: number;
  /** Worker threads running the turns of all sessions; unset = from the cores (1–4). */
  workers?: number;
  /** Which tool calls wait for the user's approval (docs/agent.md "Approvals"); unset = `auto`. */
  approval?: ApprovalSettings;
  /** Seconds a call waits for its approval before it counts as declined; unset = 300. */
  approvalTimeoutSeconds?: number;
  /** Files and images in messages (DESIGN §7a); unset keys take `ATTACHMENT_DEFAULTS`. */
  attachments?: Partial<AttachmentSettings>;
}

/** `agent.attachments` (DESIGN §7a, issue 34 §3): the largest upload and the types sniffed from its bytes that are taken. */
export interface AttachmentSettings {
  maxBytes: number;
  types: AttachmentType[];
}

/** The types an attachment's bytes can be recognised as (runtime/agent/sniff.ts). */
export const ATTACHMENT_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf', 'text/plain'] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** Defaults of `agent.attachments` (DESIGN §7a). */
export const ATTACHMENT_DEFAULTS: AttachmentSettings = {
  maxBytes: 10 * 1024 * 1024,
  types: ['image/png', 'image/jpeg', 'image/webp', 'application/pdf', 'text/plain'],
};

/**
 * `agent.approval` (issue 34 §1): `default` for every tool, `tools` by tool name, `mcp:<server>/<tool>`
 * or a glob (`*`, `?`) over those, `ask` or `auto`.
 */
export interface ApprovalSettings {
  default?: 'auto' | 'ask-writes' | 'ask';
  tools?: Record<string, 'ask' | 'auto'>;
}

/** Credits metering (DESIGN §7 `credits`), defaults applied (see `CREDITS_DEFAULTS`). */
export interface CreditsSettings {
  /** `business`: cumulative consumption, never blocks; `self-serve`: a balance counting down, 0 refuses turns. */
  mode: 'business' | 'self-serve';
  /** Starting balance of `self-serve`, in credits. */
  initialBalance: number;
  /** Credits per Europe/Oslo calendar month before agent turns and `ask` pause; null = no cap. */
  monthlyCap: number | null;
}

/** Defaults of the optional agent keys (DESIGN §7 gives them as the example's values). */
export const AGENT_DEFAULTS: Omit<AgentSettings, 'instructions'> = {
  providers: {},
  rungs: {},
  mcpServers: {},
  idleTimeoutSeconds: 900,
  maxStepsPerTurn: 25,
};

/** Defaults of the credits keys (DESIGN §7: `business` is the default mode). */
export const CREDITS_DEFAULTS: CreditsSettings = { mode: 'business', initialBalance: 0, monthlyCap: null };

/**
 * How an external collection authenticates at its provider (DESIGN §3, SPEC §4.10): nothing, a fixed
 * key in a header, or OAuth 2 client credentials (token from `tokenUrl`, sent as a bearer token).
 */
export type ExternalConnection =
  | { type: 'none' }
  | { type: 'apiKey'; header: string; value: string }
  | { type: 'oauth2'; tokenUrl: string; clientId: string; clientSecret: string; scope?: string };

/**
 * Real-time settings (svc.json `realtime`) as written; `REALTIME_DEFAULTS` fills the absent limits at
 * run time. Issue "real-time", DESIGN §6.
 */
export interface RealtimeSettings {
  /** Redis URL of the bus between instances (env `REDIS_URL` overrides); absent: in-process only. */
  redis?: string;
  /** Largest frame a client may send, bytes. */
  maxFrameBytes?: number;
  /** Most bytes queued for one connection before it is dropped as a slow reader. */
  sendBufferBytes?: number;
  /** Frames per second one connection may send (bursts of twice that are allowed). */
  maxMessagesPerSecond?: number;
  /** Interval of the hub's keep-alive pings, seconds. */
  keepAliveSeconds?: number;
  /**
   * Most WebSocket connections open at once from one client address (the TCP peer), Web PubSub and hub
   * together; the next upgrade answers 429 `RATE_LIMITED`.
   */
  maxConnectionsPerAddress?: number;
  /** Largest frame an anonymous connection may send, bytes (at most `maxFrameBytes`); larger closes 1009. */
  anonymousMaxFrameBytes?: number;
  /** Frames per second an anonymous connection may send (bursts of twice that); a flood closes 1008. */
  anonymousMaxMessagesPerSecond?: number;
}

/** The real-time limits in force when svc.json leaves them out. */
export const REALTIME_DEFAULTS: Required<Omit<RealtimeSettings, 'redis'>> = {
  maxFrameBytes: 1024 * 1024,
  sendBufferBytes: 1024 * 1024,
  maxMessagesPerSecond: 1000,
  keepAliveSeconds: 15,
  maxConnectionsPerAddress: 100,
  anonymousMaxFrameBytes: 4096,
  anonymousMaxMessagesPerSecond: 10,
};

/**
 * An S3-compatible bucket for blobs (svc.json `storage.s3`; env `SVC_S3_BUCKET`, `SVC_S3_ENDPOINT`,
 * `SVC_S3_REGION` override). Credentials absent: the AWS SDK's default chain (`AWS_ACCESS_KEY_ID`, …).
 * Values may be `${secrets.NAME}` / `${env.NAME}` references (resolved at start).
 */
export interface S3Settings {
  bucket: string;
  /** Default `us-east-1`. */
  region?: string;
  /** Endpoint of a non-AWS server (MinIO, R2, s3rver), e.g. `http://127.0.0.1:9000`. */
  endpoint?: string;
  /** Path-style addressing (`<endpoint>/<bucket>/<key>`); default true when `endpoint` is set. */
  forcePathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** Blob storage (svc.json `storage`, issue "blobs", SPEC §4.5), defaults applied (see `STORAGE_DEFAULTS`). */
export interface StorageSettings {
  /** Folder of the local store, relative to the app folder (used when `s3` is absent). */
  directory: string;
  /** Largest blob in bytes; a larger upload answers 413 as soon as the limit is passed. */
  maxBytes: number;
  /**
   * Thumbnail sizes `WxH` (pixels) that `?thumb=` may ask for: `WxH` crops to fill the box, `WxHf`
   * fits inside it. Any other size answers 400.
   */
  thumbnails: string[];
  /**
   * Lifetime in seconds of the signed `url` in blob metadata (DESIGN §11 "Blob URLs"): rows read it
   * valid for between 3/4 of this and all of it.
   */
  signedUrlSeconds: number;
  /** Store blobs in this bucket instead of the local folder. */
  s3?: S3Settings;
}

/** Defaults of `storage`: `data/blobs`, 50 MiB, three square thumbnail sizes, URLs signed for an hour. */
export const STORAGE_DEFAULTS: StorageSettings = {
  directory: 'data/blobs',
  maxBytes: 50 * 1024 * 1024,
  thumbnails: ['100x100', '200x200', '400x400'],
  signedUrlSeconds: 3600,
};

/**
 * Sign-up of an app's own users (svc.json `auth.signup`, DESIGN §11), defaults applied (see
 * `SIGNUP_DEFAULTS`): `POST /api/_signup` and the login page's "Create account".
 */
export interface SignupSettings {
  /** Whether people may create their own accounts; default false (sign-up answers 403 `SIGNUP_DISABLED`). */
  enabled: boolean;
  /** Custom roles every signed-up user gets; default none. */
  roles: string[];
  /** Sign-up needs an e-mail and sign-in waits (403 `EMAIL_NOT_VERIFIED`) until it is verified; default true. */
  requireEmailVerification: boolean;
}

/** Defaults of `auth.signup`: off, no roles, e-mail verification required. */
export const SIGNUP_DEFAULTS: SignupSettings = { enabled: false, roles: [], requireEmailVerification: true };

/**
 * An OpenID Connect issuer (svc.json `auth.providers.<name>`, DESIGN §11), found by discovery
 * (`<issuer>/.well-known/openid-configuration`). Values may be `${secrets.NAME}` / `${env.NAME}`
 * references; `clientSecret` must be one.
 */
export interface OidcProviderSettings {
  type: 'oidc';
  /** The issuer URL, e.g. `https://accounts.google.com`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Scopes asked for; default `openid email profile` (`openid` is always added). */
  scopes?: string[];
  /** The button's label ("Continue with <displayName>"); default the provider's key, capitalised. */
  displayName?: string;
}

/**
 * GitHub's OAuth 2.0 (svc.json `auth.providers.<name>` with `preset: "github"`, DESIGN §11): the
 * authorize and token endpoints under `baseUrl` (default `https://github.com`), `/user` and
 * `/user/emails` under `apiUrl` (default `https://api.github.com`); both are overridable for tests
 * and GitHub Enterprise.
 */
export interface OAuth2ProviderSettings {
  type: 'oauth2';
  preset: 'github';
  clientId: string;
  clientSecret: string;
  baseUrl?: string;
  apiUrl?: string;
  displayName?: string;
}

/** An identity provider of svc.json `auth.providers`. */
export type ProviderSettings = OidcProviderSettings | OAuth2ProviderSettings;

/** Token and cookie settings (svc.json `auth`), defaults applied. */
export interface AuthSettings {
  accessTokenTtlSeconds: number;
  refreshTokenTtlDays: number;
  secureCookies: boolean;
  signup: SignupSettings;
  /** Identity providers by name (the path segment of `/login/<name>`); default none. */
  providers: Record<string, ProviderSettings>;
  /** A provider sign-in with a verified e-mail address links to the user with that address; default true. */
  linkByVerifiedEmail: boolean;
}

/**
 * Outgoing mail (svc.json `mail`, DESIGN §11): verification and password-reset mails. Without `smtp`
 * mails are written to the log (development only). Values may be `${secrets.NAME}` references.
 */
export interface MailSettings {
  /** The sender, e.g. `Shop <no-reply@shop.example>`; default `<api-name> <no-reply@localhost>`. */
  from?: string;
  /** An SMTP server: `smtp://user:pass@host:587` or `smtps://…:465`, usually `${secrets.SMTP_URL}`. */
  smtp?: { url: string };
  /**
   * The public origin the links in mails point at, e.g. `https://shop.example`; default svc.json
   * `publicUrl`, else the address the server listens on. Never taken from a request's `Host` header (it could be forged).
   */
  baseUrl?: string;
}

/** The log store of the console (svc.json `logs`, DESIGN §9), defaults applied (see `LOGS_DEFAULTS`). */
export interface LogsSettings {
  /** Entries older than this many days are pruned. */
  retentionDays: number;
  /** At most this many entries are kept (the oldest go first). */
  maxRows: number;
  /** The client log `POST /api/_log` (docs/console.md): limits per identity and retention of `_log`; absent or partial: `CLIENT_LOG_DEFAULTS` apply. */
  clientLog?: Partial<ClientLogSettings>;
}

/** Defaults of `logs`: 7 days, 100,000 entries (DESIGN §9). */
export const LOGS_DEFAULTS: LogsSettings = { retentionDays: 7, maxRows: 100_000 };

/**
 * svc.json `logs.clientLog`: how much one identity may post to `POST /api/_log` (a token bucket per
 * identity and instance that refills its per-minute amount evenly over a minute; past it 429 with
 * `Retry-After`), and how long rows of the `_log` table are kept (pruned in the background with the
 * log store).
 */
export interface ClientLogSettings {
  /** `_log` posts per identity per minute; absent: not limited (SPEC §8). */
  requestsPerMinute?: number;
  /** Events per identity per minute (a post holds at most 1,000); absent: not limited. */
  eventsPerMinute?: number;
  /** Message characters per identity per minute (UTF-16 code units, the sum over events); absent: not limited. */
  charactersPerMinute?: number;
  /** Rows of `_log` older than this many days are pruned. */
  retentionDays: number;
  /** At most this many rows of `_log` are kept (the oldest go first). */
  maxRows: number;
}

/**
 * Defaults of `logs.clientLog`: no limit per identity (SPEC §8: the client log is not rate limited; an
 * operator opts in with the per-minute settings, e.g. `CLIENT_LOG_SUGGESTED_LIMITS`); `_log` kept 7 days,
 * at most 100,000 rows.
 */
export const CLIENT_LOG_DEFAULTS: ClientLogSettings = {
  retentionDays: 7,
  maxRows: 100_000,
};

/** Per-identity limits of `POST /api/_log` that docs/console.md suggests for an app open to sign-up: 60 posts, 2,000 events, 1,000,000 characters a minute. */
export const CLIENT_LOG_SUGGESTED_LIMITS = { requestsPerMinute: 60, eventsPerMinute: 2000, charactersPerMinute: 1_000_000 } as const;

/**
 * Metrics (svc.json `metrics`, docs/operations.md): absent or `{}` → `GET /api/_metrics`, admins only;
 * `{ "port": N }` → served on that port alone (no auth, bound to the server's host); `false` → off.
 */
export type MetricsSettings = false | { port?: number };

/** App settings from `svc.json`, with defaults applied (DESIGN §3). */
export interface AppSettings {
  /** The database URL written in svc.json (env `DATABASE_URL` overrides at run time). */
  database: string;
  port: number;
  /** Whether `svc serve` serves the console at `/_/` (DESIGN §9); svc.json `console`, default true. */
  console: boolean;
  auth: AuthSettings;
  realtime: RealtimeSettings;
  functions: { allowFetch: boolean; timeoutMs: number; /** Memory of one function thread (heap + external), MiB. */ maxMemoryMb: number };
  agent: AgentSettings;
  credits: CreditsSettings;
  storage: StorageSettings;
  mail: MailSettings;
  /** Absent in manifests generated before the log store: the runtime applies `LOGS_DEFAULTS`. */
  logs?: LogsSettings;
  /** Absent unless svc.json has `metrics` (the runtime then serves `/api/_metrics` to admins). */
  metrics?: MetricsSettings;
  /**
   * Absent unless svc.json has `trustedProxies`: the load balancers (IP addresses or CIDR ranges)
   * whose `X-Forwarded-For` names the client address (`runtime/auth/client-address.ts`).
   */
  trustedProxies?: string[];
  /**
   * Absent unless svc.json has `allowedHosts`: the names a request's `Host` may carry besides
   * `localhost`, `*.localhost`, IP addresses and the bound address (`runtime/http/host-check.ts`);
   * an entry with a leading `.` allows that domain and its subdomains; `true` or `"all"`: any Host.
   */
  allowedHosts?: AllowedHostsSetting;
  /**
   * Absent unless svc.json has `publicUrl`: the app's one public origin (`https://club.example`, as
   * `parsePublicUrl` normalises it). Origin checks compare with it, mail links, OpenID redirect URIs,
   * `_rt` negotiate URLs and OpenAPI `servers` use it, cookies are `Secure` when it is https, and its
   * host is allowed by the Host check (`runtime/auth/public-origin.ts`, docs/deploy.md).
   */
  publicUrl?: string;
  /** Absent unless svc.json has `public`: how the app's `public/` files are served. */
  public?: PublicSettings;
  /**
   * Absent unless svc.json has `cors`: which other origins' browser pages may call `/api`
   * (`runtime/http/cors.ts`, docs/deploy.md "Calling the API from a front end on another origin").
   * Absent: same origin only (no `Access-Control-*` header is sent).
   */
  cors?: CorsSettings;
  /** svc.json `jobs` (DESIGN §12); absent: jobs run with the defaults of `JobsSettings`. */
  jobs?: JobsSettings;
}

/** svc.json `jobs` (DESIGN §12), defaults applied by the runtime. `false` in svc.json → `{ run: false }`. */
export interface JobsSettings {
  /** Whether this instance runs jobs (it captures events either way). Default true. */
  run: boolean;
  /** Jobs run at once by this instance; default: the function worker pool's size. */
  concurrency?: number;
  /** How often an idle runner looks for due jobs, in ms (SQLite; PostgreSQL also wakes on NOTIFY). Default 1000. */
  pollIntervalMs: number;
}

/** svc.json `cors` (docs/deploy.md "Calling the API from a front end on another origin"), defaults applied. */
export interface CorsSettings {
  /** Exact origins (`scheme://host[:port]`) whose pages may call the API; `"*"`: any origin (never with `credentials`). */
  origins: string[];
  /** Whether the listed origins may send cookies (then `SameSite=None; Secure`, and an https `publicUrl`). */
  credentials: boolean;
  /** How long a browser may cache a preflight answer (`Access-Control-Max-Age`). */
  maxAgeSeconds: number;
}

/** Defaults of the `cors` keys besides `origins`. */
export const CORS_DEFAULTS: Omit<CorsSettings, 'origins'> = { credentials: false, maxAgeSeconds: 600 };

/**
 * Normalises one `cors.origins` entry: an exact origin `scheme://host[:port]` (http or https, no
 * path, query, user or trailing slash), answered as browsers send it in `Origin` (lower-case,
 * default port dropped); `"*"` stays `"*"`.
 * @returns null when the entry is not such an origin
 */
export function parseCorsOrigin(entry: string): string | null {
  if (entry === '*') return '*';
  const m = /^(https?):\/\/([^/?#@\s]+)$/i.exec(entry);
  if (!m) return null;
  try {
    const url = new URL(entry);
    const name = /^([a-z0-9_-]+\.)*[a-z0-9_-]+\.?$|^\[[0-9a-f:.]+\]$/; // no wildcard or other signs
    return url.origin === 'null' || !name.test(url.hostname) ? null : url.origin;
  } catch {
    return null;
  }
}

/**
 * Why `cors.credentials: true` cannot be served with this `publicUrl`, or null when it can: cookies
 * sent across sites need `SameSite=None; Secure`, and a browser keeps `Secure` cookies of https
 * origins only (and of `http://localhost`, which browsers treat as secure, for development).
 */
export function corsCredentialsProblem(settings: Pick<AppSettings, 'cors' | 'publicUrl'>): string | null {
  if (settings.cors?.credentials !== true) return null;
  const url = settings.publicUrl;
  if (url !== undefined && /^https:\/\//i.test(url)) return null;
  if (url !== undefined && /^http:\/\/([a-z0-9-]+\.)*localhost(:\d+)?\/?$/i.test(url)) return null;
  return `svc.json cors.credentials is true, which needs cookies with SameSite=None; Secure: set svc.json "publicUrl" to the app's https:// origin (it is ${url === undefined ? 'absent' : JSON.stringify(url)})`;
}

/** svc.json `allowedHosts` (docs/deploy.md "Allowed hosts"): names, or `true`/`"all"` for any Host. */
export type AllowedHostsSetting = true | 'all' | string[];

/** svc.json `public` (docs/deploy.md): how the files of `public/` are served. */
export interface PublicSettings {
  /**
   * The `frame-ancestors` sources of the `Content-Security-Policy` sent with `public/` files, written
   * as in CSP (`'self' https://partner.example`, `*`, `'none'`); default `'self'`.
   */
  frameAncestors?: string;
}

/** Default `public.frameAncestors`: only the app's own pages may frame its `public/` pages. */
export const PUBLIC_FRAME_ANCESTORS_DEFAULT = "'self'";

/**
 * Normalises one `allowedHosts` entry (svc.json): a host name, lower-cased, optionally with a leading
 * `.` (the domain and its subdomains); no scheme, port, path or wildcard. The generator refuses what
 * this refuses (`DEF_ALLOWED_HOST`); the runtime's Host check is built from what it answers.
 * @returns the entry lower-cased, or null when it is not a host name
 */
export function parseAllowedHost(entry: string): string | null {
  const e = entry.trim().toLowerCase();
  const name = e.startsWith('.') ? e.slice(1) : e;
  const label = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
  if (name === '' || name.length > 253 || !name.split('.').every((l) => label.test(l))) {
    // An IPv6 address (no brackets) is allowed as itself.
    return !e.startsWith('.') && /^[0-9a-f:.]+$/.test(e) && e.includes(':') ? e : null;
  }
  return e;
}

/**
 * Normalises svc.json `publicUrl`: an absolute `http:` or `https:` origin (scheme, host, optional
 * port), without user name, password, path (a lone `/` is allowed), query or fragment. The generator
 * refuses what this refuses (`DEF_PUBLIC_URL`); the runtime uses what it answers.
 * @returns the origin as `URL.origin` writes it (lower-case host, default port dropped: `https://club.example`), or null
 */
export function parsePublicUrl(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) return null;
  if (/[?#]$/.test(value.trim())) return null;
  return url.origin;
}

/**
 * Parses one `trustedProxies` entry (svc.json): an IPv4 or IPv6 address, or a CIDR range (`10.0.0.0/8`,
 * `fd00::/8`). The generator refuses what this refuses (`DEF_TRUSTED_PROXY`); the runtime builds its
 * block list from what it answers.
 * @param isIP - `node:net`'s `isIP` (the contract imports nothing)
 * @returns null when the entry is neither
 */
export function parseProxyEntry(entry: string, isIP: (input: string) => number): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const [address, bits, extra] = entry.trim().split('/');
  const version = isIP(address ?? '');
  if (version === 0 || extra !== undefined) return null;
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

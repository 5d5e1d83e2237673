/**
 * @module Service connections of external collections (SPEC §4.10, DESIGN §3 and §4 "External
 * details"): the credentials a request to the provider carries. `none` adds nothing; `apiKey` adds
 * its header; `oauth2` runs the client-credentials grant (a form-encoded POST of
 * `grant_type=client_credentials`, `client_id`, `client_secret` to `tokenUrl`) and sends
 * `Authorization: Bearer <token>`. The token is cached until 30 s before it expires, concurrent
 * requests share one token request, and `renew` drops a token the provider refused. Secrets are
 * resolved at start (`${secrets.NAME}` from `SVC_SECRET_NAME`) and never logged or answered.
 */
import type { ExternalConnection } from '../contract/settings.js';
import { HttpError } from '../errors.js';

/** A token is renewed this long before the provider says it expires. */
export const RENEW_EARLY_MS = 30_000;

/** Credentials for one provider. */
export interface ServiceConnection {
  /** The headers a provider request carries. @throws HttpError BAD_GATEWAY / GATEWAY_TIMEOUT when the token endpoint fails */
  headers(signal: AbortSignal): Promise<Record<string, string>>;
  /** Forgets `token` if it is the cached one (the provider answered 401 to it); true when a retry may help. */
  renew(headers: Record<string, string>): boolean;
}

/** OAuth 2 client credentials with a cached, single-flight token. */
class OAuth2Connection implements ServiceConnection {
  private token: { value: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;
  /** How many token requests were made (for logs and tests of the cache). */
  requests = 0;

  constructor(
    private readonly c: Extract<ExternalConnection, { type: 'oauth2' }>,
    private readonly name: string,
    private readonly now: () => number,
  ) {}

  async headers(signal: AbortSignal): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.current(signal)}` };
  }

  renew(headers: Record<string, string>): boolean {
    if (this.token && headers.authorization === `Bearer ${this.token.value}`) this.token = undefined;
    return true;
  }

  private current(signal: AbortSignal): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return Promise.resolve(this.token.value);
    // One token request at a time: everyone waiting shares it (it outlives a caller that gives up).
    this.pending ??= this.fetchToken(signal).finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetchToken(signal: AbortSignal): Promise<string> {
    this.requests += 1;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: this.c.clientId, client_secret: this.c.clientSecret });
    if (this.c.scope) form.set('scope', this.c.scope);
    let res: Response;
    try {
      res = await fetch(this.c.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form,
        signal,
      });
    } catch (err) {
      throw providerFailure(this.name, err, 'its token endpoint');
    }
    const body = (await res.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (!res.ok || typeof body?.access_token !== 'string') {
      throw new HttpError('BAD_GATEWAY', `${this.name}: the provider's token endpoint did not issue a token (status ${res.status})`);
    }
    const lifetimeMs = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : Infinity;
    this.token = { value: body.access_token, renewAt: this.now() + lifetimeMs - RENEW_EARLY_MS };
    return body.access_token;
  }
}

/**
 * 504 for a timeout, 502 for any other failure to reach the provider; the cause is not echoed.
 * @param what - what was called, for the message (`the provider`, `its token endpoint`)
 */
export function providerFailure(name: string, err: unknown, what = 'the provider'): HttpError {
  const e = err as { name?: string };
  if (e.name === 'TimeoutError') return new HttpError('GATEWAY_TIMEOUT', `${name}: ${what} did not answer in time`);
  if (err instanceof HttpError) return err;
  return new HttpError('BAD_GATEWAY', `${name}: ${what} could not be reached`);
}

/**
 * The connection of an external collection, secrets already resolved.
 * @param now - the clock, in milliseconds (tests inject one)
 */
export function serviceConnection(name: string, c: ExternalConnection, now: () => number = Date.now): ServiceConnection {
  switch (c.type) {
    case 'none':
      return { headers: async () => ({}), renew: () => false };
    case 'apiKey':
      return { headers: async () => ({ [c.header.toLowerCase()]: c.value }), renew: () => false };
    case 'oauth2':
      return new OAuth2Connection(c, name, now);
  }
}

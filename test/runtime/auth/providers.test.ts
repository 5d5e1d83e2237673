/**
 * The framework-free parts of provider sign-in (DESIGN §11): providers made from svc.json settings
 * (references resolved, https required off loopback, errors naming the setting), usernames derived
 * from what a provider says, and GitHub's `/user` and `/user/emails` answers read defensively.
 */
import { describe, expect, it } from 'vitest';
import { createProviders } from '../../../dist/runtime/auth/providers/registry.js';
import { githubIdentity } from '../../../dist/runtime/auth/providers/github.js';
import { usernameBase } from '../../../dist/runtime/auth/providers/link.js';
import { ProviderError } from '../../../dist/runtime/auth/providers/types.js';
import type { ProviderSettings } from '../../../dist/runtime/contract/settings.js';

const oidc: ProviderSettings = { type: 'oidc', issuer: '${env.ISSUER}', clientId: 'app', clientSecret: '${secrets.IDP}' };
const github: ProviderSettings = { type: 'oauth2', preset: 'github', clientId: 'gh', clientSecret: '${secrets.GH}', displayName: 'GitHub' };

describe('createProviders', () => {
  it('resolves references, keeps the order of svc.json and names buttons', () => {
    const providers = createProviders({ idp: oidc, github }, { ISSUER: 'http://127.0.0.1:4000', SVC_SECRET_IDP: 's', SVC_SECRET_GH: 't' });
    expect([...providers.keys()]).toEqual(['idp', 'github']);
    expect(providers.get('idp')).toMatchObject({ displayName: 'Idp', oidc: true });
    expect(providers.get('github')).toMatchObject({ displayName: 'GitHub', oidc: false });
    expect(providers.get('github')!.verifyIdToken).toBeUndefined();
  });

  it('refuses a missing secret, a non-URL and plain http off loopback, naming the setting', () => {
    expect(() => createProviders({ idp: oidc }, { ISSUER: 'https://id.example' })).toThrow(
      /auth\.providers\.idp\.clientSecret refers to \$\{secrets\.IDP\}.*SVC_SECRET_IDP/,
    );
    expect(() => createProviders({ idp: oidc }, { ISSUER: 'not a url', SVC_SECRET_IDP: 's' })).toThrow(/auth\.providers\.idp\.issuer must be a URL/);
    expect(() => createProviders({ idp: oidc }, { ISSUER: 'http://id.example', SVC_SECRET_IDP: 's' })).toThrow(
      /auth\.providers\.idp\.issuer must be an https:\/\/ URL/,
    );
    expect(() => createProviders({ gh: { ...github, apiUrl: 'ftp://x' } }, { SVC_SECRET_GH: 't' })).toThrow(/auth\.providers\.gh\.apiUrl/);
  });

  it('with a leftOut callback, leaves a provider it cannot resolve out and keeps the others', () => {
    const why: string[] = [];
    const providers = createProviders({ idp: oidc, github }, { ISSUER: 'https://id.example', SVC_SECRET_GH: 't' }, (name, reason) =>
      why.push(`${name}: ${reason}`),
    );
    expect([...providers.keys()]).toEqual(['github']);
    expect(why).toEqual([expect.stringMatching(/^idp: auth\.providers\.idp\.clientSecret refers to \$\{secrets\.IDP\}.*SVC_SECRET_IDP/)]);
  });

  it('builds GitHub authorization URLs under baseUrl with PKCE and state', async () => {
    const providers = createProviders({ gh: { ...github, baseUrl: 'https://ghe.example/' } }, { SVC_SECRET_GH: 't' });
    const url = await providers
      .get('gh')!
      .authorizationUrl({ state: 'st', nonce: '', codeVerifier: 'v'.repeat(43), redirectUri: 'https://app.example/login/gh/callback' });
    expect(url.origin + url.pathname).toBe('https://ghe.example/login/oauth/authorize');
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: 'gh',
      state: 'st',
      code_challenge_method: 'S256',
      redirect_uri: 'https://app.example/login/gh/callback',
      scope: 'read:user user:email',
    });
    expect(url.searchParams.get('client_secret')).toBeNull();
  });
});

describe('usernameBase', () => {
  it('takes the login, else the local part, cleaned to letters, digits, dot, dash and underscore', () => {
    expect(usernameBase({ subject: '1', email: 'ann@x.org', emailVerified: true, login: 'Ann.Smith' }, 'google')).toBe('Ann.Smith');
    expect(usernameBase({ subject: '1', email: 'jöhn doe+tag@x.org', emailVerified: true, login: null }, 'google')).toBe('john-doe-tag');
    expect(usernameBase({ subject: '1', email: null, emailVerified: false, login: '<script>' }, 'google')).toBe('script');
    expect(usernameBase({ subject: '1', email: null, emailVerified: false, login: '...' }, 'google')).toBe('google-user');
    expect(usernameBase({ subject: '1', email: null, emailVerified: false, login: 'x'.repeat(100) }, 'google')).toHaveLength(40);
  });
});

describe('githubIdentity', () => {
  it('uses the numeric id, the login and the primary address with its verified flag', () => {
    const emails = [
      { email: 'other@x.org', primary: false, verified: true },
      { email: 'main@x.org', primary: true, verified: false },
    ];
    expect(githubIdentity({ id: 42, login: 'octo' }, emails, 'GitHub')).toEqual({ subject: '42', login: 'octo', email: 'main@x.org', emailVerified: false });
  });

  it('reads hostile answers without crashing: no list, junk entries, no id', () => {
    expect(githubIdentity({ id: 7, login: 3, email: 'pub@x.org' }, { message: 'nope' }, 'GitHub')).toEqual({
      subject: '7',
      login: null,
      email: 'pub@x.org',
      emailVerified: false,
    });
    expect(githubIdentity({ id: '7' }, [null, 5, { email: 1 }, { email: 'v@x.org', verified: true }], 'GitHub')).toMatchObject({
      email: 'v@x.org',
      emailVerified: true,
    });
    for (const user of [null, [], { id: null }, { id: {} }, { id: '' }, { id: 'x'.repeat(101) }]) {
      expect(() => githubIdentity(user, [], 'GitHub')).toThrow(ProviderError);
    }
  });
});

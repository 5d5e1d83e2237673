/**
 * What the console may store and show (DESIGN §9): `redactPath` keeps a request's path and replaces
 * the values of credential-like query parameters; `hideSecrets` hides secret values of the manifest
 * but keeps `${secrets.NAME}` references, and drops passwords and query strings from URLs.
 */
import { describe, expect, it } from 'vitest';
import { redactPath } from '../../dist/runtime/logs/redact.js';
import { hideSecrets } from '../../dist/runtime/http/admin/system.js';

describe('redactPath', () => {
  it('replaces the values of parameters named like credentials, whatever their case or encoding', () => {
    expect(redactPath('/api/Note?token=abc&pageSize=2')).toBe('/api/Note?token=[redacted]&pageSize=2');
    expect(redactPath('/api/x?access_token=a&API_KEY=b&apiKey=c&password=d&client_secret=e&X-Amz-Signature=f&code=g&sessionId=h')).toBe(
      '/api/x?access_token=[redacted]&API_KEY=[redacted]&apiKey=[redacted]&password=[redacted]&client_secret=[redacted]&X-Amz-Signature=[redacted]&code=[redacted]&sessionId=[redacted]',
    );
    expect(redactPath('/api/x?%74oken=abc')).toBe('/api/x?%74oken=[redacted]');
    expect(redactPath('/login/verify?token')).toBe('/login/verify?token=[redacted]');
  });
  it('keeps the keyset cursor lastKey (no secret) but redacts every other key', () => {
    expect(redactPath('/api/Order?lastKey=0190aaaa-0000-7000-8000-000000000001&pageSize=2')).toBe(
      '/api/Order?lastKey=0190aaaa-0000-7000-8000-000000000001&pageSize=2',
    );
    expect(redactPath('/api/Order?LASTKEY=a&key=b&apiKey=c&lastKeyX=d&X-Amz-Signature=e')).toBe(
      '/api/Order?LASTKEY=a&key=[redacted]&apiKey=[redacted]&lastKeyX=[redacted]&X-Amz-Signature=[redacted]',
    );
  });
  it('keeps other parameters, paths without a query, and malformed escapes as sent', () => {
    expect(redactPath('/api/Order')).toBe('/api/Order');
    expect(redactPath('/api/Order?filter=a%20eq%201&%E0%A4%A=1')).toBe('/api/Order?filter=a%20eq%201&%E0%A4%A=1');
    expect(redactPath(`/api/${'x'.repeat(3000)}`)).toHaveLength(2001);
  });
});

describe('hideSecrets', () => {
  it('hides secret values but keeps references, and strips passwords from URLs', () => {
    const shown = hideSecrets({
      connection: { type: 'apiKey', header: 'x-key', value: 'plain-secret' },
      other: { type: 'oauth2', clientId: 'id', clientSecret: '${secrets.CLIENT_SECRET}', tokenUrl: 'https://h.example/t?key=1' },
      settings: { database: 'postgres://u:pw@db:5432/app?sslmode=require', redis: 'redis://:pw@r:6379', mail: { smtp: { url: '${secrets.SMTP_URL}' } } },
      list: [{ password: 'x' }],
      children: [{ key: 'OrderLine.order', collection: 'OrderLine', field: 'order' }],
      agent: { providers: { p: { apiKey: 'sk-plain' } } },
      name: 'shop',
    });
    expect(shown).toEqual({
      connection: { type: 'apiKey', header: 'x-key', value: '[hidden]' },
      other: { type: 'oauth2', clientId: 'id', clientSecret: '${secrets.CLIENT_SECRET}', tokenUrl: 'https://h.example/t?[hidden]' },
      settings: { database: 'postgres://u:[hidden]@db:5432/app?[hidden]', redis: 'redis://:[hidden]@r:6379', mail: { smtp: { url: '${secrets.SMTP_URL}' } } },
      list: [{ password: '[hidden]' }],
      children: [{ key: 'OrderLine.order', collection: 'OrderLine', field: 'order' }],
      agent: { providers: { p: { apiKey: '[hidden]' } } },
      name: 'shop',
    });
  });
});

/**
 * @module load → validate → normalise on app folders written to a temp dir from inline objects: a valid
 * shop normalises with defaults, children and sort order; a broken app reports every problem at once.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { loadApp } from '../../dist/generator/load/load-app.js';
import { DefinitionError, formatDiagnostic } from '../../dist/generator/validate/diagnostics.js';
import { loadAndValidate, validateApp } from '../../dist/generator/validate/index.js';
import { filterProblems } from '../../dist/runtime/query/check-filters.js';

type Files = Record<string, unknown>;
const root = mkdtempSync(join(tmpdir(), 'svc-validate-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Writes an app folder: string values as-is (code, broken JSON), anything else as JSON. */
function writeApp(files: Files): string {
  const dir = join(root, `app${++count}`);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
  return dir;
}

const authenticated = ['_AUTHENTICATED_USER'];
const shop: Files = {
  'svc.json': { name: 'shop' },
  'collections/Product.json': {
    name: 'Product',
    properties: { title: { type: 'string', required: true, maxLength: 200 }, price: { type: 'decimal', default: 0 } },
  },
  'collections/Customer.json': {
    name: 'Customer',
    search: true,
    properties: { name: { type: 'string', required: true }, email: { type: 'string' } },
    access: [{ method: 'GET', roleNames: authenticated }],
  },
  'collections/Order.json': {
    name: 'Order',
    properties: {
      number: { type: 'string' },
      customer: { type: 'lookup', collection: 'Customer', required: true },
      total: { type: 'decimal', default: 0 },
      paid: { type: 'boolean', default: false },
      placedAt: { type: 'date-time', default: 'now()' },
      status: { type: 'string', enum: ['new', 'shipped'], default: 'new' },
    },
    access: [
      { method: 'GET', roleNames: authenticated },
      { method: 'LISTEN', roleNames: authenticated },
    ],
    policies: [{ roleNames: authenticated, filter: "createdBy eq exp('me()')" }],
  },
  'collections/OrderLine.json': {
    name: 'OrderLine',
    properties: {
      order: { type: 'lookup', collection: 'Order' },
      product: { type: 'lookup', collection: 'Product' },
      quantity: { type: 'integer', default: 1, minimum: 1 },
    },
  },
  'views/OpenOrders.json': { name: 'OpenOrders', collection: 'Order', filter: 'paid eq false' },
  'queries/OrderLines.json': {
    name: 'OrderLines',
    from: 'OrderLine',
    fields: { customerName: 'order.customer.name', productTitle: 'product.title', quantity: 'quantity' },
    access: [{ method: 'GET', roleNames: authenticated }],
  },
  'queries/CustomerRevenue.json': {
    name: 'CustomerRevenue',
    from: 'Order',
    filter: 'paid eq true',
    groupBy: ['customer'],
    fields: { customerName: 'customer.name', orders: { count: 'id' }, revenue: { sum: 'total' }, lastOrder: { max: 'placedAt' } },
  },
  'functions/sendMail.json': {
    name: 'sendMail',
    functionTypeId: 1,
    endpoint: '/sendMail',
    requestBody: [{ name: 'to', type: 'string', isRequired: true }],
    access: { POST: authenticated },
  },
  'functions/sendMail.ts': 'export default () => ({ ok: true });\n',
  'external/Weather.json': { name: 'Weather', url: 'https://provider.example/weather', connection: { type: 'none' } },
};

describe('a valid app', () => {
  test('loads, validates and normalises with defaults, children and sort order', async () => {
    const { manifest, raw } = await loadAndValidate(writeApp(shop), {});
    expect(raw.collections.map((f) => f.file)).toEqual([
      'collections/Customer.json',
      'collections/Order.json',
      'collections/OrderLine.json',
      'collections/Product.json',
    ]);
    expect(raw.functions).toEqual([expect.objectContaining({ file: 'functions/sendMail.json', codeFile: 'functions/sendMail.ts' })]);
    expect(manifest.name).toBe('shop');
    expect(manifest.provider).toBe('sqlite');
    expect(manifest.settings).toEqual({
      database: 'file:./data/shop.db',
      port: 3000,
      console: true,
      auth: {
        accessTokenTtlSeconds: 3600,
        refreshTokenTtlDays: 70,
        secureCookies: false,
        signup: { enabled: false, roles: [], requireEmailVerification: true },
        providers: {},
        linkByVerifiedEmail: true,
      },
      realtime: {},
      functions: { allowFetch: false, timeoutMs: 30000, maxMemoryMb: 256 },
      agent: { providers: {}, rungs: {}, mcpServers: {}, idleTimeoutSeconds: 900, maxStepsPerTurn: 25 },
      credits: { mode: 'business', initialBalance: 0, monthlyCap: null },
      storage: { directory: 'data/blobs', maxBytes: 52428800, thumbnails: ['100x100', '200x200', '400x400'], signedUrlSeconds: 3600 },
      mail: {},
      logs: { retentionDays: 7, maxRows: 100000 },
    });
    expect(manifest.collections.map((c) => c.name)).toEqual(['Customer', 'Order', 'OrderLine', 'Product']);
    const [customer, order, orderLine, product] = manifest.collections;
    expect(customer.children).toEqual([{ key: 'Order.customer', collection: 'Order', field: 'customer' }]);
    expect(order.children).toEqual([{ key: 'OrderLine.order', collection: 'OrderLine', field: 'order' }]);
    expect(orderLine.children).toEqual([]);
    expect(product.children).toEqual([{ key: 'OrderLine.product', collection: 'OrderLine', field: 'product' }]);
    expect(order.properties.map((p) => p.name)).toEqual(['number', 'customer', 'total', 'paid', 'placedAt', 'status']);
    expect(product).toEqual({
      name: 'Product',
      search: false,
      access: [],
      policies: [],
      children: product.children,
      properties: [
        { name: 'title', type: 'string', required: true, maxLength: 200 },
        { name: 'price', type: 'decimal', required: false, default: 0 },
      ],
    });
    expect(customer.search).toBe(true);
    expect(manifest.views).toEqual([{ name: 'OpenOrders', collection: 'Order', filter: 'paid eq false', access: null }]);
    expect(manifest.queries.map((q) => q.name)).toEqual(['CustomerRevenue', 'OrderLines']);
    expect(manifest.queries[0]).toEqual({
      name: 'CustomerRevenue',
      from: 'Order',
      filter: 'paid eq true',
      groupBy: ['customer'],
      access: [],
      idType: 'guid',
      fields: {
        customerName: { path: 'customer.name', type: 'string' },
        orders: { aggregate: 'count', path: 'id', type: 'integer' },
        revenue: { aggregate: 'sum', path: 'total', type: 'decimal' },
        lastOrder: { aggregate: 'max', path: 'placedAt', type: 'date-time' },
      },
    });
    expect(manifest.functions).toEqual([
      {
        name: 'sendMail',
        enabled: true,
        functionTypeId: 1,
        endpoint: '/sendMail',
        queryParams: [],
        requestBody: [{ name: 'to', type: 'string', isRequired: true }],
        responseFields: [],
        access: { POST: ['_AUTHENTICATED_USER'] },
        module: 'functions/sendMail.js',
        // SPEC §4.8 rule 7: the return type of the default export, read from sendMail.ts
        codeTypes: { response: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } },
      },
    ]);
    expect(manifest.externals).toEqual([{ name: 'Weather', url: 'https://provider.example/weather', connection: { type: 'none' }, access: [] }]);
  });

  test('is deterministic', async () => {
    const dir = writeApp(shop);
    const a = (await loadAndValidate(dir, {})).manifest;
    const b = (await loadAndValidate(dir, {})).manifest;
    expect(b).toEqual(a);
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  test.each([
    ['svc.json database', { database: 'postgresql://db.example/shop' }, {}, 'postgresql', 'postgresql://db.example/shop'],
    // The provider follows the URL in force; the manifest keeps svc.json's value (env URLs may hold passwords).
    ['env DATABASE_URL over svc.json', { database: 'file:./x.db' }, { DATABASE_URL: 'postgres://u:secret@pg/shop' }, 'postgresql', 'file:./x.db'],
    ['env sqlite over svc.json postgres', { database: 'postgres://pg/shop' }, { DATABASE_URL: 'file:/tmp/s.db' }, 'sqlite', 'postgres://pg/shop'],
    ['empty env DATABASE_URL is unset', {}, { DATABASE_URL: '' }, 'sqlite', 'file:./data/shop.db'],
  ])('provider from %s', async (_title, svc, env, provider, database) => {
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', ...svc } });
    const { manifest } = await loadAndValidate(dir, env);
    expect(manifest.provider).toBe(provider);
    expect(manifest.settings.database).toBe(database);
  });

  test('environment URLs never reach the manifest; PORT is not read', async () => {
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', port: 8080, realtime: { redis: 'redis://a:6379' } } });
    const { manifest } = await loadAndValidate(dir, { REDIS_URL: 'redis://:secret@b:6379', DATABASE_URL: 'postgres://u:secret@h/db', PORT: '9' });
    expect(manifest.settings.realtime).toEqual({ redis: 'redis://a:6379' });
    expect(JSON.stringify(manifest)).not.toContain('secret');
    expect(manifest.settings.port).toBe(8080);
  });

  test('the agent and credits settings of DESIGN §7 validate and reach the manifest typed, defaults filled', async () => {
    const agent = {
      providers: { global: { baseURL: 'https://llm.example/v1', apiKey: '${env.LLM_KEY}' } },
      rungs: { base: { provider: 'global', model: 'small-1', inputPer1k: 15, cachedInputPer1k: 4, outputPer1k: 60 } },
      instructions: 'You are the assistant of the shop app.',
      mcpServers: {
        docs: { url: 'http://127.0.0.1:7070/mcp', headers: { authorization: 'Bearer ${secrets.DOCS}' } },
        files: { command: 'node', args: ['mcp/files.mjs'] },
      },
      maxStepsPerTurn: 10,
      workers: 2,
      approval: { default: 'ask-writes', tools: { deleteOrder: 'ask', 'list*': 'auto', 'mcp:files/*': 'ask' } },
      approvalTimeoutSeconds: 60,
    };
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', agent, credits: { mode: 'self-serve', initialBalance: 500000 } } });
    const { manifest } = await loadAndValidate(dir, {});
    expect(manifest.settings.agent).toEqual({ ...agent, idleTimeoutSeconds: 900 });
    expect(manifest.settings.credits).toEqual({ mode: 'self-serve', initialBalance: 500000, monthlyCap: null });
  });

  test('agent.approval and agent.approvalTimeoutSeconds are refused naming the key', async () => {
    const agent = (extra: Record<string, unknown>) => ({ ...shop, 'svc.json': { name: 'shop', agent: { providers: {}, rungs: {}, ...extra } } });
    expect((await problems(agent({ approval: { default: 'sometimes' } }))).join('\n')).toContain('svc.json: /agent/approval/default');
    expect((await problems(agent({ approval: { tools: { deleteOrder: 'never' } } }))).join('\n')).toContain('svc.json: /agent/approval/tools/deleteOrder');
    expect((await problems(agent({ approval: { ask: true } }))).join('\n')).toContain('svc.json: /agent/approval');
    expect((await problems(agent({ approvalTimeoutSeconds: 0 }))).join('\n')).toContain('svc.json: /agent/approvalTimeoutSeconds');
  });

  test('keeps the log store retention of svc.json, defaults filled in (DESIGN §9)', async () => {
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', logs: { retentionDays: 30 } } });
    const { manifest } = await loadAndValidate(dir, {});
    expect(manifest.settings.logs).toEqual({ retentionDays: 30, maxRows: 100000 });
    const limited = writeApp({ ...shop, 'svc.json': { name: 'shop', logs: { clientLog: { eventsPerMinute: 5000, retentionDays: 30 } } } });
    // `logs.clientLog` is carried as written; the runtime fills in CLIENT_LOG_DEFAULTS.
    expect((await loadAndValidate(limited, {})).manifest.settings.logs).toEqual({
      retentionDays: 7,
      maxRows: 100000,
      clientLog: { eventsPerMinute: 5000, retentionDays: 30 },
    });
  });
});

/** Formatted diagnostics of an app folder. */
async function problems(files: Files, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const err = await loadAndValidate(writeApp(files), env).then(
    () => null,
    (e: unknown) => e,
  );
  if (err === null) return [];
  expect(err).toBeInstanceOf(DefinitionError);
  return (err as DefinitionError).diagnostics.map(formatDiagnostic);
}

describe('sign-up and mail settings (DESIGN §11)', () => {
  test('reach the manifest with defaults filled; references stay unresolved', async () => {
    const mail = { from: 'Shop <no-reply@shop.example>', smtp: { url: '${secrets.SMTP_URL}' }, baseUrl: 'https://shop.example' };
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', auth: { signup: { enabled: true, roles: ['member'] } }, mail } });
    const { manifest } = await loadAndValidate(dir, { SVC_SECRET_SMTP_URL: 'smtp://u:hidden@mail:587' });
    expect(manifest.settings.auth.signup).toEqual({ enabled: true, roles: ['member'], requireEmailVerification: true });
    expect(manifest.settings.mail).toEqual(mail);
    expect(JSON.stringify(manifest)).not.toContain('hidden');
  });

  test('refuse a password in mail.smtp.url, a bad role name and an unknown key', async () => {
    expect(
      await problems({
        ...shop,
        'svc.json': { name: 'shop', auth: { signup: { enabled: true, roles: ['_ADMIN'] } }, mail: { smtp: { url: 'smtp://user:pw@mail:587' } } },
      }),
    ).toEqual([
      expect.stringMatching(/^svc\.json: \/auth\/signup\/roles\/0: /),
      expect.stringContaining('svc.json: /mail/smtp/url: mail.smtp.url carries a password'),
    ]);
    expect(await problems({ ...shop, 'svc.json': { name: 'shop', mail: { smtp: { url: 'smtp://mail:25' } } } })).toEqual([]);
    expect(await problems({ ...shop, 'svc.json': { name: 'shop', auth: { signup: { open: true } } } })).toEqual([
      expect.stringContaining('unknown key "open"'),
    ]);
  });
});

test('storage.signedUrlSeconds reaches the manifest (default 3600); zero, a fraction or text is refused', async () => {
  const set = (signedUrlSeconds: unknown) => ({ ...shop, 'svc.json': { name: 'shop', storage: { signedUrlSeconds } } });
  expect((await loadAndValidate(writeApp(set(60)), {})).manifest.settings.storage.signedUrlSeconds).toBe(60);
  for (const bad of [0, 1.5, '60']) expect(await problems(set(bad))).toEqual([expect.stringMatching(/^svc\.json: \/storage\/signedUrlSeconds: /)]);
});

describe('identity providers (DESIGN §11)', () => {
  const google = { type: 'oidc', issuer: 'https://accounts.google.com', clientId: 'abc', clientSecret: '${secrets.GOOGLE}' };
  const github = { type: 'oauth2', preset: 'github', clientId: 'gh', clientSecret: '${secrets.GITHUB}', baseUrl: 'http://127.0.0.1:9999' };

  test('reach the manifest as written, references unresolved, linkByVerifiedEmail as given', async () => {
    const dir = writeApp({ ...shop, 'svc.json': { name: 'shop', auth: { providers: { google, github }, linkByVerifiedEmail: false } } });
    const { manifest } = await loadAndValidate(dir, { SVC_SECRET_GOOGLE: 'hidden-secret' });
    expect(manifest.settings.auth.providers).toEqual({ google, github });
    expect(manifest.settings.auth.linkByVerifiedEmail).toBe(false);
    expect(JSON.stringify(manifest)).not.toContain('hidden-secret');
  });

  test('refuse a secret in clear, a non-https issuer, a reserved or malformed name, an unknown type and unknown keys, naming each', async () => {
    const providers = {
      google: { ...google, clientSecret: 'plain-secret', issuer: 'http://accounts.example' },
      signup: github,
      Bad_Name: github,
      saml: { type: 'saml' },
      gh: { ...github, scopes: ['x'] },
      idp: { type: 'oidc', clientId: 'a', clientSecret: '${env.A}' },
    };
    expect(await problems({ ...shop, 'svc.json': { name: 'shop', auth: { providers } } })).toEqual(
      expect.arrayContaining([
        expect.stringContaining('svc.json: /auth/providers/google/clientSecret: clientSecret must be a reference such as "${secrets.GOOGLE}"'),
        expect.stringContaining('svc.json: /auth/providers/google/issuer: issuer must be an https:// URL'),
        expect.stringContaining('svc.json: /auth/providers/signup: "signup" cannot name a provider'),
        expect.stringMatching(/^svc\.json: \/auth\/providers.*Bad_Name/),
        expect.stringContaining('svc.json: /auth/providers/saml/type:'),
        expect.stringContaining('svc.json: /auth/providers/gh/scopes: unknown key "scopes"'),
        expect.stringContaining('svc.json: /auth/providers/idp: missing required key "issuer"'),
      ]),
    );
  });
});

test('a query\'s "joins": "caller" reaches the manifest; "query" (the default) leaves it out', async () => {
  const query = (joins: string) => ({ name: 'Q', from: 'Order', joins, fields: { customerName: 'customer.name' } });
  const caller = await loadAndValidate(writeApp({ ...shop, 'queries/Q.json': query('caller') }), {});
  expect(caller.manifest.queries.find((q) => q.name === 'Q')).toMatchObject({ joins: 'caller', idType: 'guid' });
  const author = await loadAndValidate(writeApp({ ...shop, 'queries/Q.json': query('query') }), {});
  expect(author.manifest.queries.find((q) => q.name === 'Q')).not.toHaveProperty('joins');
});

describe('an app with many problems', () => {
  test('reports every problem in one DefinitionError', async () => {
    const files: Files = {
      ...shop,
      'svc.json': { name: 'shop', colour: 'blue' },
      'collections/Broken.json': '{\n  "name": "Broken",\n  "properties": {\n}',
      'collections/Product.json': { name: 'Product', properties: { price: { type: 'money' } } },
      'collections/Order.json': {
        name: 'Order',
        properties: {
          ...(shop['collections/Order.json'] as { properties: object }).properties,
          customer: { type: 'lookup', collection: 'Custmer' },
          createdAt: { type: 'date-time' },
        },
        access: [
          { method: 'GET', roleNames: authenticated },
          { method: 'LISTEN', roleNames: ['_CREATOR'] },
        ],
      },
      'views/Customer.json': { name: 'Customer', collection: 'Order', filter: 'paid eq false' },
      'functions/sendMail.json': {
        name: 'sendMail',
        functionTypeId: 1,
        endpoint: '/send',
        requestBody: [{ name: 'payload', type: 'object' }],
        access: { POST: authenticated },
      },
    };
    const err = await loadAndValidate(writeApp(files), {}).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DefinitionError);
    const d = err as DefinitionError;
    expect(d.message).toBe('9 problems in app definitions');
    expect(d.diagnostics.map(formatDiagnostic)).toEqual([
      "collections/Broken.json: not valid JSON at line 4, column 2: Expected ',' or '}' after property value",
      'collections/Order.json: /properties/customer/collection: lookup target "Custmer" is not a collection',
      'collections/Order.json: /properties/createdAt: property "createdAt" uses a system field name (id, createdAt, updatedAt, createdBy are on every row)',
      'collections/Order.json: /access/1/roleNames/0: _CREATOR may not be granted LISTEN: a subscription does not narrow to own rows and would deliver the whole collection stream',
      'collections/Product.json: /properties/price/type: unknown property type "money"; allowed types: string, text, integer, decimal, boolean, date, date-time, guid, lookup, blob',
      'functions/sendMail.json: /endpoint: endpoint must be "/sendMail" (the function is served at /api/sendMail); got "/send"',
      'functions/sendMail.json: /requestBody/0/type: requestBody field "payload" has type "object"; inputs must be scalar (string, text, integer, decimal, boolean, date, date-time, guid)',
      'svc.json: /colour: unknown key "colour"; allowed keys: name, database, port, console, generate, auth, realtime, functions, agent, trustedProxies, allowedHosts, publicUrl, public, cors, jobs, metrics, logs, credits, storage, mail',
      'views/Customer.json: /name: name "Customer" is already used by collections/Customer.json',
    ]);
    expect(d.diagnostics.map((x) => x.code)).toEqual([
      'DEF_INVALID_JSON',
      'DEF_UNKNOWN_COLLECTION',
      'DEF_RESERVED_PROPERTY_NAME',
      'DEF_CREATOR_IN_LISTEN',
      'DEF_UNKNOWN_FIELD_TYPE',
      'DEF_ENDPOINT_MISMATCH',
      'DEF_INPUT_TYPE_NOT_SCALAR',
      'DEF_UNKNOWN_KEY',
      'DEF_DUPLICATE_NAME',
    ]);
    expect(d.diagnostics[0].line).toBe(4);
  });

  test('trustedProxies takes IP addresses and CIDR ranges only, naming each other entry', async () => {
    const files: Files = {
      ...shop,
      'svc.json': { name: 'shop', trustedProxies: ['10.0.0.0/8', '127.0.0.1', 'fd00::/8', '::1', 'proxy.local', '10.0.0.0/33', '1.2.3.4/8/1', ''] },
    };
    const err = (await loadAndValidate(writeApp(files), {}).catch((e: unknown) => e)) as DefinitionError;
    expect(err).toBeInstanceOf(DefinitionError);
    expect(err.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['DEF_INVALID_VALUE', '/trustedProxies/7'],
      ['DEF_TRUSTED_PROXY', '/trustedProxies/4'],
      ['DEF_TRUSTED_PROXY', '/trustedProxies/5'],
      ['DEF_TRUSTED_PROXY', '/trustedProxies/6'],
    ]);
    expect(formatDiagnostic(err.diagnostics[1])).toBe(
      'svc.json: /trustedProxies/4: "proxy.local" is not an IP address or a CIDR range such as "10.0.0.0/8" or "fd00::/8"',
    );
  });

  test('cors.origins takes exact origins (or "*" without credentials); credentials needs an https publicUrl', async () => {
    const files: Files = {
      ...shop,
      'svc.json': {
        name: 'shop',
        cors: {
          origins: [
            'https://app.example.com',
            'HTTP://LocalHost:5173',
            'https://app.example.com/',
            'app.example.com',
            'https://*.example.com',
            'ftp://x.example',
            '*',
          ],
          credentials: true,
        },
      },
    };
    const err = (await loadAndValidate(writeApp(files), {}).catch((e: unknown) => e)) as DefinitionError;
    expect(err).toBeInstanceOf(DefinitionError);
    expect(err.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['DEF_CORS_ORIGIN', '/cors/origins/2'],
      ['DEF_CORS_ORIGIN', '/cors/origins/3'],
      ['DEF_CORS_ORIGIN', '/cors/origins/4'],
      ['DEF_CORS_ORIGIN', '/cors/origins/5'],
      ['DEF_CORS_CREDENTIALS', '/cors/origins/6'],
      ['DEF_CORS_CREDENTIALS', '/cors/credentials'],
    ]);
    expect(formatDiagnostic(err.diagnostics[0])).toBe(
      'svc.json: /cors/origins/2: "https://app.example.com/" is not an origin: write scheme, host and port only, as a browser sends it in Origin ("https://app.example.com", "http://localhost:5173"; no path, no trailing slash, no wildcard), or "*" alone for any origin',
    );
    expect(formatDiagnostic(err.diagnostics[5])).toMatch(
      /cors\.credentials is true.*set svc\.json "publicUrl" to the app's https:\/\/ origin \(it is absent\)/,
    );
    const ok = await loadAndValidate(
      writeApp({
        ...shop,
        'svc.json': {
          name: 'shop',
          publicUrl: 'https://shop.example',
          cors: { origins: ['https://app.example.com', 'HTTP://LocalHost:5173'], credentials: true },
        },
      }),
      {},
    );
    expect(ok.manifest.settings.cors).toEqual({ origins: ['https://app.example.com', 'http://localhost:5173'], credentials: true, maxAgeSeconds: 600 });
    expect(ok.manifest.settings.publicUrl).toBe('https://shop.example');
    const any = await loadAndValidate(writeApp({ ...shop, 'svc.json': { name: 'shop', cors: { origins: ['*'], maxAgeSeconds: 60 } } }), {});
    expect(any.manifest.settings.cors).toEqual({ origins: ['*'], credentials: false, maxAgeSeconds: 60 });
    const none = await loadAndValidate(writeApp({ ...shop, 'svc.json': { name: 'shop' } }), {});
    expect(none.manifest.settings.cors).toBeUndefined();
  });

  test('publicUrl is an absolute http(s) origin, normalised; anything else is DEF_PUBLIC_URL', async () => {
    for (const publicUrl of [
      'club.example',
      'ftp://club.example',
      'https://club.example/app',
      'https://u:p@club.example',
      'https://club.example/?x=1',
      'https://club.example#top',
    ]) {
      const err = (await loadAndValidate(writeApp({ ...shop, 'svc.json': { name: 'shop', publicUrl } }), {}).catch((e: unknown) => e)) as DefinitionError;
      expect(err, publicUrl).toBeInstanceOf(DefinitionError);
      expect(
        err.diagnostics.map((d) => [d.code, d.path]),
        publicUrl,
      ).toEqual([['DEF_PUBLIC_URL', '/publicUrl']]);
    }
    for (const [publicUrl, want] of [
      ['https://Club.Example/', 'https://club.example'],
      ['https://club.example:443', 'https://club.example'],
      ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ]) {
      const { manifest } = await loadAndValidate(writeApp({ ...shop, 'svc.json': { name: 'shop', publicUrl } }), {});
      expect(manifest.settings.publicUrl).toBe(want);
    }
  });

  test('allowedHosts takes host names and dotted domains (or true / "all"); public.frameAncestors no header separators', async () => {
    const files: Files = {
      ...shop,
      'svc.json': {
        name: 'shop',
        allowedHosts: ['app.example.com', '.example.org', 'LOCAL.Test', '10.0.0.5', 'https://app.example.com', 'app.example.com:8080', '*.example.com', ''],
        public: { frameAncestors: "'self'; script-src *" },
      },
    };
    const err = (await loadAndValidate(writeApp(files), {}).catch((e: unknown) => e)) as DefinitionError;
    expect(err).toBeInstanceOf(DefinitionError);
    expect(err.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['DEF_INVALID_VALUE', '/allowedHosts/7'],
      ['DEF_INVALID_VALUE', '/public/frameAncestors'],
      ['DEF_ALLOWED_HOST', '/allowedHosts/4'],
      ['DEF_ALLOWED_HOST', '/allowedHosts/5'],
      ['DEF_ALLOWED_HOST', '/allowedHosts/6'],
    ]);
    for (const allowedHosts of [true, 'all', ['.example.com']]) {
      const { manifest } = await loadAndValidate(writeApp({ ...shop, 'svc.json': { name: 'shop', allowedHosts, public: { frameAncestors: "'none'" } } }), {});
      expect(manifest.settings.allowedHosts).toEqual(allowedHosts);
      expect(manifest.settings.public).toEqual({ frameAncestors: "'none'" });
    }
  });

  test('filters of the valid definitions are checked in the same run as the schema and reference problems', async () => {
    const files: Files = {
      ...shop,
      'collections/Product.json': { name: 'Product', properties: { title: { type: 'string', maxLength: 'x' } } },
      'collections/OrderLine.json': {
        name: 'OrderLine',
        properties: { ...(shop['collections/OrderLine.json'] as { properties: object }).properties, order: { type: 'lookup', collection: 'Ordr' } },
      },
      'collections/Customer.json': {
        ...(shop['collections/Customer.json'] as object),
        policies: [{ roleNames: authenticated, filter: 'nosuch eq 1' }],
      },
      'views/OpenOrders.json': { name: 'OpenOrders', collection: 'Order', filter: 'paid eq "no"' },
    };
    const err = (await loadAndValidate(writeApp(files), {}, filterProblems).then(
      () => null,
      (e: unknown) => e,
    )) as DefinitionError;
    expect(err).toBeInstanceOf(DefinitionError);
    const lines = err.diagnostics.map(formatDiagnostic);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^collections\/Customer\.json: \/policies\/0\/filter: .*unknown property "nosuch"/);
    expect(lines[1]).toBe('collections/OrderLine.json: /properties/order/collection: lookup target "Ordr" is not a collection');
    expect(lines[2]).toBe('collections/Product.json: /properties/title/maxLength: maxLength must be an integer');
    expect(lines[3]).toMatch(/^views\/OpenOrders\.json: \/filter: /);
    // Without the check, only the definitions' own problems are found.
    const plain = (await loadAndValidate(writeApp(files), {}).catch((e: unknown) => e)) as DefinitionError;
    expect(plain.diagnostics).toHaveLength(2);
  });

  test('validateApp returns the same list without throwing', async () => {
    const raw = await loadApp(writeApp({ ...shop, 'svc.json': { name: 'shop', port: 'x' } }));
    expect(validateApp(raw, {}).map(formatDiagnostic)).toEqual(['svc.json: /port: port must be an integer']);
  });

  test('svc.json console is a boolean (DESIGN §9), written to the manifest', async () => {
    const raw = await loadApp(writeApp({ ...shop, 'svc.json': { name: 'shop', console: 'off' } }));
    expect(validateApp(raw, {}).map(formatDiagnostic)).toEqual(['svc.json: /console: console must be a boolean']);
    const off = await loadApp(writeApp({ ...shop, 'svc.json': { name: 'shop', console: false } }));
    expect(validateApp(off, {})).toEqual([]);
  });

  test('svc.json metrics is false or { port } (docs/operations.md); anything else names the field', async () => {
    for (const metrics of [false, {}, { port: 9464 }]) {
      const ok = await loadApp(writeApp({ ...shop, 'svc.json': { name: 'shop', metrics } }));
      expect(validateApp(ok, {}), JSON.stringify(metrics)).toEqual([]);
    }
    for (const metrics of ['on', true, { port: 0 }, { port: 70000 }, { port: '9464' }, { path: '/m' }]) {
      const bad = await loadApp(writeApp({ ...shop, 'svc.json': { name: 'shop', metrics } }));
      const problems = validateApp(bad, {}).map(formatDiagnostic);
      expect(problems.length, JSON.stringify(metrics)).toBeGreaterThan(0);
      for (const p of problems) expect(p, JSON.stringify(metrics)).toMatch(/^svc\.json: \/metrics/);
    }
  });
});

describe('single problems', () => {
  const col = (properties: object, extra: object = {}): Files => ({ 'collections/Thing.json': { name: 'Thing', properties, ...extra } });
  test.each<[string, { given: Files; env?: NodeJS.ProcessEnv; want: string[] }]>([
    ['empty svc.json', { given: { 'svc.json': '' }, want: ['svc.json: not valid JSON at line 1, column 1: Unexpected end of JSON input'] }],
    [
      'file name differs from name',
      {
        given: { 'collections/Thing.json': { name: 'Thin', properties: {} } },
        want: ['collections/Thing.json: /name: name "Thin" must match the file name: rename the file to collections/Thin.json or the name to "Thing"'],
      },
    ],
    [
      'lookup without collection',
      { given: col({ a: { type: 'lookup' } }), want: ['collections/Thing.json: /properties/a: missing required key "collection"'] },
    ],
    [
      'lookup to a view',
      {
        given: col({ a: { type: 'lookup', collection: 'OpenOrders' } }),
        want: ['collections/Thing.json: /properties/a/collection: lookup target "OpenOrders" is a view, not a collection'],
      },
    ],
    [
      'reserved __ in a property name',
      {
        given: col({ a__b: { type: 'string' } }),
        want: [
          'collections/Thing.json: /properties/a__b: property name "a__b" must start with a letter, contain only letters, digits and _, and not contain __ (reserved for generated relation fields)',
        ],
      },
    ],
    [
      'integer default',
      {
        given: col({ n: { type: 'integer', default: 1.5 } }),
        want: ['collections/Thing.json: /properties/n/default: default 1.5 must be an integer for an integer property'],
      },
    ],
    [
      'date-time default',
      {
        given: col({ t: { type: 'date-time', default: 'yesterday' } }),
        want: [
          'collections/Thing.json: /properties/t/default: default "yesterday" must be "now()" or an ISO date-time with a time zone such as "2024-01-31T10:00:00Z" for a date-time property',
        ],
      },
    ],
    [
      'defaults the database would refuse: NUL, year 0, 36 integer digits',
      {
        given: col({
          s: { type: 'string', default: 'a\u0000' },
          d: { type: 'date-time', default: '0000-01-01T00:00:00Z' },
          n: { type: 'decimal', default: 1e40 },
        }),
        want: [
          'collections/Thing.json: /properties/s/default: default "a\\u0000" must be text without NUL characters (\\u0000)',
          'collections/Thing.json: /properties/d/default: default "0000-01-01T00:00:00Z" must be "now()" or an ISO date-time with a time zone such as "2024-01-31T10:00:00Z" for a date-time property',
          'collections/Thing.json: /properties/n/default: default 1e+40 has more than 35 digits before the point',
        ],
      },
    ],
    [
      'enum default',
      {
        given: col({ s: { type: 'string', enum: ['a'], default: 'b' } }),
        want: ['collections/Thing.json: /properties/s/default: default "b" is not one of the enum values: a'],
      },
    ],
    [
      'maxLength on an integer',
      {
        given: col({ n: { type: 'integer', maxLength: 3 } }),
        want: ['collections/Thing.json: /properties/n/maxLength: maxLength applies to string and text properties, not integer'],
      },
    ],
    [
      'unique on a text property',
      {
        given: col({ body: { type: 'text', unique: true } }),
        want: ['collections/Thing.json: /properties/body/unique: unique applies to string and integer and date and guid and lookup properties, not text'],
      },
    ],
    [
      'unknown access method',
      {
        given: col({}, { access: [{ method: 'GOT', roleNames: ['x'] }] }),
        want: ['collections/Thing.json: /access/0/method: method must be one of: GET, POST, PUT, PATCH, DELETE, LISTEN (got "GOT")'],
      },
    ],
    [
      'view of a missing collection',
      {
        given: { 'views/V.json': { name: 'V', collection: 'Nope', filter: 'a eq 1' } },
        want: ['views/V.json: /collection: base collection "Nope" is not a collection'],
      },
    ],
    [
      'query from a missing collection',
      { given: { 'queries/Q.json': { name: 'Q', from: 'Nope', fields: { a: 'a' } } }, want: ['queries/Q.json: /from: from "Nope" is not a collection'] },
    ],
    [
      'query path through a non-lookup',
      {
        given: { 'queries/Q.json': { name: 'Q', from: 'Order', fields: { a: 'total.x', b: 'nope' } } },
        want: [
          'queries/Q.json: /fields/a: path "total.x": "total" of Order is not a lookup, so the path cannot continue past it',
          'queries/Q.json: /fields/b: path "nope": "nope" is not a property of Order',
        ],
      },
    ],
    [
      'query field not grouped',
      {
        given: { 'queries/Q.json': { name: 'Q', from: 'Order', groupBy: ['customer'], fields: { n: 'number', s: { sum: 'number' } } } },
        want: [
          'queries/Q.json: /fields/n: field "n" (path "number") must be a groupBy path, reached through one, or an aggregate (count, sum, avg, min, max)',
          'queries/Q.json: /fields/s/sum: sum needs an integer or decimal path; "number" is string',
        ],
      },
    ],
    [
      'query with an unknown joins mode',
      {
        given: { 'queries/Q.json': { name: 'Q', from: 'Order', joins: 'everyone', fields: { t: 'total' } } },
        want: ['queries/Q.json: /joins: joins must be one of: query, caller (got "everyone")'],
      },
    ],
    [
      'query field with two aggregates',
      {
        given: { 'queries/Q.json': { name: 'Q', from: 'Order', fields: { x: { sum: 'total', max: 'total' } } } },
        want: ['queries/Q.json: /fields/x: x must have exactly one key, one of: count, sum, avg, min, max'],
      },
    ],
    [
      'function without code',
      {
        given: { 'functions/f.json': { name: 'f', functionTypeId: 2, endpoint: '/f' } },
        want: ['functions/f.json: no code file for this function: add functions/f.ts (or .tsx, .js, .mjs, .cjs)'],
      },
    ],
    [
      'function with a blob input',
      {
        given: {
          'functions/f.json': { name: 'f', functionTypeId: 2, endpoint: '/f', queryParams: [{ name: 'file', type: 'blob' }] },
          'functions/f.ts': 'export default () => 1;',
        },
        want: [
          'functions/f.json: /queryParams/0/type: queryParams field "file" has type "blob"; inputs must be scalar (string, text, integer, decimal, boolean, date, date-time, guid)',
        ],
      },
    ],
    [
      "function access written as a collection's list of rules",
      {
        given: {
          'functions/f.json': { name: 'f', functionTypeId: 1, endpoint: '/f', access: [{ method: 'GET', roleNames: ['_ANONYMOUS_USER'] }] },
          'functions/f.ts': 'export default () => 1;',
        },
        want: [
          'functions/f.json: /access: access must be an object mapping each method to the roles that may call it, e.g. { "GET": ["_AUTHENTICATED_USER"], "POST": ["admin"] } (a collection\'s list of rules does not apply to functions)',
        ],
      },
    ],
    [
      'function endpoint other than /<name>',
      {
        given: { 'functions/f.json': { name: 'f', functionTypeId: 1, endpoint: '/api/f' }, 'functions/f.ts': 'export default () => 1;' },
        want: ['functions/f.json: /endpoint: endpoint must be "/f" (the function is served at /api/f); got "/api/f"'],
      },
    ],
    [
      'function enum values of the wrong type, a field declared twice',
      {
        given: {
          'functions/f.json': {
            name: 'f',
            functionTypeId: 2,
            endpoint: '/f',
            requestBody: [
              { name: 'n', type: 'integer', spec: { enum: [1, '2'] } },
              { name: 'n', type: 'string' },
            ],
          },
          'functions/f.ts': 'export default () => 1;',
        },
        want: [
          'functions/f.json: /requestBody/0/spec/enum: requestBody field "n": every enum value must be of type integer',
          'functions/f.json: /requestBody/1/name: requestBody declares "n" twice',
        ],
      },
    ],
    [
      'function code with a syntax error',
      {
        given: { 'functions/f.json': { name: 'f', functionTypeId: 2, endpoint: '/f' }, 'functions/f.ts': 'export default (ctx => 1;\n' },
        want: ["functions/f.ts: syntax error at line 1, column 25: ')' expected."],
      },
    ],
    [
      'function code without a definition',
      {
        given: { 'functions/orphan.ts': 'export default () => 1;' },
        want: ['functions/orphan.ts: code without a definition: add functions/orphan.json, or move a shared module into a subfolder such as functions/lib/'],
      },
    ],
    [
      'external with an unknown connection type',
      {
        given: { 'external/E.json': { name: 'E', url: 'https://x.example', connection: { type: 'basic' } } },
        want: ['external/E.json: /connection/type: connection type must be one of: none, oauth2, apiKey (got "basic")'],
      },
    ],
    [
      'agent and credits settings of the wrong shape',
      {
        given: {
          'svc.json': {
            name: 'shop',
            agent: { rungs: { huge: { provider: 'p', model: 'm', inputPer1k: 1, outputPer1k: 1 } }, mcpServers: { docs: { port: 7070 } } },
            credits: { mode: 'free', monthlyCap: -1 },
          },
        },
        want: [
          'svc.json: /agent/rungs/huge: key "huge" must be equal to one of the allowed values',
          'svc.json: /agent/mcpServers/docs: missing required key "url"',
          'svc.json: /agent/mcpServers/docs/port: unknown key "port"; allowed keys: url, headers, timeoutMs',
          'svc.json: /agent/mcpServers/docs: missing required key "command"',
          'svc.json: /agent/mcpServers/docs/port: unknown key "port"; allowed keys: command, args, env, timeoutMs',
          'svc.json: /credits/mode: mode must be one of: business, self-serve (got "free")',
          'svc.json: /credits/monthlyCap: monthlyCap must be at least 0 (got -1)',
        ],
      },
    ],
    [
      'an agent worker pool size that is not a positive integer',
      {
        given: { 'svc.json': { name: 'shop', agent: { workers: 0 } } },
        want: ['svc.json: /agent/workers: workers must be at least 1 (got 0)'],
      },
    ],
    [
      'log store settings out of range',
      {
        given: { 'svc.json': { name: 'shop', logs: { retentionDays: 0, maxRows: 10, keep: true, clientLog: { eventsPerMinute: 10, maxRows: 10, burst: 1 } } } },
        want: [
          'svc.json: /logs/keep: unknown key "keep"; allowed keys: retentionDays, maxRows, clientLog',
          'svc.json: /logs/retentionDays: retentionDays must be at least 1 (got 0)',
          'svc.json: /logs/maxRows: maxRows must be at least 100 (got 10)',
          'svc.json: /logs/clientLog/burst: unknown key "burst"; allowed keys: requestsPerMinute, eventsPerMinute, charactersPerMinute, retentionDays, maxRows',
          'svc.json: /logs/clientLog/eventsPerMinute: eventsPerMinute must be at least 1000 (got 10)',
          'svc.json: /logs/clientLog/maxRows: maxRows must be at least 100 (got 10)',
        ],
      },
    ],
    [
      'an oauth2 connection with a scope',
      {
        given: {
          'external/E.json': {
            name: 'E',
            url: 'https://x.example',
            connection: { type: 'oauth2', tokenUrl: 'https://x.example/token', clientId: 'c', clientSecret: '${secrets.E}', scope: 'read' },
          },
        },
        want: [],
      },
    ],
    [
      'unsupported DATABASE_URL (never echoed)',
      {
        given: {},
        env: { DATABASE_URL: 'mysql://u:secret@h/db' },
        want: ['svc.json: environment variable DATABASE_URL must start with file: (SQLite), postgres:// or postgresql:// (PostgreSQL); got "mysql:"'],
      },
    ],
    [
      'names differing only in case',
      {
        given: { 'views/order.json': { name: 'order', collection: 'Order', filter: 'paid eq true' } },
        want: ['views/order.json: /name: name "order" differs only in letter case from "Order" in collections/Order.json'],
      },
    ],
    [
      'a collection named like a system model',
      {
        given: { 'collections/svcuser.json': { name: 'svcuser', properties: { a: { type: 'string' } } } },
        want: [
          'collections/svcuser.json: /name: name "svcuser" is reserved for the system model SvcUser (users, service accounts, tokens, keys and the client log); choose another name',
        ],
      },
    ],
  ])('%s', async (_title, { given, env, want }) => {
    expect(await problems({ ...shop, ...given }, env)).toEqual(want);
  });

  test('a missing svc.json is a diagnostic', async () => {
    const files = { ...shop };
    delete files['svc.json'];
    const lines = await problems(files);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc\.json: svc\.json not found: .* is not an app folder/);
  });
});

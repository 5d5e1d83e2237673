/**
 * The OpenAPI document of the `typed` fixture (collections, functions of both types and forms, auth,
 * `_log`): valid OpenAPI 3.1 (swagger-parser), unique operationIds with tags and error responses,
 * declared function inputs enforced with `required`, code types advisory where nothing is declared,
 * declared fields winning, disabled functions left out.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { buildFiles } from '../../../dist/generator/build-files.js';
import { loadAndValidate } from '../../../dist/generator/validate/index.js';
import { ROOT } from '../../support/cli.js';

type Op = {
  operationId: string;
  tags: string[];
  parameters?: { name: string; required?: boolean; schema: Record<string, unknown> }[];
  requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, unknown>;
  security: Record<string, string[]>[];
  'x-svc-alias-of'?: string;
};

const { manifest } = await loadAndValidate(join(ROOT, 'test/fixtures/apps/typed'), {});
const doc = JSON.parse(buildFiles(manifest)['openapi.json']);
const schemas = doc.components.schemas as Record<string, Record<string, unknown>>;
const op = (path: string, method: string): Op => doc.paths[path]?.[method];
const paramNames = (o: Op) => (o.parameters ?? []).map((p) => p.name);
const AUTO = ['filter', 'select', 'sortBy', 'pageNo', 'pageSize', 'count', 'include', 'lastKey'];
const ANONYMOUS = [{ bearerAuth: [] }, { cookieAuth: [] }, {}];

describe('OpenAPI document of an app with functions', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['bearerAuth', 'cookieAuth']);
  });

  it('gives every operation a unique operationId, tags and error responses', () => {
    const ops = Object.values(doc.paths as Record<string, Record<string, Op>>).flatMap((item) =>
      Object.entries(item)
        .filter(([k]) => k !== 'parameters')
        .map(([, o]) => o),
    );
    expect(ops.length).toBeGreaterThan(30);
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
    for (const o of ops) {
      expect(o.tags.length, o.operationId).toBeGreaterThan(0);
      expect(
        Object.keys(o.responses).some((s) => /^[45]\d\d$/.test(s)),
        o.operationId,
      ).toBe(true);
      for (const [status, response] of Object.entries(o.responses)) {
        if (/^[45]/.test(status) && o.operationId !== 'svc_token')
          expect(response, `${o.operationId} ${status}`).toEqual({ $ref: `#/components/responses/Error${status}` });
      }
    }
  });

  it.each([
    ['type 1 at /<name> and /_invoke/<name>, only the methods in access', '/greet', ['get', 'post']],
    ['type 1 with only POST allowed', '/sum', ['post']],
    ['type 2 only at /_invoke/<name>', '/_invoke/stats', ['get', 'delete']],
    ['type 1 alias under /_invoke', '/_invoke/greet', ['get', 'post']],
  ])('%s', (_t, path, methods) => {
    expect(Object.keys(doc.paths[path])).toEqual(methods);
  });

  it('leaves out disabled functions and type 2 functions at /<name>', () => {
    expect(doc.paths['/archived']).toBeUndefined();
    expect(doc.paths['/_invoke/archived']).toBeUndefined();
    expect(doc.paths['/stats']).toBeUndefined();
    expect(op('/_invoke/greet', 'post')['x-svc-alias-of']).toBe('call_greet_post');
  });

  it('declared body fields win and are required; code-only fields are advisory', () => {
    expect(schemas['greet.Body']).toMatchObject({
      properties: { name: { type: 'string', description: 'Who to greet' }, shout: { type: 'boolean' } },
      required: ['name'],
    });
    expect(String(schemas['greet.Body'].description)).toContain('`shout` comes from the code');
    expect(op('/greet', 'post').requestBody).toEqual({
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/greet.Body' } } },
    });
    expect(op('/greet', 'get').requestBody).toBeUndefined();
    expect(schemas['greet.Response']).toMatchObject({
      properties: { greeting: { type: 'string' }, length: { type: 'number' } },
      required: ['greeting', 'length'],
    });
  });

  it('uses code types as they are when nothing is declared, and opaque objects where they do not convert', () => {
    expect(schemas['sum.Body']).toEqual({ type: 'object', properties: { values: { type: 'array', items: { type: 'number' } } }, required: ['values'] });
    expect(op('/sum', 'post').requestBody?.required).toBe(false);
    expect(schemas['sum.Response']).toMatchObject({ properties: { total: { type: 'number' }, count: { type: 'number' } } });
    expect(schemas['opaque.Body']).toEqual({ type: 'object' });
    expect(schemas['opaque.Response']).toEqual({ type: 'object' });
    expect(schemas['ping.Response']).toMatchObject({ properties: { pong: { type: 'boolean' }, meta: { type: 'object' } }, required: ['pong'] });
  });

  it('gives a GET function the declared query parameters, the narrowed code query, then the auto parameters', () => {
    const get = op('/_invoke/stats', 'get');
    expect(paramNames(get)).toEqual(['limit', 'from', ...AUTO]);
    expect(get.parameters?.[0]).toMatchObject({ name: 'limit', required: false, schema: { type: 'integer' } });
    expect(paramNames(op('/ping', 'get'))).toEqual(AUTO);
    expect(paramNames(op('/greet', 'get'))).toEqual(['lang', ...AUTO]);
    expect(paramNames(op('/_invoke/stats', 'delete'))).toEqual(['limit', 'from']);
  });

  it('derives security from access rules', () => {
    expect(op('/greet', 'post').security).toEqual(ANONYMOUS);
    expect(op('/sum', 'post').security).toEqual([{ bearerAuth: [] }, { cookieAuth: [] }]);
    expect(op('/Note', 'get').security).toEqual(ANONYMOUS);
    expect(op('/Comment', 'post').security).toEqual([{ bearerAuth: [] }, { cookieAuth: [] }]);
    expect(op('/_token', 'post').security).toEqual([]);
  });

  it('describes the auth endpoints and _log', () => {
    const token = op('/_token', 'post');
    expect(Object.keys(token.requestBody!.content)).toEqual(['application/x-www-form-urlencoded', 'application/json']);
    expect(token.responses['400']).toMatchObject({ content: { 'application/json': { schema: { $ref: '#/components/schemas/svc.OAuthError' } } } });
    expect(op('/_auth', 'post').requestBody?.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/svc.AuthRequest' });
    for (const [path, method] of [
      ['/_refresh', 'post'],
      ['/_logout', 'post'],
      ['/_me', 'get'],
      ['/_webAppConfig', 'get'],
    ])
      expect(op(path, method), path).toBeDefined();
    expect(op('/_log', 'post').requestBody?.content['application/json'].schema).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/svc.ClientLogEvent' },
    });
    expect(schemas['svc.ClientLogEvent']).toMatchObject({ required: ['message'], properties: { severity: { type: 'integer', default: 3 } } });
    expect(doc.paths['/login']).toBeUndefined();
  });
});

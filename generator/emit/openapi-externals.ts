/**
 * @module The OpenAPI paths of external collections (SPEC §4.10): `GET /{name}` and `GET /{name}/{id}`,
 * forwarded to the provider with the query string; the answer is the provider's JSON, whose shape
 * svc does not know (an open schema). No other operation exists (405).
 */
import type { OpenApiBuilder, SchemaObject } from 'openapi3-ts/oas31';
import type { AppManifest } from '../../runtime/index.js';
import { errorResponses as errors, json, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

const ANY_JSON: SchemaObject = { description: "The provider's JSON answer, as it sent it" };

/** Adds the paths and tag of every external collection (a `PATH_BUILDERS` entry). */
export function externalsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  for (const e of manifest.externals) {
    const n = e.name;
    const ext: SvcOperationExtensions = { 'x-svc-resource': n };
    const security = securityFor(e.access.find((r) => r.method === 'GET')?.roleNames);
    const note = 'Forwarded to the external provider with the query string; responses are not cached.';
    builder.addTag({ name: n, description: e.description ?? `External collection served by ${new URL(e.url).host}` });
    builder.addPath(`/${n}`, {
      get: {
        operationId: `list${n}`,
        tags: [n],
        summary: `List ${n} (external collection)`,
        description: `${note} Query parameters are passed through as they are.`,
        security,
        ...ext,
        responses: { 200: { description: "The provider's answer", content: json(ANY_JSON) }, ...errors(400, 401, 403, 502, 504) },
      },
    });
    builder.addPath(`/${n}/{id}`, {
      parameters: [{ name: 'id', in: 'path', required: true, description: `The ${n} item's id at the provider`, schema: { type: 'string' } }],
      get: {
        operationId: `get${n}`,
        tags: [n],
        summary: `Read one ${n} item (external collection)`,
        description: note,
        security,
        ...ext,
        responses: { 200: { description: "The provider's answer", content: json(ANY_JSON) }, ...errors(400, 401, 403, 404, 502, 504) },
      },
    });
  }
}

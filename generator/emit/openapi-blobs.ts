/**
 * @module The OpenAPI operations of blob properties (SPEC §4.5, issue "blobs"): for each blob
 * property of a collection, `/{Collection}/{id}/{field}` with a multipart upload (`post`), a binary
 * download with thumbnails and ranges (`get`), and `delete`. They are left out of the agent's tools
 * (`x-svc-agent: false`): a model cannot send or read bytes through a JSON tool call.
 */
import type { OpenApiBuilder, OperationObject, ParameterObject } from 'openapi3-ts/oas31';
import type { AppManifest, Collection } from '../../runtime/index.js';
import { BLOB_METADATA_SCHEMA } from '../../runtime/contract/index.js';
import { errorResponses, ID_PARAMETER, json, ref, securityFor, type SvcOperationExtensions } from './openapi-shared.js';

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function thumbParameter(sizes: readonly string[]): ParameterObject {
  return {
    name: 'thumb',
    in: 'query',
    required: false,
    description: `A thumbnail of an image instead of the file: WxH crops to fill, WxHf fits inside. Allowed: ${sizes.map((s) => `${s}, ${s}f`).join(', ') || 'none'}`,
    schema: { type: 'string', enum: sizes.flatMap((s) => [s, `${s}f`]) },
  };
}

const BINARY = { 'application/octet-stream': { schema: { type: 'string' as const, format: 'binary' } } };

function blobPaths(builder: OpenApiBuilder, c: Collection, field: string, sizes: readonly string[]): void {
  const roles = (method: string) => c.access.find((r) => r.method === method)?.roleNames;
  const ext: SvcOperationExtensions = { 'x-svc-resource': c.name, 'x-svc-agent': false };
  const op = (method: string, o: OperationObject): OperationObject => ({ tags: [c.name], ...o, security: securityFor(roles(method)), ...ext });
  const name = `${c.name}${pascal(field)}`;
  builder.addPath(`/${c.name}/{id}/${field}`, {
    parameters: [ID_PARAMETER],
    post: op('PATCH', {
      operationId: `upload${name}`,
      summary: `Upload the ${field} file of a ${c.name} row (replaces the previous one)`,
      description:
        `One file part named "file" (multipart/form-data), streamed to storage; needs the PATCH rule. ` +
        `For large files, the tus 1.0 resumable protocol is served at /${c.name}/{id}/${field}/tus.`,
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: { type: 'object', properties: { file: { type: 'string', format: 'binary', description: 'The file' } }, required: ['file'] },
          },
        },
      },
      responses: { 200: { description: 'The stored file', content: json(ref('BlobMetadata')) }, ...errorResponses(400, 401, 403, 404, 413, 415) },
    }),
    get: op('GET', {
      operationId: `download${name}`,
      summary: `Download the ${field} file of a ${c.name} row`,
      description:
        'Answers with the stored content type, ETag, Last-Modified and Accept-Ranges; If-None-Match/If-Modified-Since give 304, Range gives 206. ' +
        'The signed metadata url (v, exp, sig) is served without cookie or bearer (an <img src> works); an altered or expired signature answers 403 ' +
        'BLOB_SIGNATURE_INVALID or BLOB_URL_EXPIRED.',
      parameters: [
        thumbParameter(sizes),
        {
          name: 'v',
          in: 'query',
          required: false,
          description: 'The version from the metadata url: naming the current one makes the answer cacheable for good',
          schema: { type: 'string' },
        },
        {
          name: 'exp',
          in: 'query',
          required: false,
          description: 'From the signed metadata url: when its signature expires (unix seconds). With exp and sig, no credentials are needed',
          schema: { type: 'string' },
        },
        {
          name: 'sig',
          in: 'query',
          required: false,
          description: 'From the signed metadata url: HMAC-SHA256 (base64url) of the path, v and exp; altered or expired answers 403',
          schema: { type: 'string' },
        },
        { name: 'Range', in: 'header', required: false, description: 'One byte range, e.g. bytes=0-1023', schema: { type: 'string' } },
      ],
      responses: {
        200: { description: 'The file (its stored content type)', content: BINARY },
        206: { description: 'The requested byte range', content: BINARY },
        304: { description: 'The copy the client has is current' },
        ...errorResponses(400, 401, 403, 404, 416),
      },
    }),
    delete: op('PATCH', {
      operationId: `deleteFile${name}`,
      summary: `Remove the ${field} file of a ${c.name} row`,
      responses: { 204: { description: 'Removed' }, ...errorResponses(401, 403, 404) },
    }),
  });
}

/** The `BlobMetadata` schema and the blob operations of every collection that has blob properties (a `PATH_BUILDERS` entry). */
export function blobsOpenApi(builder: OpenApiBuilder, manifest: AppManifest): void {
  const withBlobs = manifest.collections.filter((c) => c.properties.some((p) => p.type === 'blob'));
  if (withBlobs.length === 0) return;
  builder.addSchema('BlobMetadata', structuredClone(BLOB_METADATA_SCHEMA));
  const sizes = manifest.settings.storage?.thumbnails ?? [];
  for (const c of withBlobs) for (const p of c.properties) if (p.type === 'blob') blobPaths(builder, c, p.name, sizes);
}

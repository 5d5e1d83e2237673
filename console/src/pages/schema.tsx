/**
 * Schema & API: each definition (its manifest entry from `/api/_admin/schema`, or for a resource the
 * manifest has not, the properties read from openapi.json) and, per endpoint of that resource in openapi.json, a
 * ready-to-copy curl call and the matching call of the generated `client.ts`.
 */
import type { JsonSchema, Model, Resource } from '../model';
import { deref } from '../model';
import { href } from '../router';
import { Json, Table } from '../ui';

const GROUP: Record<string, string> = { collection: 'collections', view: 'views', query: 'queries' };

function sample(doc: JsonSchema, schema: JsonSchema | undefined): Record<string, unknown> {
  const s = deref(doc, schema);
  const out: Record<string, unknown> = {};
  for (const name of s?.required ?? Object.keys(s?.properties ?? {}).slice(0, 3)) {
    const p = deref(doc, s?.properties?.[name]) ?? {};
    const t = Array.isArray(p.type) ? p.type.find((x: string) => x !== 'null') : p.type;
    out[name] =
      p.enum?.[0] ??
      (t === 'integer' || t === 'number'
        ? 1
        : t === 'boolean'
          ? true
          : t === 'object'
            ? { id: '<id>' }
            : p.format === 'date'
              ? '2026-01-31'
              : p.format === 'uuid'
                ? '<id>'
                : 'text');
  }
  return out;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The client.ts call of one operation, or undefined when client.ts has none (external collections, auth). */
function clientCall(resource: Resource | undefined, fnName: string | undefined, method: string, path: string, body: string): string | undefined {
  if (fnName) return `await api.functions.${fnName}.${method.toLowerCase()}(${method === 'GET' || method === 'DELETE' ? '{ /* query */ }' : body})`;
  if (!resource || !GROUP[resource.kind]) return undefined;
  const base = `api.${GROUP[resource.kind]}.${resource.name}`;
  const blob = path.match(/\/\{id\}\/([^/]+)$/)?.[1];
  const one = path.endsWith('{id}');
  if (blob)
    return method === 'POST'
      ? `await ${base}.upload(id, '${blob}', file)`
      : method === 'GET'
        ? `await ${base}.download(id, '${blob}')`
        : `await ${base}.deleteFile(id, '${blob}')`;
  if (method === 'GET') return one ? `await ${base}.get(id)` : `const { data } = await ${base}.list({ pageSize: 10 })`;
  if (method === 'POST') return `await ${base}.create(${body})`;
  if (method === 'PUT') return `await ${base}.update(id, ${body})`;
  if (method === 'PATCH') return `await ${base}.patch(id, ${body})`;
  if (method === 'DELETE') return one ? `await ${base}.delete(id)` : `await ${base}.deleteMany([id])`;
  return undefined;
}

function ApiPreview({ model, name, resource, isFunction }: { model: Model; name: string; resource?: Resource; isFunction: boolean }) {
  const doc = model.openapi;
  const origin = location.origin;
  const ops = Object.entries<JsonSchema>(doc.paths ?? {}).flatMap(([path, item]) =>
    ['get', 'post', 'put', 'patch', 'delete']
      .filter((m) => item[m] && item[m]['x-svc-resource'] === name && !item[m]['x-svc-alias-of'])
      .map((m) => ({ path, method: m.toUpperCase(), op: item[m] as JsonSchema })),
  );
  return (
    <section id="api-preview">
      <h3>API preview</h3>
      {ops.map(({ path, method, op }) => {
        const bodySchema = op.requestBody?.content?.['application/json']?.schema;
        const body = bodySchema ? JSON.stringify(sample(doc, bodySchema)) : '';
        const url = `${origin}/api${path.replace('{id}', '$ID')}`;
        const multipart = op.requestBody?.content?.['multipart/form-data'];
        const curl = [
          `curl -X ${method} "${url}"`,
          `-H "authorization: Bearer $TOKEN"`,
          ...(body ? [`-H 'content-type: application/json'`, `-d ${shellQuote(body)}`] : []),
          ...(multipart ? [`-F "file=@photo.jpg"`] : []),
        ].join(' \\\n  ');
        const client = clientCall(resource, isFunction ? name : undefined, method, path, body || '{}');
        return (
          <div class="endpoint" data-endpoint={`${method} ${path}`}>
            <h4>
              <code>
                {method} /api{path}
              </code>{' '}
              <small class="muted">{op.summary}</small>
            </h4>
            <pre class="code" data-curl>
              {curl}
            </pre>
            {client && (
              <pre class="code" data-client>
                {client}
              </pre>
            )}
          </div>
        );
      })}
    </section>
  );
}

export function SchemaPage({ model, route }: { model: Model; route: string[] }) {
  const name = route[0];
  const resource = model.resources.find((r) => r.name === name);
  const fn = model.functions.find((f) => f.name === name);
  return (
    <div class="split">
      <aside class="sidebar">
        {(['collection', 'view', 'query', 'external'] as const).map((kind) => (
          <section>
            <h3>{kind}</h3>
            {model.resources
              .filter((r) => r.kind === kind)
              .map((r) => (
                <a href={href('schema', r.name)} class={r.name === name ? 'active' : ''}>
                  {r.name}
                </a>
              ))}
          </section>
        ))}
        <section>
          <h3>function</h3>
          {model.functions.map((f) => (
            <a href={href('schema', f.name)} class={f.name === name ? 'active' : ''}>
              {f.name}
            </a>
          ))}
        </section>
      </aside>
      <div class="page" id="schema-page">
        {!resource && !fn && <p class="muted">Choose a definition.</p>}
        {resource && (
          <>
            <h2>
              {resource.name} <small class="muted">{resource.kind}</small>
            </h2>
            <p>{resource.description}</p>
            <Table
              rows={resource.props.map((p) => ({
                property: p.name,
                type: p.type,
                required: p.required,
                target: p.target ?? '',
                description: p.description ?? '',
              }))}
            />
            {resource.definition !== undefined && (
              <details open>
                <summary>Definition</summary>
                <Json value={resource.definition} />
              </details>
            )}
            <ApiPreview model={model} name={resource.name} resource={resource} isFunction={false} />
          </>
        )}
        {fn && (
          <>
            <h2>
              {fn.name} <small class="muted">function</small>
            </h2>
            <p>{fn.description}</p>
            {fn.definition !== undefined && <Json value={fn.definition} />}
            {fn.operations.map((o) => o.body && <Json value={o.body} />)}
            <ApiPreview model={model} name={fn.name} isFunction={true} />
          </>
        )}
      </div>
    </div>
  );
}

/**
 * Functions: the app's functions (from openapi.json); running one with a form generated from its
 * input schema (query parameters and JSON body fields), showing the answer, its status and duration,
 * and, when the server keeps logs (`/api/_admin/logs`), the function's output lines of that call.
 */
import { useState } from 'preact/hooks';
import { call, qs, type Answer } from '../api';
import type { JsonSchema, Model, Operation } from '../model';
import { href } from '../router';
import { Json, Table } from '../ui';

function coerce(schema: JsonSchema, text: string): unknown {
  const t = Array.isArray(schema.type) ? schema.type.find((x: string) => x !== 'null') : schema.type;
  if (t === 'integer' || t === 'number') return Number.isFinite(Number(text)) && text.trim() !== '' ? Number(text) : text;
  if (t === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  if (t === 'object' || t === 'array') {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function Field({
  name,
  schema,
  required,
  value,
  onInput,
}: {
  name: string;
  schema: JsonSchema;
  required: boolean;
  value: string;
  onInput: (v: string) => void;
}) {
  const t = Array.isArray(schema.type) ? schema.type.find((x: string) => x !== 'null') : schema.type;
  return (
    <label class="field">
      <span>
        {name}
        {required ? ' *' : ''} <small class="muted">{[t, schema.format].filter(Boolean).join(' ')}</small>
      </span>
      {schema.enum || t === 'boolean' ? (
        <select data-arg={name} value={value} onChange={(e) => onInput(e.currentTarget.value)}>
          <option value="">—</option>
          {(schema.enum ?? ['true', 'false'])
            .filter((v: unknown) => v !== null)
            .map((v: unknown) => (
              <option value={String(v)}>{String(v)}</option>
            ))}
        </select>
      ) : (
        <input data-arg={name} value={value} onInput={(e) => onInput(e.currentTarget.value)} placeholder={schema.description ?? ''} />
      )}
    </label>
  );
}

function RunForm({ op }: { op: Operation }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [raw, setRaw] = useState('{}');
  const [answer, setAnswer] = useState<Answer<unknown>>();
  const [lines, setLines] = useState<Record<string, unknown>[]>();
  const bodyProps = Object.entries<JsonSchema>(op.body?.properties ?? {});
  const required = new Set<string>(op.body?.required ?? []);
  const ownParams = op.params.filter((p) => !/passed to the function/.test(p.description ?? ''));
  const run = async (e: Event) => {
    e.preventDefault();
    const query = Object.fromEntries(ownParams.filter((p) => values[`q.${p.name}`]).map((p) => [p.name, values[`q.${p.name}`]]));
    let body: unknown;
    if (op.method !== 'GET' && op.method !== 'DELETE') {
      if (bodyProps.length)
        body = Object.fromEntries(
          bodyProps.filter(([n]) => values[`b.${n}`] !== undefined && values[`b.${n}`] !== '').map(([n, s]) => [n, coerce(s, values[`b.${n}`])]),
        );
      else
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
    }
    setLines(undefined);
    const a = await call(op.method, `${op.path}${qs(query)}`, body);
    setAnswer(a);
    const reqId = a.headers.get('x-request-id');
    // Log entries reach the store up to about 1 s late: ask a few times until the call's lines are there.
    for (let i = 0; reqId && i < 8; i++) {
      await new Promise((ok) => setTimeout(ok, 500));
      const logs = await call<{ data?: unknown[] }>('GET', `/_admin/logs${qs({ reqId, kind: 'function' })}`);
      if (logs.status !== 200) break;
      const found = (logs.body.data ?? []) as Record<string, unknown>[];
      setLines(found);
      if (found.length > 0) break;
    }
  };
  return (
    <form class="run-form" id="run-form" onSubmit={run}>
      {ownParams.map((p) => (
        <Field
          name={p.name}
          schema={p.schema}
          required={p.required}
          value={values[`q.${p.name}`] ?? ''}
          onInput={(v) => setValues({ ...values, [`q.${p.name}`]: v })}
        />
      ))}
      {bodyProps.map(([n, s]) => (
        <Field name={n} schema={s} required={required.has(n)} value={values[`b.${n}`] ?? ''} onInput={(v) => setValues({ ...values, [`b.${n}`]: v })} />
      ))}
      {op.method !== 'GET' && op.method !== 'DELETE' && bodyProps.length === 0 && (
        <label class="field">
          <span>JSON body</span>
          <textarea id="raw-body" rows={4} value={raw} onInput={(e) => setRaw(e.currentTarget.value)} />
        </label>
      )}
      <button type="submit" id="run">
        Run {op.method} {op.path}
      </button>
      {answer && (
        <div class="answer" id="run-answer">
          <p>
            Status <strong id="run-status">{answer.status}</strong> in <span id="run-ms">{answer.ms}</span> ms
            {answer.headers.get('x-request-id') ? ` — request ${answer.headers.get('x-request-id')}` : ''}
          </p>
          <Json value={answer.body} id="run-body" />
          {lines !== undefined && (
            <>
              <h4>Log lines of this call</h4>
              {lines.length === 0 ? (
                <p class="muted" id="run-lines">
                  none
                </p>
              ) : (
                <Table id="run-lines" rows={lines} columns={['time', 'severity', 'source', 'message']} />
              )}
            </>
          )}
        </div>
      )}
    </form>
  );
}

export function FunctionsPage({ model, route }: { model: Model; route: string[] }) {
  const fn = model.functions.find((f) => f.name === route[0]);
  const [method, setMethod] = useState<string>();
  const op = fn?.operations.find((o) => o.method === method) ?? fn?.operations[0];
  return (
    <div class="split">
      <aside class="sidebar">
        <section>
          <h3>Functions</h3>
          {model.functions.map((f) => (
            <a href={href('functions', f.name)} class={f.name === fn?.name ? 'active' : ''} data-function={f.name}>
              {f.name}
            </a>
          ))}
        </section>
      </aside>
      <div class="page">
        {!fn && <p class="muted">{model.functions.length ? 'Choose a function.' : 'This app has no functions.'}</p>}
        {fn && op && (
          <>
            <h2>{fn.name}</h2>
            <p class="muted">{fn.description}</p>
            <div class="tabs">
              {fn.operations.map((o) => (
                <button type="button" aria-selected={o === op} onClick={() => setMethod(o.method)} data-method={o.method}>
                  {o.method}
                </button>
              ))}
            </div>
            <RunForm key={`${fn.name} ${op.method}`} op={op} />
          </>
        )}
      </div>
    </div>
  );
}

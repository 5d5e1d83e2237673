/**
 * The row panel: every property of one row with its type (lookups link to their rows, blobs show a
 * thumbnail with download, upload and delete), its child rows (`include`), and the create and edit
 * forms. Edit sends a PATCH of the changed fields only; the server's validation errors are shown at
 * each field (DESIGN §4 `details[].path`).
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, messageOf, qs } from '../api';
import { labelOf, thumbSize, type Model, type Prop, type Resource } from '../model';
import { go, href } from '../router';
import { plural } from '../ui';
import { IdentityName } from '../identity-name';
import { editable, FieldInput, fromInput, toInput } from './fields';
import type { Row } from './loader';

interface Props {
  model: Model;
  resource: Resource;
  rowId: string;
  onChanged: () => void;
  onClose: () => void;
}

const rowPath = (r: Resource, id: string) => `/${encodeURIComponent(r.name)}/${encodeURIComponent(id)}`;

export function RowPanel({ model, resource, rowId, onChanged, onClose }: Props) {
  const creating = rowId === 'new';
  const [row, setRow] = useState<Row>();
  const [loadError, setLoadError] = useState('');
  const [editing, setEditing] = useState(creating);
  const [generation, setGeneration] = useState(0);
  const children = resource.kind === 'collection' ? resource.children : [];
  useEffect(() => {
    if (creating) return;
    const include = children.map((c) => c.key).join(',');
    api<Row>('GET', `${rowPath(resource, rowId)}${qs({ include })}`).then(setRow, (err) => setLoadError(messageOf(err)));
  }, [rowId, generation]);
  const refresh = () => {
    setGeneration(generation + 1);
    onChanged();
  };
  return (
    <section class="panel" id="row-panel" aria-label="Row">
      <div class="panel-head">
        <strong>{creating ? `New ${resource.name}` : `${resource.name} ${rowId}`}</strong>
        <button type="button" onClick={onClose} aria-label="Close" id="panel-close">
          ×
        </button>
      </div>
      {loadError && <p class="error">{loadError}</p>}
      {editing ? (
        <RowForm
          resource={resource}
          row={creating ? undefined : row}
          onDone={(id) => {
            setEditing(false);
            if (creating && id) go('data', resource.name, id);
            else refresh();
          }}
          onCancel={() => (creating ? onClose() : setEditing(false))}
          onSaved={onChanged}
        />
      ) : (
        row && (
          <>
            <RowView resource={resource} row={row} onChanged={refresh} />
            {children.map((c) => (
              <ChildRows model={model} childKey={c.key} collection={c.collection} rows={row[c.key]} />
            ))}
            {resource.writable && <RowActions resource={resource} rowId={rowId} onEdit={() => setEditing(true)} onDeleted={() => (onChanged(), onClose())} />}
          </>
        )
      )}
    </section>
  );
}

function RowActions({ resource, rowId, onEdit, onDeleted }: { resource: Resource; rowId: string; onEdit: () => void; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  const remove = async () => {
    try {
      await api('DELETE', rowPath(resource, rowId));
      onDeleted();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <div class="actions">
      <button type="button" id="edit-row" onClick={onEdit}>
        Edit
      </button>
      {confirming ? (
        <>
          <button type="button" class="danger" id="delete-confirm" onClick={remove}>
            Really delete
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </>
      ) : (
        <button type="button" class="danger" id="delete-row" onClick={() => setConfirming(true)}>
          Delete
        </button>
      )}
      {error && <p class="error">{error}</p>}
    </div>
  );
}

function Value({ prop, value }: { prop: Prop; value: unknown }) {
  if (value === null || value === undefined) return <span class="muted">null</span>;
  if (prop.name === 'createdBy' && typeof value === 'string') return <IdentityName id={value} />;
  if (prop.type === 'lookup' && typeof value === 'object') {
    const id = String((value as { id?: unknown }).id ?? '');
    return prop.target ? (
      <a href={href('data', prop.target, id)} class="lookup">
        {labelOf(value)}
      </a>
    ) : (
      <span>{labelOf(value)}</span>
    );
  }
  return <span>{typeof value === 'object' ? JSON.stringify(value, null, 1) : String(value)}</span>;
}

function RowView({ resource, row, onChanged }: { resource: Resource; row: Row; onChanged: () => void }) {
  const known = new Set(resource.props.map((p) => p.name));
  const extra = Object.keys(row)
    .filter((k) => !known.has(k) && !k.includes('.'))
    .map((name): Prop => ({ name, type: 'json', required: false, readOnly: true }));
  return (
    <dl class="props" id="row-props">
      {[...resource.props, ...extra].map((p) => (
        <div class="prop" data-prop={p.name}>
          <dt>
            {p.name} <small class="muted">{p.type === 'lookup' && p.target ? `lookup → ${p.target}` : p.type}</small>
          </dt>
          <dd>
            {p.type === 'blob' ? (
              <BlobField resource={resource} rowId={String(row.id)} prop={p} value={row[p.name]} onChanged={onChanged} />
            ) : (
              <Value prop={p} value={row[p.name]} />
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

interface BlobMeta {
  name: string;
  size: number;
  contentType: string;
  url: string;
}

function BlobField({ resource, rowId, prop, value, onChanged }: { resource: Resource; rowId: string; prop: Prop; value: unknown; onChanged: () => void }) {
  const meta = value as BlobMeta | null;
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const path = `${rowPath(resource, rowId)}/${encodeURIComponent(prop.name)}`;
  const upload = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    const form = new FormData();
    form.append('file', file);
    setBusy(true);
    try {
      await api('POST', path, form);
      setError('');
      onChanged();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    try {
      await api('DELETE', path);
      onChanged();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  // A signed url (`?v=&exp=&sig=`) takes `&thumb=` too: the signature covers the file, not the size.
  const withThumb = (url: string) => `${url}${url.includes('?') ? '&' : '?'}thumb=${thumbSize}`;
  return (
    <div class="blob" data-blob={prop.name}>
      {meta && typeof meta === 'object' && (
        <>
          {meta.contentType.startsWith('image/') && <img class="thumb" src={withThumb(meta.url)} alt={meta.name} />}
          <a href={meta.url} download={meta.name} class="download">
            {meta.name}
          </a>{' '}
          <small class="muted">
            {meta.contentType}, {plural(meta.size, 'byte')}
          </small>{' '}
          {resource.writable && (
            <button type="button" class="danger small" onClick={remove}>
              Delete file
            </button>
          )}
        </>
      )}
      {resource.writable && (
        <label class="upload">
          {meta ? 'Replace' : 'Upload'}: <input type="file" disabled={busy} data-upload={prop.name} onChange={(e) => upload(e.currentTarget)} />
        </label>
      )}
      {error && <p class="error">{error}</p>}
    </div>
  );
}

function ChildRows({ model, childKey, collection, rows }: { model: Model; childKey: string; collection: string; rows: unknown }) {
  const list = Array.isArray(rows) ? (rows as Row[]) : [];
  const child = model.resources.find((r) => r.name === collection);
  const label = (r: Row) => {
    const first = child?.props.find((p) => p.type === 'string' && !p.readOnly);
    return first && r[first.name] !== undefined ? String(r[first.name]) : String(r.id);
  };
  return (
    <section class="children" data-children={childKey}>
      <h4>
        {childKey} <small class="muted">{plural(list.length, 'row')}</small>
      </h4>
      <ul>
        {list.map((r) => (
          <li>
            <a href={href('data', collection, String(r.id))}>{label(r)}</a>
          </li>
        ))}
      </ul>
    </section>
  );
}

function RowForm({
  resource,
  row,
  onDone,
  onCancel,
  onSaved,
}: {
  resource: Resource;
  row?: Row;
  onDone: (id?: string) => void;
  onCancel: () => void;
  onSaved: () => void;
}) {
  const props = resource.props.filter(editable);
  const initial = Object.fromEntries(props.map((p) => [p.name, row ? toInput(p, row[p.name]) : '']));
  const [values, setValues] = useState<Record<string, string>>(initial);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState('');
  const save = async (e: Event) => {
    e.preventDefault();
    const changed = props.filter((p) => values[p.name] !== initial[p.name]);
    const body = Object.fromEntries(changed.map((p) => [p.name, fromInput(p, values[p.name])]));
    try {
      if (row) {
        if (changed.length > 0) await api('PATCH', rowPath(resource, String(row.id)), body);
        onSaved();
        onDone();
      } else {
        const created = await api<{ data: string[] }>('POST', `/${encodeURIComponent(resource.name)}`, body);
        onSaved();
        onDone(created.data?.[0]);
      }
    } catch (err) {
      const fields = err instanceof ApiError ? err.fieldErrors() : {};
      setErrors(fields);
      const unplaced =
        err instanceof ApiError ? err.details.filter((d) => !props.some((p) => fields[p.name] && (d.path ?? '').replace(/^\//, '').startsWith(p.name))) : [];
      setFormError(Object.keys(fields).length === 0 || unplaced.length > 0 ? messageOf(err) : '');
    }
  };
  return (
    <form class="row-form" id="row-form" onSubmit={save}>
      {props.map((p) => (
        <FieldInput prop={p} value={values[p.name]} error={errors[p.name]} onInput={(v) => setValues({ ...values, [p.name]: v })} />
      ))}
      {formError && (
        <p class="error" id="form-error" role="alert">
          {formError}
        </p>
      )}
      <div class="actions">
        <button type="submit" id="save-row">
          {row ? 'Save changes' : 'Create'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

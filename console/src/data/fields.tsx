/**
 * Form fields of the row panel: one input per property type, and the conversions between a
 * property's JSON value and the text of its input.
 */
import type { Prop } from '../model';

/** The text an input shows for a value. */
export function toInput(prop: Prop, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (prop.type === 'lookup') return typeof value === 'object' ? String((value as { id?: unknown }).id ?? '') : String(value);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The JSON value of an input's text ('' → null); malformed numbers go as text for the server to refuse. */
export function fromInput(prop: Prop, text: string): unknown {
  if (text === '') return null;
  switch (prop.type) {
    case 'integer':
    case 'decimal':
      return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : text;
    case 'lookup':
      return { id: text.trim() };
    case 'json':
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    default:
      return text;
  }
}

/** Whether the form edits this property (blobs have their own upload; system fields are read-only). */
export const editable = (p: Prop): boolean => !p.readOnly && p.type !== 'blob';

export function FieldInput({ prop, value, onInput, error }: { prop: Prop; value: string; onInput: (v: string) => void; error?: string }) {
  const id = `field-${prop.name}`;
  const common = { id, name: prop.name, 'aria-invalid': !!error, 'aria-describedby': `field-error-${prop.name}` };
  let input;
  if (prop.enum?.length || prop.type === 'boolean') {
    const options = prop.type === 'boolean' ? ['true', 'false'] : prop.enum!.map(String);
    input = (
      <select {...common} value={value} onChange={(e) => onInput(e.currentTarget.value)}>
        <option value="">—</option>
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    );
  } else if (prop.type === 'text' || prop.type === 'json') {
    input = <textarea {...common} rows={3} value={value} onInput={(e) => onInput(e.currentTarget.value)} />;
  } else {
    input =
      prop.type === 'date' ? (
        <input {...common} type="date" value={value} onInput={(e) => onInput(e.currentTarget.value)} />
      ) : (
        <input
          {...common}
          type="text"
          inputMode={prop.type === 'integer' || prop.type === 'decimal' ? 'decimal' : undefined}
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
        />
      );
  }
  return (
    <label class="field">
      <span>
        {prop.name}
        {prop.required ? ' *' : ''} <small class="muted">{prop.type === 'lookup' && prop.target ? `lookup → ${prop.target} (id)` : prop.type}</small>
      </span>
      {input}
      {error && (
        <span class="error field-error" id={`field-error-${prop.name}`} role="alert">
          {error}
        </span>
      )}
    </label>
  );
}

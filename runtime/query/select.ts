/**
 * @module Parses `select` (SPEC §4.2): comma-separated property names, dot notation one level into
 * lookups (`customer.name`). `id` is always included; unknown names answer 400.
 */
import type { Collection } from '../manifest.js';
import { HttpError } from '../errors.js';
import { isSystemField } from '../contract/system-fields.js';

/**
 * The properties to return. `fields` holds top-level names; `nested` maps a lookup property to the
 * names selected from the looked-up row (absent: the whole row).
 */
export interface Selection {
  fields: Set<string>;
  nested: Map<string, Set<string>>;
}

function has(c: Collection, name: string): boolean {
  return isSystemField(name) || c.properties.some((p) => p.name === name);
}

const bad = (message: string) => new HttpError('INVALID_PARAMETER', `select: ${message}`, { details: [{ path: '/select', message }] });

/**
 * @throws HttpError INVALID_PARAMETER (400) naming an unknown property or a path deeper than one lookup
 */
export function parseSelect(text: string, collection: Collection, collections: readonly Collection[]): Selection {
  const selection: Selection = { fields: new Set(['id']), nested: new Map() };
  for (const rawName of text.split(',')) {
    const name = rawName.trim();
    if (name === '') continue;
    const [head, ...rest] = name.split('.');
    if (!has(collection, head)) throw bad(`unknown property "${head}" on ${collection.name}`);
    selection.fields.add(head);
    if (rest.length === 0) continue;
    const property = collection.properties.find((p) => p.name === head);
    if (!property || property.type !== 'lookup') throw bad(`"${head}" is not a lookup, so "${name}" cannot be selected`);
    if (rest.length > 1) throw bad(`"${name}" goes deeper than one lookup`);
    const target = collections.find((c) => c.name === property.collection)!;
    if (!has(target, rest[0])) throw bad(`unknown property "${rest[0]}" on ${target.name}`);
    const set = selection.nested.get(head) ?? new Set(['id']);
    set.add(rest[0]);
    selection.nested.set(head, set);
  }
  // A lookup named both plainly and with a dot path returns the whole row.
  for (const name of text.split(',').map((s) => s.trim())) {
    if (selection.nested.has(name)) selection.nested.delete(name);
  }
  return selection;
}

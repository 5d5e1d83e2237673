/**
 * @module Emits one route-handler module per collection, view and query (`.svc/routes/<Name>.js`): thin
 * code that binds the name and the Prisma delegate of the (base) collection to the runtime's generic handlers.
 */
import type { AppManifest } from '../../runtime/index.js';
import { renderTemplate } from '../render/render-template.js';
import { delegateName } from './prisma-schema.js';

/** @returns `routes/<Name>.js` → source, one per collection, view and query. Source: DESIGN §2 (generated output). */
export function emitRoutes(manifest: AppManifest): Record<string, string> {
  return Object.fromEntries([
    ...manifest.collections.map((c) => [
      `routes/${c.name}.js`,
      renderTemplate('route-handler.js.hbs', { name: c.name, delegate: delegateName(c.name) }),
    ]),
    ...manifest.views.map((v) => [
      `routes/${v.name}.js`,
      renderTemplate('view-handler.js.hbs', { name: v.name, collection: v.collection, delegate: delegateName(v.collection) }),
    ]),
    ...manifest.queries.map((q) => [`routes/${q.name}.js`, renderTemplate('query-handler.js.hbs', { name: q.name })]),
  ]);
}

/**
 * @module Emits one route-handler module per collection (`.svc/routes/<Name>.js`): thin code that
 * binds the collection's name and Prisma delegate to the runtime's generic handlers.
 */
import type { AppManifest } from '../../runtime/index.js';
import { renderTemplate } from '../render/render-template.js';
import { delegateName } from './prisma-schema.js';

/** @returns `routes/<Name>.js` → source, one per collection. Source: DESIGN §2 (generated output). */
export function emitRoutes(manifest: AppManifest): Record<string, string> {
  return Object.fromEntries(manifest.collections.map((c) => [
    `routes/${c.name}.js`,
    renderTemplate('route-handler.js.hbs', { name: c.name, delegate: delegateName(c.name) }),
  ]));
}

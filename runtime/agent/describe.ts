/**
 * @module The system message of an agent turn (DESIGN §7: "`instructions` reach the model as a system
 * message"): the app's `agent.instructions`, then a short generated description of the app — its
 * collections, views and queries with their properties (a query's fields, child aggregates
 * included, with what each reads) — and of the identity the tools act as, so the model knows where
 * it is and whom it serves.
 */
import { isChildAggregate, type AppManifest, type QueryField } from '../contract/manifest.js';
import type { Caller } from '../auth/caller.js';

/** How the system prompt shows a query field: its type, and for an aggregate what it aggregates (`count of Order via customer`). */
function queryFieldText(f: QueryField): string {
  if (isChildAggregate(f)) return `${f.type}, ${f.aggregate} of ${f.of}.${f.path} via ${f.via}${f.filter ? ` where ${f.filter}` : ''}`;
  return 'aggregate' in f ? `${f.type}, ${f.aggregate} of ${f.path}` : `${f.type}, ${f.path}`;
}

/** The system prompt text; at most a few lines per collection. */
export function describeApp(manifest: AppManifest, instructions: string | undefined, caller: Caller): string {
  const lines: string[] = [];
  if (instructions) lines.push(instructions, '');
  lines.push(
    `You are the assistant embedded in the backend of the app "${manifest.name}". You act through its API tools, with the access of the identity below.`,
  );
  for (const c of manifest.collections) lines.push(`- collection ${c.name}: ${c.properties.map((p) => `${p.name} (${p.type})`).join(', ')}`);
  for (const v of manifest.views) lines.push(`- view ${v.name}`);
  for (const q of manifest.queries)
    lines.push(
      `- query ${q.name} (from ${q.from}): id, ${Object.entries(q.fields)
        .map(([name, f]) => `${name} (${queryFieldText(f)})`)
        .join(', ')}`,
    );
  lines.push(
    caller.kind === 'anonymous'
      ? 'The identity is anonymous: only what anonymous callers may do is allowed.'
      : `The identity is ${caller.kind === 'user' ? 'user' : 'service account'} "${caller.username ?? caller.id}" (id ${caller.id}; roles: ${caller.roles.join(', ') || 'none'}).`,
  );
  lines.push('For work of several steps, show your plan with update_plan and keep it current. Answer in markdown.');
  return lines.join('\n');
}

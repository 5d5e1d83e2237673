/**
 * @module Cross-file checks of trigger definitions (`triggers/<Name>.json`, DESIGN §12): the name is the
 * file name and unique among triggers, `collection` is a collection of the app, `changed` names its
 * properties (or the system field `updatedAt` is refused: every update changes it) and needs `update` in
 * `on`, exactly one of `function` and `webhook`, and `function` names a type-2 function. The `filter` is
 * checked by the runtime's filter compiler (`filterProblems`), like views' and policies' filters.
 */
import type { RawApp } from '../load/load-app.js';
import type { RawFunctionDefinition, RawTriggerDefinition } from '../model/definitions.js';
import { pointer, type Diagnostic } from './diagnostics.js';
import { collectionRefProblem, type ModelIndex } from './model-index.js';

/** Property names `changed` may use besides the collection's own: none of the system fields (DESIGN §12). */
const SYSTEM_FIELDS = ['id', 'createdAt', 'updatedAt', 'createdBy'];

/**
 * Checks every schema-valid trigger of `raw` against the model.
 * @param invalidFiles - files that failed their JSON Schema: skipped
 * @returns diagnostics `DEF_FILE_NAME_MISMATCH`, `DEF_DUPLICATE_NAME`, `DEF_UNKNOWN_COLLECTION`, `DEF_NOT_A_COLLECTION`,
 *   `DEF_UNKNOWN_PROPERTY`, `DEF_CHANGED_WITHOUT_UPDATE`, `DEF_INVALID_FILTER` (`exp(...)`), `DEF_TRIGGER_TARGET`, `DEF_UNKNOWN_FUNCTION`, `DEF_FUNCTION_NOT_TYPE_2`
 * Source: DESIGN §12 (triggers), STYLE §4 (diagnostics).
 */
export function checkTriggers(raw: RawApp, index: ModelIndex, invalidFiles: Set<string>): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Map<string, string>();
  for (const { file, data } of raw.triggers ?? []) {
    if (invalidFiles.has(file)) continue;
    const t = data as RawTriggerDefinition;
    const at = (code: string, path: string, message: string): void => {
      out.push({ code, file, path, message });
    };
    const base = file.slice('triggers/'.length, -'.json'.length);
    if (base !== t.name) {
      at('DEF_FILE_NAME_MISMATCH', '/name', `name "${t.name}" must match the file name: rename the file to triggers/${t.name}.json or the name to "${base}"`);
    }
    const prev = seen.get(t.name.toLowerCase());
    if (prev) at('DEF_DUPLICATE_NAME', '/name', `trigger name "${t.name}" is already used by ${prev}`);
    else seen.set(t.name.toLowerCase(), file);
    const problem = collectionRefProblem(index, 'collection', t.collection);
    if (problem) at(problem.code, '/collection', problem.message);
    const collection = index.collection(t.collection);
    if (t.changed && !t.on.includes('update')) {
      at('DEF_CHANGED_WITHOUT_UPDATE', '/changed', 'changed applies to updates only: add "update" to on, or remove changed');
    }
    t.changed?.forEach((name, i) => {
      if (collection && !Object.hasOwn(collection.properties, name)) {
        const why = SYSTEM_FIELDS.includes(name) ? ' (system fields cannot be watched: updatedAt changes on every update)' : '';
        at('DEF_UNKNOWN_PROPERTY', pointer('changed', i), `changed names "${name}", which is not a property of ${t.collection}${why}`);
      }
    });
    if (t.filter !== undefined && /\bexp\s*\(/.test(t.filter)) {
      // The filter runs inside the database's trigger: there is no request time nor caller for now()/me().
      at('DEF_INVALID_FILTER', '/filter', "a trigger's filter cannot use exp(...): now() and me() have no value when the database captures the change");
    }
    out.push(...checkTarget(raw, t, at));
  }
  return out;
}

function checkTarget(raw: RawApp, t: RawTriggerDefinition, at: (code: string, path: string, message: string) => void): Diagnostic[] {
  if ((t.function === undefined) === (t.webhook === undefined)) {
    at('DEF_TRIGGER_TARGET', '', 'a trigger needs exactly one of "function" (a type-2 function) and "webhook" ({ url, secret })');
    return [];
  }
  if (t.function === undefined) return [];
  const fn = raw.functions.find((f) => (f.data as Partial<RawFunctionDefinition> | null)?.name === t.function);
  if (!fn) {
    at('DEF_UNKNOWN_FUNCTION', '/function', `function "${t.function}" does not exist: add functions/${t.function}.json with functionTypeId 2`);
  } else if ((fn.data as Partial<RawFunctionDefinition>).functionTypeId !== 2) {
    at(
      'DEF_FUNCTION_NOT_TYPE_2',
      '/function',
      `function "${t.function}" must be type 2 (functionTypeId 2, invocable only): a trigger does not call HTTP functions`,
    );
  }
  return [];
}

/**
 * @module The handlebars environment: strict, unescaped (we emit code, not HTML), known helpers only.
 * Templates are read from `templates/` once and compiled once per process.
 */
import { readFileSync } from 'node:fs';
import Handlebars from 'handlebars';
import { HELPERS } from './helpers.js';

const env = Handlebars.create();
for (const [name, fn] of Object.entries(HELPERS)) env.registerHelper(name, fn as Handlebars.HelperDelegate);

const TEMPLATE_DIR = new URL('../../templates/', import.meta.url);
const compiled = new Map<string, HandlebarsTemplateDelegate>();

/**
 * Renders `templates/<name>` with a prepared view model.
 * @param name - template file name, e.g. `route-handler.js.hbs`
 * @param view - the view model; a missing key throws (strict mode)
 * @returns the text, with LF line endings and exactly one trailing newline
 */
export function renderTemplate(name: string, view: object): string {
  let template = compiled.get(name);
  if (!template) {
    const source = readFileSync(new URL(name, TEMPLATE_DIR), 'utf8');
    template = env.compile(source, {
      strict: true,
      noEscape: true,
      knownHelpers: Object.fromEntries(Object.keys(HELPERS).map((h) => [h, true])),
      knownHelpersOnly: true,
    });
    compiled.set(name, template);
  }
  return template(view).replace(/\r\n/g, '\n').replace(/\n*$/, '\n');
}

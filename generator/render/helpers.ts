/**
 * @module The one registry of handlebars helpers used by `templates/*.hbs` (STYLE §6).
 * Every helper is pure and covered by `test/generator/render.test.ts`.
 */

/** Helper name → implementation. Templates may use no other helper (`knownHelpersOnly`). */
export const HELPERS: Record<string, (...args: unknown[]) => unknown> = {
  /** `{{json value}}`: a JSON literal (strings quoted and escaped), safe to embed in JS source. */
  json: (value: unknown) => JSON.stringify(value),
  /** `{{pad name width}}`: the name followed by spaces up to `width` characters (column alignment). */
  pad: (value: unknown, width: unknown) => String(value).padEnd(Number(width)),
};

// ESLint flat config (ESLint 9 + typescript-eslint 8). `npm run lint`; also run by test/lint.test.ts.
//
// Two jobs: the recommended rule sets (tuned below, each change with its reason), and the layer rules
// of DESIGN §2 as `no-restricted-imports` patterns, so a forbidden import fails `npm test`.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * `no-restricted-imports` patterns for one layer. Relative specifiers are matched as written, so each
 * group lists the `../` depths that can reach the forbidden folder from inside the layer (a deeper
 * file needs more `../`): `depths` = 1..4 covers runtime/a/b/c/file.ts.
 */
function reach(folder, depths = 4) {
  return Array.from({ length: depths }, (_, i) => `${'../'.repeat(i + 1)}${folder}`).flatMap((p) => [p, `${p}/**`]);
}

const RUNTIME_FORBIDDEN = [
  {
    group: reach('generator'),
    message: 'DESIGN §2: the runtime never imports the generator (a deployed server needs no generator).',
  },
  {
    group: reach('templates'),
    message: 'DESIGN §2: templates/ belong to the generator; the runtime serves generated output only.',
  },
  {
    group: reach('schemas'),
    message: 'DESIGN §2: definition JSON Schemas belong to the generator; the runtime reads the validated manifest.json.',
  },
  {
    group: reach('cli'),
    message: 'DESIGN §2: the CLI imports the runtime, never the other way round.',
  },
];

/**
 * runtime/auth files that still import Express today (main at the time this config was written).
 * The rule "runtime/auth imports no express" applies to every other file of runtime/auth now; remove
 * each entry here as its HTTP code moves to runtime/http (the auth-core work), until the list is empty.
 */

export default tseslint.config(
  {
    // Generated output, fixtures that are app sources (some deliberately broken), templates (handlebars).
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '.tmp/**',
      '**/.svc/**',
      'bench/results/**',
      'test/golden/**',
      'test/fixtures/**',
      'templates/**',
      'examples/*/data/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_`-prefixed names are deliberately unused (positional parameters, Express's 4-argument error
      // handler, destructuring that drops a key).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests read JSON answers (`await res.json()`) and poke at loosely typed bodies; `any` there is
    // the honest type, and a wrong guess fails the assertion anyway.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Function sources in script form (SPEC §4.8) assign declared context globals (`res = ...`) that
    // the runtime reads after the code ran: neither unused nor a constant.
    files: ['examples/*/functions/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': 'off', 'prefer-const': 'off' },
  },
  {
    // `get<T = any>(...)`: the function author's collection client; `any` as the default result type
    // keeps untyped function code short, and typed code passes its own `T`.
    files: ['runtime/functions/context.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // safeReturnUrl rejects control characters on purpose: the regex must name them.
    files: ['runtime/auth/login-page.ts'],
    rules: { 'no-control-regex': 'off' },
  },
  {
    // The console (DESIGN §9) runs in the browser and talks to the server over HTTP only: it imports
    // nothing of runtime/, generator/ or cli/.
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(runtime|generator|cli|schemas|templates)(/|$)',
              message: 'DESIGN §9: the console talks to the server over HTTP; it imports nothing of runtime/, generator/ or cli/.',
            },
          ],
        },
      ],
    },
  },
  {
    // Layer rules, DESIGN §2 ("Architecture": who may import whom).
    files: ['runtime/**/*.ts'],
    ignores: ['runtime/contract/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: RUNTIME_FORBIDDEN }] },
  },
  {
    files: ['runtime/auth/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'express',
              message: 'DESIGN §2: runtime/auth is framework-free (the HTTP adapter lives in runtime/http); take plain request data, not Express objects.',
            },
          ],
          patterns: RUNTIME_FORBIDDEN,
        },
      ],
    },
  },
  {
    files: ['runtime/contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // Only `./` specifiers: no `../`, no package, no `node:` module.
              regex: '^(?!\\./)',
              message:
                'DESIGN §2: runtime/contract is the one contract shared by the generator and the runtime; it imports nothing outside itself (plain types and data).',
            },
          ],
        },
      ],
    },
  },
  {
    // The typescript-eslint variant of the rule: it knows `import type`, so "type-only" is checkable.
    files: ['generator/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // Any path into runtime/ except runtime/index(.js) and runtime/contract/**.
              regex: '^(\\.\\./)+runtime/(?!index(\\.js)?$)(?!contract/)',
              message:
                'DESIGN §2: the generator uses the runtime only through runtime/index.ts or runtime/contract/** (the public contract), never its internals.',
            },
            {
              regex: '^(\\.\\./)+runtime/index(\\.js)?$',
              allowTypeImports: true,
              message: 'STYLE §2: the generator imports runtime/index.ts type-only (`import type`); a value import would load the server into the generator.',
            },
            {
              group: reach('cli'),
              message: 'DESIGN §2: the CLI imports the generator, never the other way round.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(runtime|generator)/(?!index(\\.js)?$)',
              message: 'DESIGN §2: the CLI uses the public entries runtime/index.ts and generator/index.ts only.',
            },
          ],
        },
      ],
    },
  },
);

#!/usr/bin/env node
/**
 * @module The `svc` command line (DESIGN §3a): parses argv with commander, calls one public function
 * of the generator or runtime, prints, and maps failures to a one-line reason and a non-zero exit.
 */
import { Command, InvalidArgumentError } from 'commander';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CreditChange } from '../runtime/index.js';
import { exitOnStop } from './stop.js';
import { servingBanner } from './banner.js';

// The generator (TypeScript's compiler) and the runtime are loaded by the commands that
// use them: `svc serve` and `svc user …` never pay for the compiler, `--help` for neither.
const generator = () => import('../generator/index.js');
const runtime = () => import('../runtime/index.js');

async function fail(err: unknown): Promise<never> {
  // Only the generator throws DefinitionError, so it is loaded already when the error is one.
  const { DefinitionError, formatDiagnostic } =
    err instanceof Error && err.name === 'DefinitionError' ? await generator() : { DefinitionError: undefined, formatDiagnostic: undefined };
  if (DefinitionError && err instanceof DefinitionError && err.diagnostics.length === 1 && err.diagnostics[0].code === 'DEF_MISSING_SVC_JSON') {
    process.stderr.write(`svc: ${err.diagnostics[0].message}\n`); // not an app folder: one line, no count
  } else if (DefinitionError && err instanceof DefinitionError) {
    for (const d of err.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    process.stderr.write(`svc: ${err.message}\n`);
  } else {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`svc: ${message.split('\n')[0]}\n`);
  }
  process.exit(1);
}

/** `--drain <seconds>`: a number from 0 to 300 (fractions allowed). */
function drainSeconds(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 300) throw new InvalidArgumentError('must be a number of seconds from 0 to 300');
  return n;
}

/** `SVC_DRAIN_SECONDS` as `--drain` reads it. @throws Error naming the variable when it is not 0 to 300 */
function envDrainSeconds(value: string): number {
  try {
    return drainSeconds(value);
  } catch {
    throw new Error(`SVC_DRAIN_SECONDS must be a number of seconds from 0 to 300 (got ${JSON.stringify(value)})`);
  }
}

/** One `--rename Collection.old=new`, added to the ones before it. */
function renameOption(value: string, previous: { collection: string; from: string; to: string }[]) {
  const m = /^(\w+)\.(\w+)=(\w+)$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError(`must be Collection.old=new (got ${JSON.stringify(value)})`);
  return [...previous, { collection: m[1], from: m[2], to: m[3] }];
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return n;
}

// `svc openapi . | head`: a reader that stops early closes the pipe; end quietly with 0 as other
// Unix tools do rather than with an unhandled 'error' event's stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

const program = new Command('svc')
  .description('svc: a folder of JSON definitions becomes a complete API')
  .version(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version)
  .showHelpAfterError();

program
  .command('init')
  .description('write a working example app into <dir>')
  .argument('<dir>', 'folder to create (its name becomes the api-name)')
  .action(async (dir: string) => {
    const files = (await generator()).initApp(dir);
    process.stdout.write(`svc: wrote ${files.length} files to ${dir}\nnext: svc generate ${dir} && svc serve ${dir}\n`);
  });

program
  .command('generate')
  .description('validate every definition, emit .svc/, and write a migration when the model changed')
  .argument('[dir]', 'app folder', '.')
  .option('--name <migration>', 'name of the migration written if the model changed')
  .option('--prisma-client', 'also emit the Prisma client into .svc/client/ (default: svc.json generate.prismaClient; the runtime does not need it)')
  .option('--accept-data-loss', 'write a migration that drops tables or columns (and the data in them)')
  .option(
    '--rename <Collection.old=new>',
    'the property old of Collection was renamed to new: the migration renames its column, keeping the values (repeatable)',
    renameOption,
    [] as { collection: string; from: string; to: string }[],
  )
  .action(
    async (
      dir: string,
      opts: { name?: string; prismaClient?: boolean; acceptDataLoss?: boolean; rename: { collection: string; from: string; to: string }[] },
    ) => {
      const { generate, formatDiagnostic } = await generator();
      // The runtime (schema engine, filter compiler) is loaded only when something changed.
      const result = await generate({
        appDir: dir,
        migrationName: opts.name,
        prismaClient: opts.prismaClient,
        acceptDataLoss: opts.acceptDataLoss,
        renames: opts.rename,
        diffDatamodels: async (o) => (await runtime()).diffDatamodels(o),
        checkFilters: async (manifest) => (await runtime()).filterProblems(manifest),
        findUniqueClashes: async (check) => (await runtime()).uniqueClashes(check),
        findRuleBreakers: async (check) => (await runtime()).ruleBreakers(check),
      });
      for (const w of result.warnings) process.stderr.write(`svc: warning: ${formatDiagnostic(w)}\n`);
      process.stdout.write(`svc: generated ${join(dir, '.svc')} (${result.manifest.collections.length} collections, ${result.manifest.provider})\n`);
      process.stdout.write(
        result.migration ? `svc: new migration migrations/${result.manifest.provider}/${result.migration}\n` : 'svc: no model change, no new migration\n',
      );
    },
  );

program
  .command('migrate')
  .description('apply pending migrations (serve does this too at start), each on its own: one that fails is rolled back alone and recorded as failed')
  .argument('[dir]', 'app folder', '.')
  .option('--status', 'print {"applied", "pending", "failed", "errors"} (migration names; errors: why each failed one failed) and change nothing')
  .option(
    '--discard <migration>',
    'delete a migration this database never applied (pending, or failed and rolled back) and its failed record; the next svc generate writes a fresh one',
  )
  .option(
    '--squash <name>',
    'fold the consecutive _dev migrations at the end into one migration <stamp>_<name> with the same end schema (recorded as applied locally when they were)',
  )
  .option('--resolve <migration>', 'mark a failed migration an older run left unresolved as rolled back, so that the next svc migrate applies it again')
  .addHelpText(
    'after',
    `
When a migration fails: it is rolled back alone (the ones before it stay applied) and listed by
--status as failed, with the reason. Fix the data or the definitions, then either migrate again, or
drop the migration with --discard <name> and run svc generate to write a fresh one. svc dev drops its
own failed _dev migration by itself. An applied migration cannot be discarded: change the definitions
and generate a migration that undoes it. Before committing what svc dev wrote, --squash <name> folds
its _dev migrations into one.`,
  )
  .action(async (dir: string, opts: { status?: boolean; resolve?: string; discard?: string; squash?: string }) => {
    const svc = await runtime();
    if (opts.squash !== undefined) {
      const { migrationSql } = await generator();
      // SQLite diffs in memory (the URL is not opened); PostgreSQL needs a reachable server (no table is read).
      const sqlFor = (t: { provider: 'sqlite' | 'postgresql'; url: string }, from: string | null, to: string) =>
        migrationSql({ provider: t.provider, url: t.url, previous: from, schema: to, diffDatamodels: svc.diffDatamodels });
      print(await svc.squashMigrationsInApp(dir, opts.squash, sqlFor));
      return;
    }
    if (opts.status) {
      print(await svc.migrationStatusInApp(dir));
      return;
    }
    if (opts.discard !== undefined) {
      print(await svc.discardMigrationInApp(dir, opts.discard));
      return;
    }
    if (opts.resolve !== undefined) {
      print(await svc.resolveMigrationInApp(dir, opts.resolve));
      return;
    }
    const applied = await svc.migrateApp(dir);
    process.stdout.write(applied.length ? `svc: applied ${applied.join(', ')}\n` : 'svc: database is up to date\n');
  });

program
  .command('serve')
  .description('serve the app (applies pending migrations first); SIGTERM drains and exits')
  .argument('[dir]', 'app folder', '.')
  .option('--port <n>', 'TCP port (0 picks a free one; default: PORT, then svc.json port)', port)
  .option('--host <address>', 'interface to listen on (default: HOST, then 127.0.0.1)')
  .option(
    '--drain <seconds>',
    'on SIGTERM, first answer /api/_ready 503 and keep serving this long, so a load balancer takes the instance out (default: SVC_DRAIN_SECONDS, then 0; docs/deploy.md)',
    drainSeconds,
  )
  .action(async (dir: string, opts: { port?: number; host?: string; drain?: number }) => {
    const fromEnv = process.env.SVC_DRAIN_SECONDS;
    const drain = opts.drain ?? (fromEnv ? envDrainSeconds(fromEnv) : 0);
    const server = await (await runtime()).startServer({ appDir: resolve(dir), port: opts.port, host: opts.host });
    process.stdout.write(servingBanner(server));
    exitOnStop(() => server.close(undefined, drain * 1000));
  });

program
  .command('dev')
  .description("generate, migrate and serve, then watch the app folder and serve each edit in-process (one developer's machine; DESIGN §10)")
  .argument('[dir]', 'app folder', '.')
  .option('--port <n>', 'TCP port (0 picks a free one; default: PORT, then svc.json port)', port)
  .option('--host <address>', 'interface to listen on (default: HOST, then 127.0.0.1)')
  .option('--accept-data-loss', 'apply edits that drop columns or tables holding data without asking (a SQLite file is backed up first)')
  .action(async (dir: string, opts: { port?: number; host?: string; acceptDataLoss?: boolean }) => {
    const { runDev } = await import('./dev/loop.js');
    await runDev({ appDir: dir, port: opts.port, host: opts.host, acceptDataLoss: opts.acceptDataLoss === true });
  });

/** A non-negative integer option value; anything else exits non-zero naming the option. */
function wholeNumber(value: string, option: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError(`${option} must be a whole number of credits (got ${JSON.stringify(value)})`);
  return n;
}

function roles(value: string): string[] {
  return value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const TAKES_EFFECT = 'running servers apply it within 5 seconds, also to access tokens already issued';

const user = program.command('user').description('manage users (sign in with a password)');
user
  .command('create')
  .description('create a user (applies pending migrations first); prints {"id": ...}')
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the sign-in name')
  .requiredOption('--password <password>', 'at least 8 characters (stored as an argon2id hash)')
  .option(
    '--roles <a,b>',
    "app roles, comma-separated: names your access rules use (a role named 'admin' is just a role: it does not open the console)",
    roles,
    [] as string[],
  )
  .option('--email <address>', 'an e-mail address (unique; counts as verified: you vouch for it)')
  .option('--admin', 'a platform admin (not a role): bypasses access rules and policies, and may open the console at /_/')
  .addHelpText(
    'after',
    `
Two kinds of "admin":
  --roles admin   an app role named "admin", granted only what your access rules give that role
  --admin         a platform admin: every access rule and policy is bypassed, and the console at /_/ opens
Give both to a first user who should manage the app's data as an admin role and open the console.`,
  )
  .action(async (dir: string, opts: { username: string; password: string; roles: string[]; email?: string; admin?: boolean }) => {
    print(await (await runtime()).createUserInApp(dir, { ...opts, admin: opts.admin === true }));
  });
user
  .command('delete')
  .description(`delete a user and its refresh tokens; prints {"id": ..., "deleted": true}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the user to delete')
  .action(async (dir: string, opts: { username: string }) => {
    print(await (await runtime()).deleteIdentityInApp(dir, { kind: 'user', username: opts.username }));
  });
user
  .command('disable')
  .description(`stop a user from signing in and using its tokens; prints {"id": ..., "disabled": true}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the user to disable')
  .action(async (dir: string, opts: { username: string }) => {
    print(await (await runtime()).disableIdentityInApp(dir, { kind: 'user', username: opts.username }));
  });
user
  .command('set-roles')
  .description(`replace a user's custom roles; prints {"id": ..., "roles": [...]}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the user to change')
  .requiredOption('--roles <a,b>', 'the new custom roles, comma-separated ("" removes them all)', roles)
  .action(async (dir: string, opts: { username: string; roles: string[] }) => {
    print(await (await runtime()).setIdentityRolesInApp(dir, { kind: 'user', username: opts.username }, opts.roles));
  });
user
  .command('set-admin')
  .description(`make a user an admin (--on) or not (--off); prints {"id": ..., "admin": true|false}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the user to change')
  .option('--on', 'make the user an admin')
  .option('--off', 'make the user an ordinary user')
  .action(async (dir: string, opts: { username: string; on?: boolean; off?: boolean }) => {
    if (opts.on === opts.off) throw new InvalidArgumentError('give exactly one of --on and --off');
    print(await (await runtime()).setIdentityAdminInApp(dir, { kind: 'user', username: opts.username }, opts.on === true));
  });

user
  .command('list')
  .description('list the users with their e-mail address, roles, state and linked identity providers; prints a JSON array')
  .argument('[dir]', 'app folder', '.')
  .action(async (dir: string) => {
    print(await (await runtime()).listUsersInApp(dir));
  });
user
  .command('show')
  .description('show one user with its linked identity providers; prints {"id", "username", "email", "roles", "disabled", "providers": [...]}')
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--username <name>', 'the user to show')
  .action(async (dir: string, opts: { username: string }) => {
    print(await (await runtime()).showUserInApp(dir, opts.username));
  });

const JOB_ACTIONS = ['list', 'retry', 'discard'];
program
  .command('jobs')
  .description('background jobs (§12): `jobs [dir] list [--failed]`, `jobs [dir] retry <id|--failed>`, `jobs [dir] discard <id>`; prints JSON')
  .argument('<words...>', '[dir] list | retry [id] | discard <id>')
  .option('--failed', 'list: only failed jobs; retry: every failed job')
  .option('--limit <n>', 'list: at most n jobs (1 to 1000, default 100)', (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new InvalidArgumentError('--limit must be an integer from 1 to 1000');
    return n;
  })
  .action(async (words: string[], opts: { failed?: boolean; limit?: number }) => {
    const [dir, action, id, ...rest] = JOB_ACTIONS.includes(words[0]) ? ['.', ...words] : words;
    const rt = await runtime();
    if (rest.length > 0) throw new InvalidArgumentError(`unexpected arguments: ${rest.join(' ')}`);
    if (action === 'list' && id === undefined) print(await rt.listJobsInApp(dir, { failed: opts.failed === true, limit: opts.limit }));
    else if (action === 'retry' && (id === undefined) === (opts.failed === true))
      print(await rt.retryJobsInApp(dir, id === undefined ? { failed: true } : { id }));
    else if (action === 'discard' && id !== undefined && opts.failed !== true) print(await rt.discardJobInApp(dir, id));
    else throw new InvalidArgumentError('usage: svc jobs [dir] list [--failed] | retry <id|--failed> | discard <id>');
  });

const serviceAccount = program.command('service-account').description('manage service accounts (OAuth 2.0 clients)');
serviceAccount
  .command('create')
  .description('create a service account (applies pending migrations first); prints {"clientId": ..., "clientSecret": ...} — the secret is shown only once')
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--name <name>', 'a name for people (its username in _me)')
  .option('--roles <a,b>', 'custom roles, comma-separated', roles, [] as string[])
  .option('--admin', 'bypass access rules and policies, and read the client log')
  .action(async (dir: string, opts: { name: string; roles: string[]; admin?: boolean }) => {
    print(await (await runtime()).createServiceAccountInApp(dir, { name: opts.name, roles: opts.roles, admin: opts.admin === true }));
  });
serviceAccount
  .command('delete')
  .description(`delete a service account and its refresh tokens; prints {"id": ..., "deleted": true}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--client-id <id>', 'the client id of the account (names are not unique)')
  .action(async (dir: string, opts: { clientId: string }) => {
    print(await (await runtime()).deleteIdentityInApp(dir, { kind: 'serviceAccount', clientId: opts.clientId }));
  });
serviceAccount
  .command('disable')
  .description(`stop a service account from signing in and using its tokens; prints {"id": ..., "disabled": true}; ${TAKES_EFFECT}`)
  .argument('[dir]', 'app folder', '.')
  .requiredOption('--client-id <id>', 'the client id of the account (names are not unique)')
  .action(async (dir: string, opts: { clientId: string }) => {
    print(await (await runtime()).disableIdentityInApp(dir, { kind: 'serviceAccount', clientId: opts.clientId }));
  });

program
  .command('credits')
  .description('show or change the agent credit state; prints {"mode", "credits", "monthlyCap", "monthUsed", "paused"}')
  .argument('[dir]', 'app folder', '.')
  .option('--add <credits>', 'add credits to the balance (a positive integer)')
  .option('--cap <credits>', 'set the monthly cap (credits per Europe/Oslo month), or "none"')
  .option('--resume', "lift a pause (the monthly cap or an admin's)")
  .action(async (dir: string, opts: { add?: string; cap?: string; resume?: boolean }) => {
    const change: CreditChange = {};
    if (opts.add !== undefined) change.addBalance = wholeNumber(opts.add, '--add');
    if (opts.cap !== undefined) change.monthlyCap = opts.cap === 'none' ? null : wholeNumber(opts.cap, '--cap');
    if (opts.resume) change.paused = false;
    print(await (await runtime()).creditsInApp(dir, change));
  });

program
  .command('openapi')
  .description('print the OpenAPI document of the app (run svc generate first)')
  .argument('[dir]', 'app folder', '.')
  .action((dir: string) => {
    process.stdout.write(readFileSync(join(dir, '.svc', 'openapi.json'), 'utf8'));
  });

program.parseAsync(process.argv).catch(fail);

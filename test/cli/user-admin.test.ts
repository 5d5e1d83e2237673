/**
 * The two meanings of "admin" (issue 32 §4): `--roles admin` is an app role, `--admin` a platform
 * admin who opens the console. `svc user list` and `show` print the admin flag; `svc user create
 * --help` and the README that `svc init` writes say which is which, and the README's first-user
 * command makes a user who is both.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

describe('svc user and the admin flag', () => {
  let work: string;
  let dir: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'svc-user-admin-'));
    dir = join(work, 'app');
    expect((await runCli(['init', dir])).code).toBe(0);
    expect((await runCli(['generate', dir])).code).toBe(0);
  }, 120_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("runs the generated README's first-user command: the user has the admin role and is an admin", async () => {
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    const line = readme.split('\n').find((l) => l.startsWith('npx svc user create'))!;
    expect(line).toContain('--roles admin --admin');
    expect(readme).toMatch(/`--roles admin` gives the app role named `admin`/);
    expect(readme).toMatch(/`--admin` makes a platform admin, who bypasses every access\s+rule and policy and may open the console/);
    const created = await runCli(['user', 'create', dir, '--username', 'you', '--password', 'at least 8 characters', '--roles', 'admin', '--admin']);
    expect(created.code, created.stderr).toBe(0);
    expect((await runCli(['user', 'create', dir, '--username', 'clerk', '--password', 'clerk-password', '--roles', 'admin'])).code).toBe(0);
    const list = JSON.parse((await runCli(['user', 'list', dir])).stdout) as { username: string; roles: string[]; admin: boolean }[];
    expect(list.map((u) => [u.username, u.roles, u.admin])).toEqual([
      ['clerk', ['admin'], false],
      ['you', ['admin'], true],
    ]);
    const shown = JSON.parse((await runCli(['user', 'show', dir, '--username', 'you'])).stdout);
    expect(shown).toMatchObject({ username: 'you', roles: ['admin'], admin: true });
  });

  it('says in svc user create --help which admin is which', async () => {
    const help = await runCli(['user', 'create', '--help']);
    expect(help.stdout).toContain('Two kinds of "admin"');
    expect(help.stdout).toMatch(/--roles admin\s+an app role named "admin"/);
    expect(help.stdout).toMatch(/--admin\s+a platform admin: every access rule and policy is bypassed, and the console at \/_\/ opens/);
  });
});

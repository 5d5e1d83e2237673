/**
 * @module The identities behind access tokens, as they are now: after a token's signature is
 * verified, its subject is looked up here, so that deleting or disabling an identity, or changing its
 * roles (`svc user …`, `svc service-account …`, possibly run on another machine), reaches tokens
 * already issued within `IDENTITY_CACHE_TTL_MS` on every instance that shares the database. Each
 * entry (found, or gone) lives that long; concurrent lookups of one identity share one query.
 */
import type { Database } from '../data/database.js';
import type { Caller } from './caller.js';
import { loadCaller } from './identities.js';

/** How long a looked-up identity is trusted, ms. Changes reach existing tokens within this (plus one query). */
export const IDENTITY_CACHE_TTL_MS = 4000;

/** Entries above this count trigger a sweep of expired ones. */
const SWEEP_ABOVE = 10_000;

interface Entry {
  loadedAt: number;
  caller: Promise<Caller | null>;
}

export class IdentityCache {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<IdentityChangeListener>();

  /**
   * @param ttlMs - entry lifetime in ms (default `IDENTITY_CACHE_TTL_MS`)
   * @param now - the clock, ms (tests pass their own)
   */
  constructor(
    private readonly db: Database,
    private readonly ttlMs = IDENTITY_CACHE_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The current caller of identity `kind`/`id` (roles and admin flag as stored now).
   * @returns null when the identity was deleted or is disabled
   * @throws the database's error when the lookup fails (nothing is cached then)
   */
  get(kind: Caller['kind'], id: string): Promise<Caller | null> {
    const key = `${kind}:${id}`;
    const t = this.now();
    const cached = this.entries.get(key);
    if (cached && t - cached.loadedAt < this.ttlMs) return cached.caller;
    if (this.entries.size > SWEEP_ABOVE) {
      for (const [k, e] of this.entries) if (t - e.loadedAt >= this.ttlMs) this.entries.delete(k);
    }
    const entry: Entry = { loadedAt: t, caller: loadCaller(this.db, kind, id) };
    this.entries.set(key, entry);
    entry.caller.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return entry.caller;
  }

  /** Drops what is known of one identity on this instance only. */
  forget(kind: Caller['kind'], id: string): void {
    this.entries.delete(`${kind}:${id}`);
  }

  /**
   * An identity was changed (deleted, disabled, new roles or admin flag): forgets it here and tells
   * the listeners, so that the real-time service re-checks the identity's sockets at once and, when
   * `origin` is `'here'`, tells the other instances over the bus (docs/deploy.md "Caches across
   * instances"). `origin` `'bus'`: another instance or a `svc user …` command announced it.
   */
  changed(kind: IdentityKind, id: string, origin: 'here' | 'bus' = 'here'): void {
    this.forget(kind, id);
    for (const listener of this.listeners) listener(kind, id, origin);
  }

  /** Calls `listener` on every `changed`; returns the function that removes it. */
  onChange(listener: IdentityChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The kinds of identity that can change: users and service accounts. */
export type IdentityKind = 'user' | 'serviceAccount';

/** Told of each changed identity: its kind and id, and whether the change was made here or announced on the bus. */
export type IdentityChangeListener = (kind: IdentityKind, id: string, origin: 'here' | 'bus') => void;

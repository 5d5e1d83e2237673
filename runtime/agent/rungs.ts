/**
 * @module Model rungs (SPEC §4.11 "Model rungs" rules 1–5, DESIGN §7): the name a caller passes is a
 * rung, never a model; removed names map to their replacement; anything else runs on `base` with no
 * notice; a `norway-*` rung stays on its own provider and bills full input.
 */
import type { AgentProvider, AgentRung, AgentSettings } from '../contract/settings.js';

/** The six rung names (SPEC §4.11 rule 1, rule 4). */
export const RUNG_NAMES = ['base', 'pro', 'max', 'norway-base', 'norway-pro', 'norway-max'] as const;
export type RungName = (typeof RUNG_NAMES)[number];

/** Removed names and their replacements (rule 3); the `global-` forms drop the prefix. */
const REMOVED: Record<string, RungName> = { mini: 'base', nano: 'base', smart: 'pro', genius: 'max' };

/**
 * The rung a `model` value runs on (rules 1–4): a rung name as is; `mini`/`nano` → base, `smart` → pro,
 * `genius` → max, and their `global-` forms; `global-base|pro|max` → the rung; anything else,
 * `norway-*` misspellings and retired names included, and absent → `base`.
 */
export function rungOf(model: unknown): RungName {
  if (typeof model !== 'string') return 'base';
  if ((RUNG_NAMES as readonly string[]).includes(model)) return model as RungName;
  const bare = model.startsWith('global-') ? model.slice('global-'.length) : model;
  if (REMOVED[bare]) return REMOVED[bare];
  if (model.startsWith('global-') && (bare === 'base' || bare === 'pro' || bare === 'max')) return bare;
  return 'base';
}

/** A rung ready to call: its name, settings and provider. */
export interface ResolvedRung {
  name: RungName;
  rung: AgentRung;
  provider: AgentProvider;
  /** The provider's key in `agent.providers` (also the AI SDK provider name). */
  providerName: string;
}

/** A valid rung that `svc.json` does not configure: the turn fails naming it and no model request is made. */
export class RungNotConfiguredError extends Error {
  constructor(
    readonly rungName: string,
    detail: string,
  ) {
    super(`model rung "${rungName}" is not configured: ${detail}`);
    this.name = 'RungNotConfiguredError';
  }
}

/**
 * Resolves `model` to its configured rung and provider.
 * @throws RungNotConfiguredError when the rung (or its provider) is missing from `agent` in svc.json
 */
export function resolveRung(settings: AgentSettings, model: unknown): ResolvedRung {
  const name = rungOf(model);
  const rung = settings.rungs[name];
  if (!rung)
    throw new RungNotConfiguredError(name, `add "agent": { "rungs": { "${name}": { "provider", "model", "inputPer1k", "outputPer1k" } } } to svc.json`);
  const provider = settings.providers[rung.provider];
  if (!provider) throw new RungNotConfiguredError(name, `its provider "${rung.provider}" is not in agent.providers`);
  return { name, rung, provider, providerName: rung.provider };
}

/** Token counts of one or more model calls. */
export interface TokenUsage {
  /** Uncached prompt tokens (prompt − cached). */
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

/**
 * Credits of a usage on a rung (DESIGN §7): `ceil(input/1000 × inputPer1k + cachedInput/1000 ×
 * cachedInputPer1k + output/1000 × outputPer1k)`, `cachedInputPer1k` defaulting to `inputPer1k`;
 * `norway-*` rungs bill cached input at the full input price (rule 5).
 */
export function creditsOf(rung: ResolvedRung, usage: TokenUsage): number {
  const cachedPrice = rung.name.startsWith('norway-') ? rung.rung.inputPer1k : (rung.rung.cachedInputPer1k ?? rung.rung.inputPer1k);
  return Math.ceil(
    (usage.inputTokens / 1000) * rung.rung.inputPer1k + (usage.cachedInputTokens / 1000) * cachedPrice + (usage.outputTokens / 1000) * rung.rung.outputPer1k,
  );
}

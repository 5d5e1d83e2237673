/**
 * Model rungs (SPEC §4.11 rules 1–5, DESIGN §7): names map to rungs exactly as the rules say, and a
 * turn's credits follow the pinned formula, with `norway-*` rungs billing cached input in full.
 */
import { describe, expect, it } from 'vitest';
import { creditsOf, resolveRung, rungOf, RungNotConfiguredError } from '../../../dist/runtime/agent/rungs.js';
import { AGENT_DEFAULTS } from '../../../dist/runtime/index.js';

describe('rungOf', () => {
  it.each([
    ['base', 'base'],
    ['pro', 'pro'],
    ['max', 'max'],
    ['norway-base', 'norway-base'],
    ['norway-pro', 'norway-pro'],
    ['norway-max', 'norway-max'],
    ['mini', 'base'],
    ['nano', 'base'],
    ['smart', 'pro'],
    ['genius', 'max'],
    ['global-mini', 'base'],
    ['global-nano', 'base'],
    ['global-smart', 'pro'],
    ['global-genius', 'max'],
    ['global-base', 'base'],
    ['global-pro', 'pro'],
    ['global-max', 'max'],
    ['norway-genius', 'base'],
    ['norway-smart', 'base'],
    ['norway-code', 'base'],
    ['norway-large', 'base'],
    ['norway-bse', 'base'],
    ['gpt-4o', 'base'],
    ['', 'base'],
    [undefined, 'base'],
    [42, 'base'],
  ])('%s runs on %s', (name, rung) => {
    expect(rungOf(name)).toBe(rung);
  });
});

describe('resolveRung and creditsOf', () => {
  const settings = {
    ...AGENT_DEFAULTS,
    providers: { global: { baseURL: 'http://g' }, norway: { baseURL: 'http://n' } },
    rungs: {
      base: { provider: 'global', model: 'small-1', inputPer1k: 15, cachedInputPer1k: 4, outputPer1k: 60 },
      pro: { provider: 'global', model: 'mid-1', inputPer1k: 125, outputPer1k: 500 },
      'norway-base': { provider: 'norway', model: 'no-small', inputPer1k: 20, cachedInputPer1k: 5, outputPer1k: 80 },
      'norway-pro': { provider: 'missing', model: 'x', inputPer1k: 1, outputPer1k: 1 },
    },
  };

  it('prices a turn with one ceil over its usage; cached input defaults to the input price; norway bills cached input in full', () => {
    expect(creditsOf(resolveRung(settings, 'base'), { inputTokens: 1000, cachedInputTokens: 200, outputTokens: 30 })).toBe(18);
    expect(creditsOf(resolveRung(settings, 'smart'), { inputTokens: 1, cachedInputTokens: 1, outputTokens: 1 })).toBe(1);
    expect(creditsOf(resolveRung(settings, 'pro'), { inputTokens: 2000, cachedInputTokens: 1000, outputTokens: 1000 })).toBe(875);
    expect(creditsOf(resolveRung(settings, 'norway-base'), { inputTokens: 1000, cachedInputTokens: 1000, outputTokens: 0 })).toBe(40);
  });

  it('a valid rung that is not configured, or whose provider is missing, fails naming it', () => {
    expect(() => resolveRung(settings, 'max')).toThrow(RungNotConfiguredError);
    expect(() => resolveRung(settings, 'genius')).toThrow(/"max"/);
    expect(() => resolveRung(settings, 'norway-pro')).toThrow(/"norway-pro".*provider "missing"/);
  });
});

/**
 * @module The agent's credits per identity and its model calls outside the session worker (SPEC §3,
 * §8; DESIGN §7): whether a turn (or `compact`) may run — the app's credits, the identity's session
 * limit — charging a usage to the app and the identity, the credit figures of the events and the
 * callback, `compact`'s summary, and `ctx.agent.ask`.
 */
import type { ModelMessage } from 'ai';
import { HttpError } from '../errors.js';
import type { AgentSettings } from '../contract/settings.js';
import type { CreditLedger } from './credits.js';
import type { CreditFigures, SessionOptions } from './host.js';
import { parseAskMessages } from './options.js';
import { creditsOf, resolveRung, type ResolvedRung } from './rungs.js';
import type { ThreadStore } from './threads.js';
import type { CreditSource } from './credit-usage.js';
import type { TurnUsage } from './worker-protocol.js';

export class ModelCalls {
  constructor(
    private readonly settings: AgentSettings,
    private readonly ledger: CreditLedger,
    private readonly threads: ThreadStore,
  ) {}

  /** A message refusing a new turn (or `compact`) of this identity (credits exhausted, paused, session limit), or null. */
  async refuseTurn(identityId: string): Promise<string | null> {
    const app = await this.ledger.refusal();
    if (app) return app;
    const row = await this.threads.session(identityId);
    return row.sessionCredits > 0 && row.sessionCreditsUsed >= row.sessionCredits ? 'Session credit limit reached' : null;
  }

  /**
   * Charges a usage on `rung` to the app and the identity, as `source` (a thread turn unless said);
   * returns the credits it cost (0 for an unknown rung).
   */
  async meter(identityId: string, rung: string, usage: TurnUsage, source: CreditSource = 'turn'): Promise<number> {
    let resolved: ResolvedRung;
    try {
      resolved = resolveRung(this.settings, rung);
    } catch {
      return 0;
    }
    const cost = creditsOf(resolved, usage);
    if (cost > 0) await Promise.all([this.ledger.charge(cost, source), this.threads.addSessionCreditsUsed(identityId, cost)]);
    return cost;
  }

  /** The credit figures of `status`, `credits`, the connect result and the callback. */
  async credits(identityId: string): Promise<CreditFigures> {
    const [row, app] = await Promise.all([this.threads.session(identityId), this.ledger.state()]);
    return {
      credits: app.credits,
      sessionCredits: row.sessionCredits === 0 ? 0 : Math.max(0, row.sessionCredits - row.sessionCreditsUsed),
      sessionCreditsLimit: row.sessionCredits,
      sessionCreditsUsed: row.sessionCreditsUsed,
    };
  }

  /** One model call that summarises `messages` (for `compact`), charged like a turn. */
  async summarise(identityId: string, options: SessionOptions, messages: unknown[]): Promise<string> {
    const rung = resolveRung(this.settings, options.model);
    const { generateText, model } = await aiSdk(rung);
    const { text, usage } = await generateText({
      model,
      system: 'Summarise the conversation so far for yourself: the facts, decisions and open questions you need to continue it. Be brief.',
      messages: [...(messages as ModelMessage[]), { role: 'user', content: 'Summarise our conversation so far.' }],
      maxRetries: 1,
    });
    await this.meter(identityId, rung.name, usageOf(usage), 'compact');
    return text;
  }

  /** `ctx.agent.ask`: one completion, no session, no tools, no streaming. */
  async ask(a: Record<string, unknown>): Promise<unknown> {
    const messages = parseAskMessages(a.messages);
    const refusal = await this.ledger.refusal();
    if (refusal) throw new HttpError('FORBIDDEN', refusal);
    let rung: ResolvedRung;
    try {
      rung = resolveRung(this.settings, a.model);
    } catch (err) {
      throw new HttpError('SERVICE_UNAVAILABLE', (err as Error).message);
    }
    let result: Awaited<ReturnType<typeof import('ai').generateText>>;
    try {
      const { generateText, model } = await aiSdk(rung);
      result = await generateText({ model, messages: messages as ModelMessage[], maxRetries: 1 });
    } catch (err) {
      const e = err as { statusCode?: unknown; message?: string };
      throw new HttpError(
        'BAD_GATEWAY',
        typeof e.statusCode === 'number' ? `the model provider answered ${e.statusCode}` : `the model provider failed: ${e.message ?? String(err)}`,
      );
    }
    const usage = usageOf(result.usage);
    await this.ledger.charge(creditsOf(rung, usage), 'ask');
    return { text: result.text, usage, credits: (await this.ledger.state()).credits, model: rung.name };
  }
}

/** The AI SDK's `generateText` and the model of `rung`; the SDK is loaded on the first model call, not at start-up. */
async function aiSdk(rung: ResolvedRung) {
  const [{ generateText }, { createOpenAICompatible }] = await Promise.all([import('ai'), import('@ai-sdk/openai-compatible')]);
  const provider = createOpenAICompatible({ name: rung.providerName, baseURL: rung.provider.baseURL, apiKey: rung.provider.apiKey, includeUsage: true });
  return { generateText, model: provider.chatModel(rung.rung.model) };
}

function usageOf(u: { inputTokens?: number; outputTokens?: number; inputTokenDetails?: { cacheReadTokens?: number } }): TurnUsage {
  const cached = u.inputTokenDetails?.cacheReadTokens ?? 0;
  return { inputTokens: Math.max(0, (u.inputTokens ?? 0) - cached), cachedInputTokens: cached, outputTokens: u.outputTokens ?? 0 };
}

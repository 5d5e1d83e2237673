/**
 * @module The `agent` settings of svc.json with their `${secrets.NAME}` / `${env.NAME}` references
 * resolved at start (DESIGN §7). A provider whose reference is not set is left out with a warning
 * (its rungs then fail their turns naming the rung), so the rest of the app still starts.
 */
import type { AgentProvider, AgentSettings } from '../contract/settings.js';
import type { Logger } from '../log.js';
import { resolveRefs } from '../secret-refs.js';

/** `settings` with provider URLs and keys resolved from `env`. */
export function agentSettings(settings: AgentSettings, env: NodeJS.ProcessEnv, logger: Logger): AgentSettings {
  const providers: Record<string, AgentProvider> = {};
  for (const [name, p] of Object.entries(settings.providers)) {
    try {
      providers[name] = {
        baseURL: resolveRefs(p.baseURL, env, `agent.providers.${name}.baseURL`),
        ...(p.apiKey !== undefined && { apiKey: resolveRefs(p.apiKey, env, `agent.providers.${name}.apiKey`) }),
      };
    } catch (err) {
      logger.warn(`${(err as Error).message}: the agent cannot use provider ${name} until it is set`);
    }
  }
  return { ...settings, providers };
}

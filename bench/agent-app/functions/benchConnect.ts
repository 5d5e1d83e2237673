// The benchmark's connect function: one signed-in caller connects many sessions, one per identityId.
interface Ctx {
  req: { bodyJson: { identityId: string; connectionId: string } };
  agent: { connect(options: Record<string, unknown>): Promise<{ channel: string; credits: number }> };
}

export default async (ctx: Ctx) => {
  const { identityId, connectionId } = ctx.req.bodyJson;
  return ctx.agent.connect({ identityId, connectionId, apiTools: 'none' });
};

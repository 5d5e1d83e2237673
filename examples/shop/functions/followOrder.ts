// Real-time from a function: only functions may use private channels (a ':' in the name), so the
// function decides who follows what. The caller must be able to read the order (get runs as the caller).
interface Ctx {
  req: { bodyJson: { connectionId: string; order: string } };
  res: { status?: number; bodyJson?: unknown };
  get(collection: string, params?: Record<string, string | number>): Promise<{ data: { id: string; status: string }[] }>;
  rt: {
    join(args: { connectionId: string; channel: string; readOnly?: boolean }): Promise<{ group: string }>;
    send(args: { channel: string; body: unknown }): Promise<{ group: string }>;
  };
}

export default async (ctx: Ctx) => {
  const { connectionId, order } = ctx.req.bodyJson;
  const found = await ctx.get('Order', { filter: `id eq "${order}"`, select: 'id,status', pageSize: 1 });
  if (found.data.length === 0) {
    ctx.res = { status: 404, bodyJson: { error: `no order ${order} that you may read`, code: 'NOT_FOUND' } };
    return;
  }
  const channel = `order:${order}`;
  const { group } = await ctx.rt.join({ connectionId, channel, readOnly: true });
  await ctx.rt.send({ channel, body: { order, status: found.data[0].status } });
  return { group };
};

// The shop's agent connect function (SPEC §4.11): the caller's own session, read-only API tools (every
// access rule still applies: the assistant acts as the signed-in user), and one UI tool the widget in
// public/index.html answers by showing the product.
interface Ctx {
  req: { bodyJson: { connectionId: string; message?: string } };
  me: { id: string } | null;
  agent: { connect(options: Record<string, unknown>): Promise<{ channel: string; credits: number }> };
}

export default async (ctx: Ctx) => {
  const { connectionId, message } = ctx.req.bodyJson;
  return ctx.agent.connect({
    identityId: ctx.me!.id,
    connectionId,
    message,
    apiTools: 'explicit',
    apiToolsAllow: ['GET-Product', 'GET-Customer', 'GET-Order', 'GET-OpenOrders', 'GET-Rates'],
    uiTools: {
      showProduct: {
        description: 'Shows one product on the page beside the chat, with its picture',
        params: { id: { type: 'string', description: 'The product id (from listProduct or getProduct)' } },
        required: ['id'],
      },
    },
  });
};

// Scheduled (see nightlyStock.json): one run per night across every instance; ctx.schedule.tick is the tick.
import type { FunctionContext } from 'svc/runtime';

export default async (ctx: FunctionContext) => {
  const low = await ctx.app.get('Product', { filter: 'stock lt 5 and active eq true', select: 'sku,stock', sortBy: 'stock', pageSize: 1000 });
  console.log(`stock check of ${ctx.schedule!.tick}: ${low.data.length} active products below 5`);
  return { low: low.data.length };
};

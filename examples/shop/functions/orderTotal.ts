// Default-export form: the context is the argument; the returned value is the 200 body.
import { linesTotal } from './lib/money.js';

interface Ctx {
  req: { query: { order: string } };
  get(collection: string, params?: Record<string, string | number | boolean>): Promise<{ data: { quantity: number; unitPrice: number }[] }>;
}

export default async ({ req, get }: Ctx) => {
  const lines = await get('OrderLine', { filter: `order eq "${req.query.order}"`, pageSize: 1000, lookups: 'id' });
  return { order: req.query.order, lines: lines.data.length, total: linesTotal(lines.data) };
};

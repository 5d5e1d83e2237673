// A typed POST: the declared requestBody is checked before this runs, so the fields are there and typed.
import { linesTotal } from './lib/money.js';

interface Body {
  customer: string;
  sku: string;
  quantity: number;
  dueOn?: string;
}
interface Product {
  id: string;
  name: string;
  price: number;
  stock: number;
  active: boolean;
}
interface Ctx {
  req: { bodyJson: Body };
  res: { status?: number; bodyJson?: unknown };
  get(collection: string, params?: Record<string, string | number | boolean>): Promise<{ data: Product[] }>;
  post(collection: string, body: unknown): Promise<{ data: string[] }>;
  validationErrors: (string | { path: string; message: string })[];
}

export default async (ctx: Ctx) => {
  const { customer, sku, quantity, dueOn } = ctx.req.bodyJson;
  if (quantity < 1) ctx.validationErrors.push({ path: '/body/quantity', message: 'quantity must be at least 1' });
  const found = await ctx.get('Product', { filter: `sku eq ${JSON.stringify(sku)} and active eq true`, pageSize: 1 });
  const product = found.data[0];
  if (!product) ctx.validationErrors.push({ path: '/body/sku', message: `no active product has SKU ${sku}` });
  if (ctx.validationErrors.length > 0) return;
  if (product.stock < quantity) {
    ctx.res = { status: 409, bodyJson: { error: `only ${product.stock} of ${sku} in stock`, code: 'OUT_OF_STOCK' } };
    return;
  }
  const lines = [{ product: { id: product.id }, quantity, unitPrice: product.price }];
  const total = linesTotal(lines.map((l) => ({ quantity: l.quantity, unitPrice: l.unitPrice })));
  const created = await ctx.post('Order', {
    title: `${quantity} × ${product.name}`,
    customer: { id: customer },
    total,
    ...(dueOn && { dueOn }),
    'OrderLine.order': lines,
  });
  // Output goes to the server log and the console's log store, with this call's request id.
  console.log(`placed order ${created.data[0]}: ${quantity} × ${sku}, total ${total}`);
  ctx.res = { status: 201, bodyJson: { order: created.data[0], total } };
};

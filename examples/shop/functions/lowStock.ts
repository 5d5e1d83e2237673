// Script form: the context fields are globals, `await` works at the top level, and `res` is assigned.
declare let res: { status?: number; bodyJson?: unknown };
declare const req: { query: { below?: number; category?: string } };
declare function get(collection: string, params?: Record<string, string | number | boolean>): Promise<{ data: unknown[] }>;
declare const validationErrors: (string | { path: string; message: string })[];

const below = req.query.below ?? 5;
if (below < 0) validationErrors.push({ path: '/query/below', message: 'below must not be negative' });
const filters = [`stock lt ${below}`, 'active eq true'];
if (req.query.category) filters.push(`category eq "${req.query.category}"`);
const products = await get('Product', { filter: filters.join(' and '), select: 'sku,name,stock', sortBy: 'stock', pageSize: 100 });
res = { status: 200, bodyJson: { below, products: products.data } };

// Run by triggers/receiptOnPaid.json as a job: ctx.event is the change, with the app's rights.
import type { FunctionContext } from 'svc/runtime';

export default async (ctx: FunctionContext) => {
  const order = ctx.event!.after as { id: string; title: string; total: number; customer: { id: string } };
  const found = await ctx.app.get('Customer', { filter: `id eq "${order.customer.id}"`, select: 'name,email' });
  const customer = found.data[0] as { name: string; email: string | null } | undefined;
  if (!customer?.email) return { skipped: 'the customer has no e-mail address' };
  await ctx.mail.send({
    to: customer.email,
    subject: `Receipt for ${order.title}`,
    text: `Hello ${customer.name},\n\nthank you: order "${order.title}" (${order.total} EUR) is paid.\n\nReceipt ${ctx.event!.id}\n`,
  });
  return { sent: true };
};

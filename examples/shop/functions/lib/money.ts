/** Money helpers shared by several functions (SPEC §4.8 rule 5: share code through modules). */

/** Rounds an amount in EUR to cents. */
export function roundCents(amount: number): number {
  return Math.round(amount * 100) / 100;
}

/** The total of order lines, in EUR. */
export function linesTotal(lines: { quantity: number; unitPrice: number }[]): number {
  return roundCents(lines.reduce((sum, l) => sum + l.quantity * l.unitPrice, 0));
}

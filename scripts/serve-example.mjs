#!/usr/bin/env node
// `npm run example`'s last step: starts the shop's rates provider (examples/shop/provider) on port
// 4010, then `svc serve examples/shop` with the provider's demo secret in SVC_SECRET_RATES (unless
// already set), and stops both on Ctrl-C / SIGTERM.
import { spawn } from 'node:child_process';
import { startRatesProvider, CLIENT } from '../examples/shop/provider/rates-provider.mjs';

let provider;
try {
  provider = await startRatesProvider(4010);
} catch (err) {
  console.warn(`rates provider not started (${err.code ?? err.message}): /api/Rates will answer 502`);
}
const child = spawn(process.execPath, ['dist/cli/index.js', 'serve', 'examples/shop'], {
  stdio: 'inherit',
  env: { ...process.env, SVC_SECRET_RATES: process.env.SVC_SECRET_RATES ?? CLIENT.secret },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill('SIGTERM'));
child.on('exit', (code) => {
  provider?.close();
  process.exit(code ?? 0);
});

#!/usr/bin/env node
// `npm run example`'s last step: starts the shop's offline stand-ins (examples/shop/provider) — the
// rates provider on port 4010, the demo model on port 4020 and the demo OpenID Connect issuer on port
// 4030 — then `svc serve examples/shop` with the provider's demo secret in SVC_SECRET_RATES, the
// issuer's client secret in SVC_SECRET_DEMO_OIDC and the demo model's URL in SHOP_MODEL_URL (unless
// already set), and stops them all on Ctrl-C / SIGTERM.
import { spawn } from 'node:child_process';
import { startRatesProvider, CLIENT } from '../examples/shop/provider/rates-provider.mjs';
import { startDemoModel } from '../examples/shop/provider/demo-model.mjs';
import { startDemoOidc, OIDC_CLIENT } from '../examples/shop/provider/demo-oidc.mjs';

let provider;
try {
  provider = await startRatesProvider(4010);
} catch (err) {
  console.warn(`rates provider not started (${err.code ?? err.message}): /api/Rates will answer 502`);
}
let model;
if (!process.env.SHOP_MODEL_URL) {
  try {
    model = await startDemoModel(4020);
  } catch (err) {
    console.warn(`demo model not started (${err.code ?? err.message}): the chat widget's turns will fail`);
  }
}
let oidc;
try {
  oidc = await startDemoOidc(4030, 'http://127.0.0.1:3000');
} catch (err) {
  console.warn(`demo OpenID issuer not started (${err.code ?? err.message}): "Continue with Demo ID" will fail`);
}
const child = spawn(process.execPath, ['dist/cli/index.js', 'serve', 'examples/shop'], {
  stdio: 'inherit',
  env: {
    ...process.env,
    SVC_SECRET_RATES: process.env.SVC_SECRET_RATES ?? CLIENT.secret,
    SVC_SECRET_DEMO_OIDC: process.env.SVC_SECRET_DEMO_OIDC ?? OIDC_CLIENT.secret,
    SHOP_MODEL_URL: process.env.SHOP_MODEL_URL ?? 'http://127.0.0.1:4020/v1',
  },
});
console.log(
  `The console: http://127.0.0.1:${process.env.PORT ?? 3000}/_/ (sign in as an admin; make an admin service account with ` +
    '`node dist/cli/index.js service-account create examples/shop --name console --admin`)',
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill('SIGTERM'));
child.on('exit', (code) => {
  provider?.close();
  model?.close();
  oidc?.close();
  process.exit(code ?? 0);
});

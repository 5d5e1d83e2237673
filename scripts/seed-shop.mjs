#!/usr/bin/env node
// Seeds examples/shop (or the app folder given) with a few thousand realistic rows, loaded through
// the HTTP API of a server this script starts and stops, signed in as the demo user (created on the
// first run: username "demo", password "demo-password", role "admin" of the shop's access rules, an admin user who may use the console; for
// local use only). Skips when the database already has customers. Deterministic: the same rows every
// time (seeded PRNG).
import { resolve } from 'node:path';
import sharp from 'sharp';
import { createUserInApp, startServer } from '../dist/runtime/index.js';

process.env.SVC_LOG_LEVEL ??= 'warn';

const appDir = resolve(process.argv[2] ?? 'examples/shop');
let seed = 20240131;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const FIRST = [
  'Ada',
  'Björn',
  'Chloé',
  'Dmitri',
  'Elif',
  'Farah',
  'Goran',
  'Hana',
  'Ingrid',
  'João',
  'Kenji',
  'Lena',
  'Mateo',
  'Nora',
  'Olu',
  'Priya',
  'Quinn',
  'Rosa',
  'Søren',
  'Tariq',
  'Uma',
  'Viktor',
  'Wen',
  'Ximena',
  'Yusuf',
  'Zoë',
];
const LAST = [
  'Andersen',
  'Berg',
  'Costa',
  'Dubois',
  'Eriksen',
  'Fischer',
  'García',
  'Haugen',
  'Ivanova',
  'Johansen',
  'Kowalski',
  'Larsen',
  'Müller',
  'Nakamura',
  'Okafor',
  'Petrov',
  'Rossi',
  'Schmidt',
  'Tanaka',
  'Øvrebø',
];
const COUNTRIES = ['NO', 'SE', 'DK', 'DE', 'FR', 'ES', 'IT', 'PL', 'GB', 'US', 'JP', 'BR'];
const CATEGORIES = {
  books: ['Atlas', 'Cookbook', 'Novel', 'Field Guide', 'Poetry Collection'],
  games: ['Chess Set', 'Puzzle', 'Card Game', 'Board Game', 'Dice Set'],
  garden: ['Rake', 'Watering Can', 'Seed Mix', 'Planter', 'Hose'],
  kitchen: ['Kettle', 'Chef Knife', 'Cast Iron Pan', 'Teapot', 'Cutting Board'],
  tools: ['Hammer', 'Screwdriver Set', 'Drill', 'Tape Measure', 'Spirit Level'],
};
const ADJ = ['Classic', 'Compact', 'Deluxe', 'Nordic', 'Sturdy', 'Vintage', 'Handmade', 'Everyday'];

const DEMO = { username: 'demo', password: 'demo-password' };
let auth = {};

const COLOURS = { books: '#2f5d8a', games: '#8a2f5d', garden: '#3d7a2f', kitchen: '#b5651d', tools: '#555b66' };
const escapeXml = (s) => s.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** A product photo stand-in: an 800×600 JPEG with the product's name on its category's colour. */
function productImage(product) {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600"><rect width="800" height="600" fill="${COLOURS[product.category]}"/><text x="400" y="310" font-family="sans-serif" font-size="48" fill="white" text-anchor="middle">${escapeXml(product.name)}</text><text x="400" y="380" font-family="sans-serif" font-size="28" fill="white" text-anchor="middle">${product.sku}</text></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 80 }).toBuffer();
}

/** Uploads a product's image (multipart, part "file"), as a browser form would. */
async function uploadImage(base, id, product) {
  const form = new FormData();
  form.append('file', new Blob([await productImage(product)], { type: 'image/jpeg' }), `${product.sku}.jpg`);
  const res = await fetch(`${base}/Product/${id}/image`, { method: 'POST', headers: auth, body: form });
  if (res.status !== 200) throw new Error(`upload ${product.sku}.jpg: ${res.status} ${await res.text()}`);
}

async function post(base, collection, rows) {
  const ids = [];
  for (let i = 0; i < rows.length; i += 500) {
    const res = await fetch(`${base}/${collection}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify(rows.slice(i, i + 500)),
    });
    if (res.status !== 201) throw new Error(`POST ${collection}: ${res.status} ${await res.text()}`);
    ids.push(...(await res.json()).data);
  }
  return ids;
}

try {
  await createUserInApp(appDir, { ...DEMO, roles: ['admin'], admin: true });
  console.log(`seed: created the demo user (username "${DEMO.username}", password "${DEMO.password}")`);
} catch (err) {
  if (err.code !== 'CONFLICT') throw err; // the demo user exists from an earlier run
}
// The example's external collection reads its secret at start (see scripts/serve-example.mjs).
// The shop's references need values to start without warnings; seeding calls neither the rates provider nor a model.
const server = await startServer({
  appDir,
  port: 0,
  env: { SVC_SECRET_RATES: 'demo-secret', SHOP_MODEL_URL: 'http://127.0.0.1:4020/v1', ...process.env, SVC_LOG_LEVEL: 'warn' },
});
try {
  const signIn = await fetch(`${server.url}/_auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authority: 'password', ...DEMO }),
  });
  if (signIn.status !== 200) throw new Error(`sign-in as ${DEMO.username}: ${signIn.status} ${await signIn.text()}`);
  auth = { authorization: `Bearer ${(await signIn.json()).access_token}` };
  const existing = await (await fetch(`${server.url}/Customer?count=only`, { headers: auth })).json();
  if (existing.meta?.count > 0) {
    console.log(`seed: ${existing.meta.count} customers already there, nothing to do`);
  } else {
    const customers = Array.from({ length: 300 }, () => {
      const first = pick(FIRST);
      const last = pick(LAST);
      return {
        name: `${first} ${last}`,
        email: `${first}.${last}${int(1, 99)}@example.com`.toLowerCase(),
        country: pick(COUNTRIES),
        vip: rand() < 0.1,
        since: `20${int(15, 24)}-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')}`,
      };
    });
    const customerIds = await post(server.url, 'Customer', customers);
    const products = Array.from({ length: 200 }, (_, i) => {
      const category = pick(Object.keys(CATEGORIES));
      return {
        sku: `SKU-${String(i + 1).padStart(5, '0')}`,
        name: `${pick(ADJ)} ${pick(CATEGORIES[category])}`,
        category,
        price: int(199, 49999) / 100,
        stock: int(0, 500),
        active: rand() < 0.95,
        description: `A ${category} item from our ${pick(ADJ).toLowerCase()} range.`,
      };
    });
    const productIds = await post(server.url, 'Product', products);
    for (let i = 0; i < 12; i++) await uploadImage(server.url, productIds[i], products[i]);
    const orderLines = [];
    const orders = Array.from({ length: 1500 }, (_, i) => {
      const day = new Date(Date.UTC(2024, 0, 1) + int(0, 700) * 86400000 + int(0, 86399) * 1000);
      const status = pick(['new', 'paid', 'paid', 'shipped', 'shipped', 'cancelled']);
      let cents = 0;
      for (let n = int(1, 4); n > 0; n--) {
        const p = int(0, products.length - 1);
        const quantity = int(1, 5);
        cents += Math.round(quantity * products[p].price * 100);
        orderLines.push({ orderIndex: i, product: { id: productIds[p] }, quantity, unitPrice: products[p].price });
      }
      return {
        title: `Order #${10000 + i}`,
        customer: { id: pick(customerIds) },
        status,
        paid: status === 'paid' || status === 'shipped',
        total: cents / 100,
        placedAt: day.toISOString(),
        dueOn: new Date(day.getTime() + int(2, 14) * 86400000).toISOString().slice(0, 10),
      };
    });
    const orderIds = await post(server.url, 'Order', orders);
    const lines = orderLines.map(({ orderIndex, ...line }) => ({ order: { id: orderIds[orderIndex] }, ...line }));
    await post(server.url, 'OrderLine', lines);
    console.log(`seed: ${customerIds.length} customers, ${productIds.length} products, ${orderIds.length} orders, ${lines.length} order lines`);
    console.log(`seed: images for the first 12 products, e.g. GET /api/Product/${productIds[0]}/image?thumb=200x200`);
  }
} finally {
  await server.close();
}

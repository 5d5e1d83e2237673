/**
 * @module The lines `svc serve` and `svc dev` print once serving: the API's URL (the first line's
 * format is read by scripts and tests: `svc: serving <name> at <url>`), then the console and the
 * hosted sign-in page.
 */

/** What the banner needs of a running server. */
export interface BannerServer {
  url: string;
  manifest: { name: string; settings: { console?: boolean } };
}

/** The banner's lines, each ending in a newline. */
export function servingBanner(server: BannerServer): string {
  const origin = server.url.replace(/\/api\/?$/, '');
  const console = server.manifest.settings.console !== false ? `svc: console (admins) at ${origin}/_/\n` : '';
  return `svc: serving ${server.manifest.name} at ${server.url}\n${console}svc: sign-in page at ${origin}/login\n`;
}

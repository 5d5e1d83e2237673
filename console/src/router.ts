/** Hash routing under `/_/`: `#/data/Product/<id>` → `['data', 'Product', '<id>']`. */
import { useEffect, useState } from 'preact/hooks';

/** The segments of the route in the address bar now (not as of the last render). */
export function currentRoute(): string[] {
  return location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
}

/** The current route's segments; re-renders on every hash change. */
export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const on = () => setRoute(currentRoute());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** The `href` of a route: `href('data', 'Product', id)` → `#/data/Product/<id>`. */
export function href(...segments: string[]): string {
  return `#/${segments.map(encodeURIComponent).join('/')}`;
}

/** Goes to a route. */
export function go(...segments: string[]): void {
  location.hash = href(...segments);
}

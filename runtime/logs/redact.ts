/**
 * @module What of a request's URL the log store may keep (DESIGN §9): the path as sent, and the query
 * string with the value of every parameter whose name looks like a credential replaced by
 * `[redacted]`. Names are matched case-insensitively on `token`, `secret`, `key`, `pass` (password,
 * passphrase), `auth`, `sig` (signatures of signed URLs), `code` (OAuth codes), `credential`,
 * `session`, `cookie`; `access_token`, `apiKey`, `X-Amz-Signature` all match. `lastKey` (the keyset
 * cursor of SPEC §4.2, an item id, no secret) is kept as sent. A parameter that is not valid
 * percent-encoding is matched as sent. The process log's request lines (`trackRequest`) use the same
 * `redactPath`, so stdout and the log store keep the same text.
 */

/** Parameter names whose values are never stored. */
export const SECRET_PARAMETER = /token|secret|key|pass|auth|sig|code|credential|session|cookie/i;

/** Parameter names that match `SECRET_PARAMETER` but carry no secret: the keyset cursor `lastKey` (SPEC §4.2). */
const NOT_SECRET = /^lastKey$/i;

/** Longest stored path, characters (the rest is cut with `…`). */
const MAX_PATH = 2000;

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/**
 * `url` (path and query, as in `req.url`) fit for the log store and the process log: secret parameter
 * values replaced by `[redacted]`, at most 2,000 characters (then cut with `…`). Never throws.
 * @example redactPath('/api/Order?token=abc&pageSize=2') === '/api/Order?token=[redacted]&pageSize=2'
 */
export function redactPath(url: string): string {
  const q = url.indexOf('?');
  let out = url;
  if (q >= 0) {
    const parts = url
      .slice(q + 1)
      .split('&')
      .map((part) => {
        const eq = part.indexOf('=');
        const name = eq < 0 ? part : part.slice(0, eq);
        const decoded = decodedName(name);
        return SECRET_PARAMETER.test(decoded) && !NOT_SECRET.test(decoded) ? `${name}=[redacted]` : part;
      });
    out = `${url.slice(0, q)}?${parts.join('&')}`;
  }
  return out.length > MAX_PATH ? `${out.slice(0, MAX_PATH)}…` : out;
}

/**
 * Debian's HAProxy as `findOrInstall` (scripts/debian-package.mjs) looks for it, for the e2e test
 * (test/support/haproxy.ts) and bench/load-balancer.mjs: `SVC_TEST_HAPROXY` first, then the package's path.
 */
export const HAPROXY_PROGRAM = Object.freeze({
  label: 'HAProxy',
  debianPackage: 'haproxy',
  debianPath: '/usr/sbin/haproxy',
  names: ['haproxy'],
  envOverride: 'SVC_TEST_HAPROXY',
});

/**
 * The HAProxy configuration docs/deploy.md documents, shared by bench/load-balancer.mjs and the e2e
 * test (test/support/haproxy.ts): HTTP mode, round robin without stickiness, health checks on
 * `/api/_ready`, WebSocket-friendly timeouts, and a request whose connection to an instance fails
 * sent to another one (nothing is retried once it reached an instance).
 *
 * @param {string} bind - the frontend's address, e.g. `127.0.0.1:8080`
 * @param {{ name: string, address: string }[]} upstreams - the `svc serve` processes (`host:port`)
 * @param {string} socketPath - the admin socket (`show stat` reads server states)
 * @param {number} [maxconn] - connections the frontend and the process accept (default 4000; each
 *   needs two file descriptors, so the process's limit must be above twice this)
 * @param {string} [tlsPem] - a PEM file with the certificate and its key: the frontend terminates TLS
 *   and tells svc the public origin with `X-Forwarded-Proto: https` and `X-Forwarded-Host`
 *   (docs/deploy.md "Behind a TLS-terminating proxy")
 * @returns {string} the configuration file's text
 */
export function haproxyConfig(bind, upstreams, socketPath, maxconn = 4000, tlsPem = undefined) {
  return `global
  maxconn ${maxconn}
  stats socket ${socketPath} mode 600 level admin

defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout http-request 10s
  timeout http-keep-alive 10s
  timeout queue 5s
  # A WebSocket is a tunnel after the upgrade: svc pings every 15 s (hub) / 20 s (Web PubSub).
  timeout tunnel 1h
  timeout client-fin 5s
  # A request whose connection to an instance fails (refused: the instance is gone or stopped
  # listening) goes to another one; nothing is retried once it reached an instance.
  retries 3
  option redispatch 1

frontend svc
  bind ${bind}${tlsPem ? ` ssl crt ${tlsPem}` : ''}
  maxconn ${maxconn}
  option forwardfor
${tlsPem ? '  http-request set-header X-Forwarded-Proto https\n  http-request set-header X-Forwarded-Host %[req.hdr(host)]\n' : ''}  default_backend svc

backend svc
  balance roundrobin
  option httpchk GET /api/_ready
  http-check expect status 200
  default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down maxconn ${maxconn}
${upstreams.map((u) => `  server ${u.name} ${u.address} check`).join('\n')}
`;
}

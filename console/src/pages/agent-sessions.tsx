/**
 * The agent page's running sessions (DESIGN §9 `GET /api/_admin/agent/sessions`, every instance) with
 * each session's MCP servers and their statuses, refreshed every 5 seconds, and the MCP servers the
 * app configures (`GET /api/_admin/agent/mcp-servers`: name, transport, time limit, usable).
 * Test hooks: `#agent-sessions tr[data-key=<identityId>]`, `li[data-mcp-server=<name>]` with
 * `data-mcp-status`, `#mcp-servers tr[data-key=<name>]`.
 */
import { useEffect, useState } from 'preact/hooks';
import { Table, Unavailable, useGet } from '../ui';

interface McpStatus {
  name: string;
  status: string;
}

interface Session {
  identityId: string;
  instance: string;
  channel: string | null;
  state: string | null;
  threadId: string | null;
  startedAt: string | null;
  sessionCredits: number;
  sessionCreditsUsed: number;
  mcp?: McpStatus[];
}

const SESSION_COLUMNS: (keyof Session)[] = ['identityId', 'instance', 'channel', 'state', 'threadId', 'startedAt', 'sessionCredits', 'sessionCreditsUsed'];

const statusClass = (status: string) => (status === 'connected' ? 'ok' : status === 'failed' ? 'error' : 'muted');

/** A session's MCP servers, one line each: the name and its status. */
function McpList({ servers }: { servers: McpStatus[] }) {
  if (servers.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="mcp-list">
      {servers.map((s) => (
        <li data-mcp-server={s.name} data-mcp-status={s.status}>
          {s.name}: <span class={statusClass(s.status)}>{s.status}</span>
        </li>
      ))}
    </ul>
  );
}

function SessionsTable({ sessions }: { sessions: Session[] }) {
  if (sessions.length === 0) return <p class="muted">No session is running.</p>;
  return (
    <table class="table" id="agent-sessions">
      <thead>
        <tr>
          {SESSION_COLUMNS.map((c) => (
            <th>{c}</th>
          ))}
          <th>MCP servers</th>
        </tr>
      </thead>
      <tbody>
        {sessions.map((s) => (
          <tr data-key={s.identityId}>
            {SESSION_COLUMNS.map((c) => (
              <td data-col={c}>{s[c] === null || s[c] === undefined ? '' : String(s[c])}</td>
            ))}
            <td data-col="mcp">
              <McpList servers={s.mcp ?? []} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Running sessions with their MCP statuses, then the configured MCP servers. */
export function AgentSessions() {
  const [again, setAgain] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setAgain((n) => n + 1), 5000);
    return () => clearInterval(timer);
  }, []);
  const sessions = useGet<{ data?: Session[] }>('/_admin/agent/sessions', again);
  const servers = useGet<{ data?: Record<string, unknown>[] }>('/_admin/agent/mcp-servers');
  return (
    <>
      <h3>
        Running sessions{' '}
        <button type="button" id="sessions-refresh" onClick={() => setAgain((n) => n + 1)}>
          Refresh
        </button>
      </h3>
      {sessions &&
        (sessions.status === 200 ? <SessionsTable sessions={sessions.body.data ?? []} /> : <Unavailable path="/api/_admin/agent/sessions" answer={sessions} />)}
      <h3>MCP servers</h3>
      {servers &&
        (servers.status === 200 ? (
          (servers.body.data ?? []).length === 0 ? (
            <p class="muted" id="mcp-servers-none">
              No MCP server is configured (svc.json agent.mcpServers).
            </p>
          ) : (
            <Table id="mcp-servers" rows={servers.body.data ?? []} columns={['name', 'transport', 'timeoutMs', 'usable']} rowKey={(r) => String(r.name)} />
          )
        ) : (
          <Unavailable path="/api/_admin/agent/mcp-servers" answer={servers} />
        ))}
    </>
  );
}

/**
 * Agent (DESIGN §7 credits, §9 agent endpoints): the credits panel (`GET`/`PATCH /api/_agent/credits`:
 * mode, balance or consumption, this month's use, the cap, pause and resume, top-up), running
 * sessions with their MCP servers' statuses and the configured MCP servers (agent-sessions.tsx),
 * threads per identity with their transcripts, and a chart of credits per day: all of them and each
 * source's (thread turns, `ctx.agent.ask`, `compact`), so it adds up to the panel's month use.
 */
import { useMemo, useState } from 'preact/hooks';
import { api, messageOf, qs } from '../api';
import { Json, plural, Table, Unavailable, useGet } from '../ui';
import { Chart } from './chart';
import { AgentSessions } from './agent-sessions';

/** What spends credits, as `bySource` of `/api/_admin/agent/usage` names it. */
const SOURCES = ['turn', 'ask', 'compact'] as const;

/** One step of `/api/_admin/agent/usage`. */
interface UsageStep {
  time: string;
  credits: number;
  turns: number;
  bySource?: Partial<Record<(typeof SOURCES)[number], number>>;
}

interface Credits {
  mode: string;
  credits: number;
  monthlyCap: number | null;
  monthUsed: number;
  paused: boolean;
}

function CreditsPanel() {
  const [again, setAgain] = useState(0);
  const [cap, setCap] = useState('');
  const [topUp, setTopUp] = useState('');
  const [message, setMessage] = useState('');
  const state = useGet<Credits>('/_agent/credits', again);
  const change = async (body: Record<string, unknown>) => {
    try {
      await api('PATCH', '/_agent/credits', body);
      setMessage('Saved');
      setAgain(again + 1);
    } catch (err) {
      setMessage(messageOf(err));
    }
  };
  if (!state) return null;
  if (state.status !== 200) return <Unavailable path="/api/_agent/credits" answer={state} />;
  const c = state.body;
  return (
    <section id="credits">
      <h3>Credits</h3>
      <dl class="props">
        <div class="prop">
          <dt>Mode</dt>
          <dd id="credits-mode">{c.mode}</dd>
        </div>
        <div class="prop">
          <dt>{c.mode === 'self-serve' ? 'Balance' : 'Consumed'}</dt>
          <dd id="credits-value">{String(c.credits)}</dd>
        </div>
        <div class="prop">
          <dt>This month</dt>
          <dd id="credits-month">{String(c.monthUsed)}</dd>
        </div>
        <div class="prop">
          <dt>Monthly cap</dt>
          <dd id="credits-cap">{c.monthlyCap === null ? 'none' : String(c.monthlyCap)}</dd>
        </div>
        <div class="prop">
          <dt>Paused</dt>
          <dd id="credits-paused">{c.paused ? 'yes' : 'no'}</dd>
        </div>
      </dl>
      <div class="toolbar">
        <input id="cap-input" placeholder="monthly cap (empty: none)" value={cap} onInput={(e) => setCap(e.currentTarget.value)} />
        <button type="button" id="set-cap" onClick={() => change({ monthlyCap: cap.trim() === '' ? null : Number(cap) })}>
          Set cap
        </button>
        <button type="button" id="toggle-pause" onClick={() => change({ paused: !c.paused })}>
          {c.paused ? 'Resume' : 'Pause'}
        </button>
        {c.mode === 'self-serve' && (
          <>
            <input id="topup-input" placeholder="top-up credits" value={topUp} onInput={(e) => setTopUp(e.currentTarget.value)} />
            <button type="button" id="topup" onClick={() => change({ addBalance: Number(topUp) })}>
              Top up
            </button>
          </>
        )}
      </div>
      {message && (
        <p class="notice" id="credits-message">
          {message}
        </p>
      )}
    </section>
  );
}

interface Thread {
  id: string;
  preview?: string;
  credits?: number;
  turns?: { seq: number; userText: string; status: string; error: string | null; credits: number; createdAt: string; items: unknown[] }[];
}

type Item = Record<string, unknown> & { type?: string };

/** One `history` item of a turn as a line of text: messages, tool and MCP calls, approvals, errors. */
function itemText(item: Item): string {
  if (item.type === 'approval') {
    const outcome = item.approved === true ? 'approved' : item.reason === 'timeout' ? 'declined (no answer in time)' : 'declined';
    return `approval ${outcome}: ${String(item.summary ?? item.tool)}${typeof item.note === 'string' ? ` — note: ${item.note}` : ''}`;
  }
  const name = item.name ?? item.tool ?? item.server;
  if (typeof item.type === 'string' && item.type.startsWith('tool')) return `${item.type}${name ? ` ${String(name)}` : ''}`;
  if (typeof item.text === 'string') return `${item.type ?? 'text'}: ${item.text}`;
  if (typeof item.message === 'string') return `${item.type ?? 'message'}: ${item.message}`;
  return `${item.type ?? 'item'}${name ? ` ${String(name)}` : ''}`;
}

/**
 * A thread's transcript: each turn with the user's text, its status, error and credits, and its items
 * (messages, tool and MCP calls), one line each, with every item as JSON below.
 */
function Transcript({ thread }: { thread: Thread }) {
  return (
    <section id="transcript">
      <h4>
        Thread {thread.id} <small class="muted">{plural(thread.credits ?? 0, 'credit')}</small>
      </h4>
      {(thread.turns ?? []).map((t) => (
        <details class="turn" open data-seq={t.seq}>
          <summary>
            #{t.seq} {t.userText} — {t.status}, <span data-turn-credits>{t.credits}</span> credits{t.error ? ` — error: ${t.error}` : ''}
          </summary>
          <ul class="items">
            {(t.items as Item[]).map((item) => (
              <li
                data-item={String(item.type ?? '')}
                data-tool={typeof item.name === 'string' && String(item.type ?? '').startsWith('tool') ? item.name : undefined}
              >
                {itemText(item)}
              </li>
            ))}
          </ul>
          <details>
            <summary>Items as JSON</summary>
            <Json value={t.items} />
          </details>
        </details>
      ))}
    </section>
  );
}

export function AgentPage() {
  const [identity, setIdentity] = useState('');
  const [appliedIdentity, setAppliedIdentity] = useState('');
  const [thread, setThread] = useState<string>();
  const threads = useGet<{ data?: Record<string, unknown>[] }>(appliedIdentity ? `/_admin/agent/threads${qs({ identity: appliedIdentity })}` : undefined);
  const transcript = useGet(thread ? `/_admin/agent/threads/${encodeURIComponent(thread)}` : undefined);
  const from = useMemo(() => new Date(Date.now() - 30 * 86400_000).toISOString(), []);
  const usage = useGet<{ data?: UsageStep[] }>(`/_admin/agent/usage${qs({ from, step: 86400 })}`);
  const usageSeries = useMemo(() => {
    if (usage?.status !== 200) return undefined;
    const list = usage.body?.data ?? [];
    const times = list.map((e) => Date.parse(e.time) / 1000);
    // Every credit spent, then its split: thread turns, ctx.agent.ask, compact (GET /api/_admin/agent/usage).
    const series = [
      { label: 'all credits', values: list.map((e) => Number(e.credits ?? 0)) },
      ...SOURCES.map((source) => ({ label: source, values: list.map((e) => Number(e.bySource?.[source] ?? 0)) })),
    ];
    return { times, series };
  }, [usage]);
  return (
    <div class="page">
      <h2>Agent</h2>
      <CreditsPanel />
      {usageSeries && usageSeries.times.length > 0 && (
        <section>
          <h3>Credits per day, by source</h3>
          <Chart times={usageSeries.times} series={usageSeries.series} id="usage-chart" />
        </section>
      )}
      <AgentSessions />
      <h3>Threads</h3>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setAppliedIdentity(identity);
        }}
      >
        <input id="threads-identity" placeholder="identity id" value={identity} onInput={(e) => setIdentity(e.currentTarget.value)} />
        <button type="submit" id="show-threads">
          Show threads
        </button>
      </form>
      {threads &&
        (threads.status === 200 ? (
          <Table id="threads" rows={threads.body.data ?? []} onRow={(t) => setThread(String(t.id))} rowKey={(t) => String(t.id)} />
        ) : (
          <Unavailable path="/api/_admin/agent/threads" answer={threads} />
        ))}
      {thread &&
        transcript &&
        (transcript.status === 200 ? (
          <Transcript thread={transcript.body as Thread} />
        ) : (
          <Unavailable path="/api/_admin/agent/threads/{id}" answer={transcript} />
        ))}
    </div>
  );
}

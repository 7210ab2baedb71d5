import { useState } from "preact/hooks";
import { api } from "./api";
import { PoolOffers } from "./cost";
import { formatNumber } from "./formatting";
import { Breadcrumbs, TabLinks } from "./layout";
import { Cluster } from "./pages";
import { usePoll } from "./poll";

// The cluster's tabs (/clusters, /clusters/historical-usage; Determined's /cluster/… and /jobs
// lead here too) and one resource pool's page (/resourcepool/{name}).
const TABS: [string, string][] = [["overview", "Overview"], ["historical-usage", "Historical usage"]];

export function ClusterPage(props: { tab?: string }) {
  const tab = props.tab === "historical-usage" ? "historical-usage" : "overview";
  return (
    <div>
      <Breadcrumbs crumbs={[["Cluster", "/clusters"], [TABS.find(([t]) => t === tab)![1]]]} />
      <TabLinks label="Cluster views" base="/clusters" tabs={TABS} current={tab} />
      {tab === "overview" ? <Cluster /> : <HistoricalUsage />}
    </div>
  );
}

type Entry = { periodStart: string; seconds: number; byUsername: Record<string, number>;
  byResourcePool: Record<string, number>; byExperimentLabel: Record<string, number> };

const day = (d: Date) => d.toISOString().slice(0, 10);

// Sums one breakdown (by user, by pool) over the shown days, largest first, in hours.
export function totals(entries: Entry[], key: "byUsername" | "byResourcePool"): [string, number][] {
  const sum = new Map<string, number>();
  for (const e of entries) {
    for (const [k, v] of Object.entries(e[key] ?? {})) sum.set(k, (sum.get(k) ?? 0) + v / 3600);
  }
  return [...sum.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

function HistoricalUsage() {
  const [range, setRange] = useState(() => {
    const end = new Date();
    const start = new Date(end.getTime() - 13 * 86400_000);
    return [day(start), day(end)];
  });
  const [data, err] = usePoll(() => api<{ resourceEntries: Entry[] }>(
    `/api/v1/resources/allocation/aggregated?startDate=${range[0]}&endDate=${range[1]}` +
    "&period=RESOURCE_ALLOCATION_AGGREGATION_PERIOD_DAILY"), [range[0], range[1]], 60000);
  const entries = data?.resourceEntries ?? [];
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Historical usage</h1>
      <form class="toolbar" aria-label="Usage period" onSubmit={(e) => {
        e.preventDefault();
        const f = new FormData(e.currentTarget as HTMLFormElement);
        const a = String(f.get("start")), b = String(f.get("end"));
        if (a && b && a <= b) setRange([a, b]);
      }}>
        <label>From <input type="date" name="start" defaultValue={range[0]} /></label>
        <label>to <input type="date" name="end" defaultValue={range[1]} /></label>
        <button type="submit">Show</button>
        <a href={`/resources/allocation/allocations-csv?timestamp_after=${range[0]}T00:00:00Z&timestamp_before=${range[1]}T23:59:59Z`}
          download="allocations.csv">Download allocations (CSV)</a>
      </form>
      {err && <p role="alert" class="error">{/not found/i.test(err) ? "This master does not report historical usage." : err}</p>}
      {data && <UsageBars entries={entries} />}
      <div class="side-by-side">
        <Breakdown title="Slot hours by user" rows={totals(entries, "byUsername")} />
        <Breakdown title="Slot hours by resource pool" rows={totals(entries, "byResourcePool")} />
      </div>
    </section>
  );
}

function Breakdown(props: { title: string; rows: [string, number][] }) {
  return (
    <table><caption>{props.title}</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">Hours</th></tr></thead>
      <tbody>{props.rows.map(([k, h]) => <tr><td>{k}</td><td>{formatNumber(Number(h.toFixed(2)))}</td></tr>)}</tbody>
    </table>
  );
}

// Slot hours per day as bars, with both axes labelled; the table under it is the same data in
// words (and what a screen reader reads).
function UsageBars(props: { entries: Entry[] }) {
  const W = 720, H = 220, L = 56, B = 40, T = 12;
  const rows = props.entries.map((e) => [e.periodStart.slice(0, 10), e.seconds / 3600] as [string, number]);
  const max = Math.max(1, ...rows.map(([, h]) => h));
  const step = rows.length ? (W - L - 8) / rows.length : 0;
  const y = (h: number) => T + (H - T - B) * (1 - h / max);
  const ticks = [0, max / 2, max];
  return (
    <figure>
      <svg width={W} height={H} role="img" aria-label={`Slot hours per day, ${rows.length} days, at most ${formatNumber(Number(max.toFixed(2)))} hours`} id="usage-chart">
        {ticks.map((v) => (
          <g><line x1={L} x2={W - 8} y1={y(v)} y2={y(v)} stroke="currentColor" stroke-opacity="0.2" />
            <text x={L - 6} y={y(v) + 4} text-anchor="end" fill="currentColor" font-size="11">{formatNumber(Number(v.toFixed(1)))}</text></g>))}
        {rows.map(([d, h], i) => (
          <g><rect x={L + i * step + 2} y={y(h)} width={Math.max(1, step - 4)} height={H - B - y(h)} fill="#1f77b4">
            <title>{d}: {formatNumber(Number(h.toFixed(2)))} slot hours</title></rect>
            {(rows.length <= 16 || i % Math.ceil(rows.length / 16) === 0) &&
              <text x={L + i * step + step / 2} y={H - B + 14} text-anchor="middle" fill="currentColor" font-size="10">{d.slice(5)}</text>}</g>))}
        <line x1={L} x2={L} y1={T} y2={H - B} stroke="currentColor" />
        <line x1={L} x2={W - 8} y1={H - B} y2={H - B} stroke="currentColor" />
        <text x={(L + W) / 2} y={H - 6} text-anchor="middle" fill="currentColor" font-size="12">Day (UTC)</text>
        <text x={14} y={(T + H - B) / 2} text-anchor="middle" fill="currentColor" font-size="12"
          transform={`rotate(-90 14 ${(T + H - B) / 2})`}>Slot hours</text>
      </svg>
      <figcaption class="muted">{rows.length ? `${formatNumber(Number(rows.reduce((n, [, h]) => n + h, 0).toFixed(2)))} slot hours in the period.` : "No allocations in the period."}</figcaption>
    </figure>
  );
}

type Pool = { name: string; type: string; description?: string; numAgents: number; slotsUsed: number;
  slotsAvailable: number; queuedJobs?: number; runningJobs?: number; schedulerType?: string;
  defaultComputePool?: boolean; defaultAuxPool?: boolean; waitReasons?: Record<string, number> };

export function ResourcePool(props: { name: string }) {
  const [pools, err] = usePoll(() => api<{ resourcePools: Pool[] }>("/api/v1/resource-pools"), [], 5000);
  const [agents] = usePoll(() => api<{ agents: any[] }>("/api/v1/agents"), [], 5000);
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!pools) return <p>Loading…</p>;
  const p = pools.resourcePools.find((x) => x.name === props.name);
  const crumbs = <Breadcrumbs crumbs={[["Cluster", "/clusters"], [`Pool ${props.name}`]]} />;
  if (!p) return <section aria-labelledby="pool-title">{crumbs}<h1 id="pool-title">No resource pool {props.name}</h1></section>;
  const mine = (agents?.agents ?? []).filter((a) => (a.resourcePools ?? []).includes(p.name));
  return (
    <section aria-labelledby="pool-title">
      {crumbs}
      <h1 id="pool-title">Resource pool {p.name}</h1>
      <table><caption class="sr-only">Pool {p.name}</caption><tbody>
        <tr><th scope="row">Type</th><td>{p.type.replace("RESOURCE_POOL_TYPE_", "").toLowerCase()}</td></tr>
        <tr><th scope="row">Scheduler</th><td>{(p.schedulerType ?? "").replace("SCHEDULER_TYPE_", "").toLowerCase()}</td></tr>
        <tr><th scope="row">Slots used</th><td>{p.slotsUsed} of {p.slotsAvailable}</td></tr>
        <tr><th scope="row">Jobs</th><td>{p.runningJobs ?? 0} running, {p.queuedJobs ?? 0} queued</td></tr>
        <tr><th scope="row">Default for</th><td>{[p.defaultComputePool && "compute", p.defaultAuxPool && "auxiliary"].filter(Boolean).join(", ") || "—"}</td></tr>
      </tbody></table>
      <PoolOffers pool={p.name} />
      <table><caption>Agents of {p.name}</caption>
        <thead><tr><th scope="col">Agent</th><th scope="col">Slots</th><th scope="col">Enabled</th></tr></thead>
        <tbody>{mine.map((a) => <tr><td>{a.id}</td><td>{Object.keys(a.slots ?? {}).length}</td><td>{String(a.enabled)}</td></tr>)}</tbody>
      </table>
    </section>
  );
}

import { useEffect, useRef, useState } from "preact/hooks";
import { follow } from "./api";
import { Plot, Series } from "./chart";

// A trial's system metrics (Determined 0.38's profiler): the harness reports one metric group
// per kind (`cpu`, `gpu`, `memory`, `disk`, `network`), each report `{agent: {metric: value}}`
// averaged over its sampling period. They are few (one per period), so the raw reports are read
// (GetMetrics), not the chart reduction, which keeps only top-level numbers.
export const PROFILER_GROUPS = ["cpu", "gpu", "memory", "disk", "network"];

type Report = { endTime: string; metrics: { avg_metrics?: Record<string, unknown> } };

// One series per agent and metric ("agent-1 cpu_util_simple"; a lone agent's series is named
// by the metric alone), x in seconds since 1970 (uPlot's time scale), in report order. A metric
// a report lacks, or a value that is not a finite number, is a gap.
export function profilerSeries(reports: Report[]): Series[] {
  const keys: [string, string][] = [];
  const seen = new Set<string>();
  const flat = reports.map((r) => {
    const out = new Map<string, number>();
    for (const [agent, inner] of Object.entries(r.metrics?.avg_metrics ?? {})) {
      const entries: [string, unknown][] = inner !== null && typeof inner === "object" && !Array.isArray(inner) ?
        Object.entries(inner as Record<string, unknown>) : [["", inner]];
      for (const [metric, v] of entries) {
        const key = `${agent}\u0000${metric}`;
        if (!seen.has(key)) { seen.add(key); keys.push([agent, metric]); }
        if (typeof v === "number" && Number.isFinite(v)) out.set(key, v);
      }
    }
    return out;
  });
  const agents = new Set(keys.map(([a]) => a));
  const x = reports.map((r) => Date.parse(r.endTime) / 1000);
  return keys
    .sort((a, b) => a[1].localeCompare(b[1]) || a[0].localeCompare(b[0]))
    .map(([agent, metric]) => ({
      label: agents.size > 1 || !metric ? [agent, metric].filter(Boolean).join(" ") : metric,
      x,
      y: flat.map((m) => m.get(`${agent}\u0000${metric}`) ?? null),
    }));
}

async function reportsOf(trialId: number, group: string, signal: AbortSignal): Promise<Report[]> {
  const out: Report[] = [];
  await follow(`/api/v1/trials/metrics/trial_metrics?trialIds=${trialId}&group=${encodeURIComponent(group)}`,
    (r) => out.push(...(r.metrics ?? [])), signal);
  return out;
}

export function Profiler(props: { trialId: number; live: boolean }) {
  const [groups, setGroups] = useState<[string, Series[]][] | null>(null);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!props.live) return;
    const t = setInterval(() => setTick((n) => n + 1), 10000);
    return () => clearInterval(t);
  }, [props.live]);
  useEffect(() => {
    const ctl = new AbortController();
    Promise.all(PROFILER_GROUPS.map(async (g) => [g, profilerSeries(await reportsOf(props.trialId, g, ctl.signal))] as
      [string, Series[]]))
      .then((all) => { setGroups(all.filter(([, s]) => s.length > 0)); setError(""); })
      .catch((e) => { if (!ctl.signal.aborted) setError(String(e.message ?? e)); });
    return () => ctl.abort();
  }, [props.trialId, tick]);
  if (error) return <p role="alert" class="error">{error}</p>;
  if (groups === null) return <p>Loading…</p>;
  if (!groups.length) {
    return <p id="profiler-empty">No system metrics for this trial: set <code>profiling.enabled: true</code> in
      the experiment's config to sample CPU, GPU, memory, disk and network use.</p>;
  }
  const width = Math.max(480, Math.min(1100, (box.current?.clientWidth ?? 900) - 8));
  return (
    <div ref={box} id="profiler">
      {groups.map(([g, series]) => (
        <figure class="chart" data-group={g}>
          <Plot panel={`profiler-${g}`} title={`${g} (system metrics)`} series={series} xLabel="Time"
            yLabel={g} time width={width} />
          <figcaption class="sr-only">{g}: {series.length} series over {series[0].x.length} reports</figcaption>
        </figure>))}
    </div>
  );
}

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, follow, logIn, post, series, Experiment, Trial } from "./api";
import { Chart, Series, smooth } from "./chart";
import { CodeView } from "./code";
import { submitted } from "./forms";
import { HeatMap } from "./heatmap";
import { JobRow } from "./jobqueue";
import { Link, navigate } from "./router";

function usePoll<T>(load: () => Promise<T>, deps: any[], everyMs = 5000): [T | null, string] {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stop = false;
    const tick = () => load().then((v) => !stop && (setValue(v), setError("")))
      .catch((e) => !stop && setError(e.message));
    tick();
    const timer = setInterval(tick, everyMs);
    return () => { stop = true; clearInterval(timer); };
  }, deps);
  return [value, error];
}

export function Login(props: { onLogin: () => void }) {
  const [error, setError] = useState("");
  return (
    <section class="login" aria-labelledby="login-title">
      <h1 id="login-title">Sign in to Resolute</h1>
      <form onSubmit={async (e) => {
        const field = submitted(e);
        const username = field("username"), password = field("password");
        try {
          await logIn(username, password);
          props.onLogin();
        } catch (err: any) {
          setError(err.message);
        }
      }}>
        <label>Username <input name="username" autocomplete="username" required /></label>
        <label>Password <input name="password" type="password" autocomplete="current-password" />
        </label>
        <button type="submit">Sign in</button>
        {error && <p role="alert" class="error">{error}</p>}
      </form>
    </section>
  );
}

export function MetricChart(props: { id: string; trialIds: number[]; group: string; live?: boolean }) {
  // `loaded` stays false until the first answer, so the chart is not published empty.
  const [data, setData] = useState<{ series: Series[]; zoom: [number, number] | null; loaded: boolean }>({
    series: [],
    zoom: null,
    loaded: false,
  });
  const [log, setLog] = useState(false);
  const [weight, setWeight] = useState(0);
  const [window_, setWindow] = useState<[number, number] | null>(null);
  const [tick, setTick] = useState(0);
  const width = 900;
  useEffect(() => {
    if (!props.live) return;
    const t = setInterval(() => setTick((n) => n + 1), 2000);
    return () => clearInterval(t);
  }, [props.live]);
  useEffect(() => {
    let stop = false;
    series(props.trialIds, props.group, width * 3, window_?.[0], window_?.[1]).then((trials) => {
      if (stop) return;
      const out: Series[] = [];
      for (const t of trials) {
        const points = t.metrics[0]?.data ?? [];
        const names = Array.from(new Set(points.flatMap((p) => Object.keys(p.values))))
          .filter((n) => n !== "epoch").sort();
        for (const n of names) {
          out.push({ label: `trial ${t.trial.id} ${n}`, x: points.map((p) => p.batches),
            y: points.map((p) => (typeof p.values[n] === "number" ? p.values[n] : null)) });
        }
      }
      setData({ series: out, zoom: window_, loaded: true });
    });
    return () => { stop = true; };
  }, [props.trialIds.join(","), props.group, window_?.[0], window_?.[1], tick]);
  const shown = useMemo(
    () => data.series.map((s) => ({ ...s, y: smooth(s.y, weight) })),
    [data, weight],
  );
  return (
    <div class="metric-chart">
      <div class="toolbar">
        <label><input type="checkbox" checked={log}
          onChange={(e) => setLog((e.target as HTMLInputElement).checked)} /> Log scale</label>
        <label>Smoothing <input type="range" min="0" max="0.99" step="0.01" value={weight}
          onInput={(e) => setWeight(Number((e.target as HTMLInputElement).value))} /></label>
        <form class="zoom" aria-label={`Zoom the ${props.group} chart`} onSubmit={(e) => {
          const field = submitted(e);
          const from = field(`${props.id}-from`), to = field(`${props.id}-to`);
          const lo = Number(from), hi = Number(to);
          if (from.trim() && to.trim() && Number.isFinite(lo) && Number.isFinite(hi) && lo < hi) setWindow([lo, hi]);
        }}>
          <label>Zoom from batch <input type="number" name={`${props.id}-from`} size={7} /></label>
          <label> to <input type="number" name={`${props.id}-to`} size={7} /></label>
          <button type="submit">Zoom</button>
        </form>
        <button type="button" onClick={() => setWindow(null)} disabled={!window_}>Reset zoom</button>
        <span class="muted">Drag across the chart, or type a batch range, to zoom; the server sends
          every point once the window is small enough.</span>
      </div>
      <Chart id={props.id} title={`${props.group} metrics`} series={shown} log={log} width={width}
        onZoom={(lo, hi) => setWindow([lo, hi])} zoom={data.zoom} loaded={data.loaded} />
    </div>
  );
}

type LogLine = { message: string; level: string };
const LEVELS = ["", "LOG_LEVEL_TRACE", "LOG_LEVEL_DEBUG", "LOG_LEVEL_INFO", "LOG_LEVEL_WARNING",
  "LOG_LEVEL_ERROR", "LOG_LEVEL_CRITICAL"];

export function Logs(props: { path: string; live: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [filter, setFilter] = useState("");
  const [level, setLevel] = useState("");
  useEffect(() => {
    setLines([]);
    const ctl = new AbortController();
    const sep = props.path.includes("?") ? "&" : "?";
    follow(`${props.path}${sep}follow=${props.live}`, (r) => {
      const line = { message: String(r.message ?? r.log ?? "").replace(/\n$/, ""), level: r.level ?? "" };
      setLines((old) => [...old, line]);
    }, ctl.signal).catch(() => undefined);
    return () => ctl.abort();
  }, [props.path, props.live]);
  // Levels are ordered: choosing WARNING shows WARNING and worse.
  const floor = LEVELS.indexOf(level);
  const shown = lines.filter((l) => (!filter || l.message.includes(filter)) &&
    (!level || LEVELS.indexOf(l.level) >= floor));
  const download = () => {
    const text = lines.map((l) => l.message).join("\n") + "\n";
    const url = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = "logs.txt";
    a.click();
    URL.revokeObjectURL(url);
  };
  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">Logs</h2>
      <div class="toolbar">
        <label>Search <input value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} /></label>
        <label>Level <select value={level} onChange={(e) => setLevel((e.target as HTMLSelectElement).value)}>
          {LEVELS.map((l) => <option value={l}>{l ? l.replace("LOG_LEVEL_", "") + " and worse" : "all"}</option>)}
        </select></label>
        <button type="button" onClick={download}>Download</button>
        <span class="muted">{props.live ? "following" : "complete"} · {shown.length} of {lines.length} lines</span>
      </div>
      <pre class="logs" role="log" tabIndex={0} aria-label="Log lines" id="log-lines">
        {shown.map((l) => l.message).join("\n")}</pre>
    </section>
  );
}

const LIVE = new Set(["STATE_ACTIVE", "STATE_PAUSED", "STATE_STOPPING_COMPLETED",
  "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED", "STATE_STOPPING_ERROR"]);

export function ExperimentDetail(props: { id: number }) {
  const [exp, err] = usePoll(() => api<{ experiment: Experiment; config: any }>(
    `/api/v1/experiments/${props.id}`), [props.id], 3000);
  const [trials] = usePoll(() => api<{ trials: Trial[] }>(
    `/api/v1/experiments/${props.id}/trials?limit=1000`), [props.id], 5000);
  const [ckpts] = usePoll(() => api<{ checkpoints: any[] }>(
    `/api/v1/experiments/${props.id}/checkpoints`), [props.id], 10000);
  const [tab, setTab] = useState("overview");
  const [msg, setMsg] = useState("");
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!exp) return <p>Loading…</p>;
  const e = exp.experiment;
  const ids = (trials?.trials ?? []).slice(0, 10).map((t) => t.id);
  const act = async (verb: string) => {
    try { await post(`/api/v1/experiments/${e.id}/${verb}`, {}); setMsg(`${verb}: done`); }
    catch (x: any) { setMsg(`${verb}: ${x.message}`); }
  };
  const hps = Object.keys(trials?.trials?.[0]?.hparams ?? {});
  return (
    <section aria-labelledby="exp-name">
      <h1 id="exp-name">Experiment {e.id}: {e.name}</h1>
      <p>State: <strong id="exp-state">{e.state.replace("STATE_", "")}</strong>
        {e.progress != null && <> · progress {(e.progress * 100).toFixed(0)}%</>}
        {" "}· {e.numTrials} trials · owner {e.username}</p>
      <div class="toolbar">
        {["pause", "activate", "kill", "archive"].map((v) => (
          <button type="button" onClick={() => act(v)}>{v}</button>))}
        <span role="status">{msg}</span>
      </div>
      <div role="tablist" aria-label="Experiment views">
        {["overview", "hyperparameters", "checkpoints", "config", "code", "logs"].map((t) => (
          <button role="tab" type="button" aria-selected={tab === t} onClick={() => setTab(t)}>{t}</button>))}
      </div>
      {tab === "overview" && (
        <div role="tabpanel">
          {ids.length > 0 && <MetricChart id="experiment-training" trialIds={ids} group="training"
            live={LIVE.has(e.state)} />}
          {ids.length > 0 && <MetricChart id="experiment-validation" trialIds={ids} group="validation"
            live={LIVE.has(e.state)} />}
          <TrialTable trials={trials?.trials ?? []} />
        </div>
      )}
      {tab === "hyperparameters" && <HpViews trials={trials?.trials ?? []} names={hps}
        metric={exp.config?.searcher?.metric ?? "searcher metric"} />}
      {tab === "checkpoints" && (
        <table><caption>Checkpoints</caption><thead><tr><th>UUID</th><th>Trial</th><th>Batches</th><th>State</th></tr></thead>
          <tbody>{(ckpts?.checkpoints ?? []).map((c) => (
            <tr><td>{c.uuid}</td><td>{c.metadata?.trial_id ?? c.trialId ?? ""}</td>
              <td>{c.metadata?.steps_completed ?? c.totalBatches ?? ""}</td><td>{c.state}</td></tr>))}</tbody>
        </table>
      )}
      {tab === "config" && <pre class="config" tabIndex={0}>{JSON.stringify(exp.config, null, 2)}</pre>}
      {tab === "code" && <CodeView experimentId={e.id} />}
      {tab === "logs" && <ExperimentLogs trials={trials?.trials ?? []} />}
    </section>
  );
}

// An experiment's logs are its trials' (Determined's experiment page shows the first trial's):
// pick the trial; a live one is followed.
function ExperimentLogs(props: { trials: Trial[] }) {
  const [picked, setPicked] = useState<number | null>(null);
  const trial = props.trials.find((t) => t.id === picked) ?? props.trials[0];
  if (!trial) return <p class="muted">No trial has started yet, so there are no logs.</p>;
  return (
    <div role="tabpanel">
      <label>Trial{" "}
        <select id="logs-trial" value={trial.id}
          onChange={(e) => setPicked(Number((e.target as HTMLSelectElement).value))}>
          {props.trials.map((t) => <option value={t.id}>{t.id} ({t.state.replace("STATE_", "")})</option>)}
        </select>
      </label>
      <Logs path={`/api/v1/trials/${trial.id}/logs`} live={LIVE.has(trial.state)} />
    </div>
  );
}

export function TrialTable(props: { trials: Trial[] }) {
  const [picked, setPicked] = useState<Set<number>>(new Set());
  return (
    <div>
      <table>
        <caption>Trials</caption>
        <thead><tr><th scope="col"><span class="sr-only">Compare</span></th><th scope="col">Trial</th>
          <th scope="col">State</th><th scope="col">Batches</th><th scope="col">Searcher metric</th>
          <th scope="col">Hyperparameters</th></tr></thead>
        <tbody>{props.trials.map((t) => (
          <tr data-trial-id={t.id}>
            <td><input type="checkbox" aria-label={`Compare trial ${t.id}`} checked={picked.has(t.id)}
              onChange={() => { const n = new Set(picked); n.has(t.id) ? n.delete(t.id) : n.add(t.id); setPicked(n); }} /></td>
            <td><Link href={`/experiments/${t.experimentId}/trials/${t.id}`}>{t.id}</Link></td>
            <td>{t.state.replace("STATE_", "")}</td><td>{t.totalBatchesProcessed ?? ""}</td>
            <td>{t.searcherMetricValue ?? ""}</td><td>{JSON.stringify(t.hparams)}</td></tr>))}
        </tbody>
      </table>
      <button type="button" disabled={picked.size < 1 || picked.size > 50}
        onClick={() => navigate(`/compare?trials=${Array.from(picked).join(",")}`)}>
        Compare {picked.size} trials</button>
    </div>
  );
}

// Parallel coordinates as SVG: one vertical axis per numeric hyperparameter plus the metric.
// A brush is a value range on an axis: drag along the axis, or type its bounds (keyboard users,
// and an exact range); trials outside any brush are dimmed. The scatter plots any of them
// against the metric. The counts in the status line are the views' text alternative.
function HpViews(props: { trials: Trial[]; names: string[]; metric: string }) {
  const varying = props.names.filter((n) =>
    new Set(props.trials.map((t) => JSON.stringify(t.hparams[n]))).size > 1);
  const numeric = props.names.filter((n) => props.trials.some((t) => typeof t.hparams[n] === "number"));
  const axes = [...numeric, "metric"];
  const value = (t: Trial, a: string) => (a === "metric" ? t.searcherMetricValue ?? NaN : Number(t.hparams[a]));
  const [brush, setBrush] = useState<Record<string, [number, number]>>({});
  const [scatterX, setScatterX] = useState<string>("");
  const start = useRef<{ axis: string; y: number } | null>(null);
  const W = 160, H = 260, PAD = 20;
  const range = (a: string) => {
    const vs = props.trials.map((t) => value(t, a)).filter(Number.isFinite);
    if (!vs.length) return [0, 1];
    const lo = Math.min(...vs), hi = Math.max(...vs);
    return [lo, hi === lo ? lo + 1 : hi];
  };
  const ranges = Object.fromEntries(axes.map((a) => [a, range(a)]));
  const y = (a: string, v: number) => PAD + (H - 2 * PAD) * (1 - (v - ranges[a][0]) / (ranges[a][1] - ranges[a][0]));
  const valueAt = (a: string, py: number) =>
    ranges[a][0] + (1 - (py - PAD) / (H - 2 * PAD)) * (ranges[a][1] - ranges[a][0]);
  const inBrush = (t: Trial) => Object.entries(brush).every(([a, [lo, hi]]) => {
    const v = value(t, a); return v >= lo && v <= hi; });
  const kept = props.trials.filter(inBrush);
  const setBound = (a: string, k: 0 | 1, text: string) => {
    const next = { ...brush };
    const cur: [number, number] = next[a] ? [...next[a]] as [number, number] : [ranges[a][0], ranges[a][1]];
    const v = Number(text);
    if (text.trim() === "" || !Number.isFinite(v)) return;
    cur[k] = v;
    next[a] = cur;
    setBrush(next);
  };
  const sx = scatterX && numeric.includes(scatterX) ? scatterX : numeric[0];
  (window as any).__parcoords = { axes, brush, kept: kept.map((t) => t.id) };
  return (
    <div>
      <h2>Parallel coordinates</h2>
      <p role="status" id="brush-status">{kept.length} of {props.trials.length} trials in the brushes</p>
      <svg width={W * axes.length} height={H} role="img" aria-label={`Parallel coordinates of ${props.trials.length} trials over ${axes.join(", ")}; ${kept.length} inside the brushes`}>
        {props.trials.map((t) => (
          <polyline fill="none" stroke={inBrush(t) ? "#1f77b4" : "#ccc"} stroke-width="1" data-trial={t.id}
            points={axes.map((a, i) => `${i * W + W / 2},${y(a, value(t, a))}`).join(" ")} />))}
        {axes.map((a, i) => (
          <g>
            <line x1={i * W + W / 2} x2={i * W + W / 2} y1={PAD} y2={H - PAD} stroke="currentColor" />
            {brush[a] && <rect x={i * W + W / 2 - 8} width="16" fill="#1f77b4" fill-opacity="0.2"
              y={y(a, brush[a][1])} height={Math.max(1, y(a, brush[a][0]) - y(a, brush[a][1]))} />}
            <rect x={i * W + W / 2 - 10} y={PAD} width="20" height={H - 2 * PAD} fill="transparent"
              data-axis={a}
              onMouseDown={(e) => (start.current = { axis: a, y: (e as MouseEvent).offsetY })}
              onMouseUp={(e) => { const s = start.current; if (!s || s.axis !== a) return;
                const y2 = (e as MouseEvent).offsetY;
                const lo = valueAt(a, Math.max(s.y, y2)), hi = valueAt(a, Math.min(s.y, y2));
                setBrush({ ...brush, [a]: [lo, hi] }); start.current = null; }} />
            <text x={i * W + W / 2} y={12} text-anchor="middle" fill="currentColor">{a}</text>
          </g>))}
      </svg>
      <fieldset class="brushes"><legend>Brushes (value ranges)</legend>
        {axes.map((a) => (
          <span class="brush">
            <label>{a} from <input type="number" step="any" name={`brush-${a}-lo`}
              value={brush[a]?.[0] ?? ""} placeholder={String(ranges[a][0])}
              onChange={(e) => setBound(a, 0, (e.target as HTMLInputElement).value)} /></label>
            <label> to <input type="number" step="any" name={`brush-${a}-hi`}
              value={brush[a]?.[1] ?? ""} placeholder={String(ranges[a][1])}
              onChange={(e) => setBound(a, 1, (e.target as HTMLInputElement).value)} /></label>
          </span>))}
        <button type="button" onClick={() => setBrush({})}>Clear brushes</button>
      </fieldset>
      {sx && (
        <>
          <h2>Scatter: {sx} against the metric</h2>
          <label>Horizontal axis{" "}
            <select id="scatter-x" value={sx} onChange={(e) => setScatterX((e.target as HTMLSelectElement).value)}>
              {numeric.map((n) => <option value={n}>{n}</option>)}
            </select>
          </label>
          <svg width="420" height="260" role="img" aria-label={`Scatter of ${sx} against the searcher metric, ${props.trials.length} trials`}>
            {props.trials.map((t) => {
              const xr = ranges[sx];
              const px = 20 + 380 * ((value(t, sx) - xr[0]) / (xr[1] - xr[0]));
              return <circle cx={px} cy={y("metric", value(t, "metric"))} r="3"
                fill={inBrush(t) ? "#d62728" : "#ccc"} />;
            })}
          </svg>
        </>
      )}
      <HeatMap trials={props.trials} names={varying} metric={props.metric} />
    </div>
  );
}

export function TrialDetail(props: { experimentId: number; id: number }) {
  const [trial, err] = usePoll(() => api<{ trial: Trial }>(`/api/v1/trials/${props.id}`), [props.id], 3000);
  const [ckpts] = usePoll(() => api<{ checkpoints: any[] }>(`/api/v1/trials/${props.id}/checkpoints`), [props.id], 10000);
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!trial) return <p>Loading…</p>;
  const t = trial.trial;
  const live = LIVE.has(t.state);
  return (
    <section aria-labelledby="trial-title">
      <h1 id="trial-title">Trial {t.id} of <Link href={`/experiments/${t.experimentId}`}>experiment {t.experimentId}</Link></h1>
      <p>State: <strong id="trial-state">{t.state.replace("STATE_", "")}</strong> · batches {t.totalBatchesProcessed ?? 0}</p>
      <MetricChart id="trial-training" trialIds={[t.id]} group="training" live={live} />
      <MetricChart id="trial-validation" trialIds={[t.id]} group="validation" live={live} />
      <h2>Hyperparameters</h2>
      <table><caption class="sr-only">Hyperparameters</caption><tbody>
        {Object.entries(t.hparams).map(([k, v]) => <tr><th scope="row">{k}</th><td>{JSON.stringify(v)}</td></tr>)}
      </tbody></table>
      <h2>Checkpoints</h2>
      <ul>{(ckpts?.checkpoints ?? []).map((c) => <li>{c.uuid} ({c.state})</li>)}</ul>
      <Logs path={`/api/v1/trials/${t.id}/logs`} live={live} />
    </section>
  );
}

function Provisioner(props: { pool: string }) {
  const [p, err] = usePoll(() => api<any>(
    `/api/v1/resource-pools/${encodeURIComponent(props.pool)}/provisioner`), [props.pool], 5000);
  if (err) return <p role="alert">{props.pool}: {err}</p>;
  if (!p) return null;
  const now = Date.now();
  return (
    <div>
      <h3>Pool {p.pool}: {p.provider} instances ({p.spot ? "spot" : "on-demand"}),
        {" "}{p.minInstances}–{p.maxInstances}</h3>
      {p.launchError && <p role="alert">Launches paused: {p.launchError}</p>}
      <table><caption>Instances of {p.pool}</caption>
        <thead><tr><th scope="col">Instance</th><th scope="col">State</th><th scope="col">Age</th>
          <th scope="col">Market</th><th scope="col">Agent</th><th scope="col">Problem</th></tr></thead>
        <tbody>{p.instances.map((i: any) => (
          <tr><td>{i.id}</td><td>{i.state}</td><td>{Math.round(i.ageSeconds)} s</td>
            <td>{i.spot ? "spot" : "on-demand"}</td>
            <td>{i.agentConnected ? (i.agentIdle ? "idle" : "busy") : "not connected"}</td>
            <td>{i.problem ?? ""}</td></tr>))}</tbody>
      </table>
      <table><caption>Why {p.pool} scaled (recent decisions)</caption>
        <thead><tr><th scope="col">When</th><th scope="col">Decision</th><th scope="col">Reason</th>
          <th scope="col">Instances</th></tr></thead>
        <tbody>{p.decisions.map((d: any) => (
          <tr><td>{Math.round((now - Date.parse(d.at)) / 1000)} s ago</td><td>{d.kind}</td>
            <td>{d.reason}</td><td>{d.instanceIds.join(", ")}</td></tr>))}</tbody>
      </table>
    </div>
  );
}

export function Cluster() {
  const [pools] = usePoll(() => api<{ resourcePools: any[] }>("/api/v1/resource-pools"), [], 5000);
  const [agents] = usePoll(() => api<{ agents: any[] }>("/api/v1/agents"), [], 5000);
  const [version, setVersion] = useState(0);
  const [jobs] = usePoll(() => api<{ jobs: any[] }>("/api/v1/job-queues-v2"), [version], 5000);
  const queue = (jobs?.jobs ?? []).map((r: any) => r.full).filter(Boolean);
  const provided = (pools?.resourcePools ?? []).filter((p) =>
    p.type === "RESOURCE_POOL_TYPE_AWS" || p.type === "RESOURCE_POOL_TYPE_GCP");
  return (
    <section aria-labelledby="cluster-title">
      <h1 id="cluster-title">Cluster</h1>
      <table><caption>Resource pools</caption>
        <thead><tr><th scope="col">Pool</th><th scope="col">Type</th><th scope="col">Agents</th>
          <th scope="col">Slots used / total</th><th scope="col">Queued</th><th scope="col">Running</th>
          <th scope="col">Why jobs wait</th></tr></thead>
        <tbody>{(pools?.resourcePools ?? []).map((p) => (
          <tr><td>{p.name}</td><td>{p.type.replace("RESOURCE_POOL_TYPE_", "")}</td><td>{p.numAgents}</td>
            <td>{p.slotsUsed} / {p.slotsAvailable}</td><td>{p.queuedJobs}</td><td>{p.runningJobs}</td>
            <td>{Object.entries(p.waitReasons ?? {}).map(([k, v]) => `${k}: ${v}`).join("; ")}</td></tr>))}
        </tbody>
      </table>
      {provided.map((p) => <Provisioner pool={p.name} />)}
      <table><caption>Agents</caption>
        <thead><tr><th scope="col">Agent</th><th scope="col">Pools</th><th scope="col">Slots</th>
          <th scope="col">Enabled</th></tr></thead>
        <tbody>{(agents?.agents ?? []).map((a) => (
          <tr><td>{a.id}</td><td>{(a.resourcePools ?? []).join(", ")}</td>
            <td>{Object.keys(a.slots ?? {}).length}</td><td>{String(a.enabled)}</td></tr>))}</tbody>
      </table>
      <table><caption>Job queue</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Job</th><th scope="col">Type</th>
          <th scope="col">User</th><th scope="col">Pool</th><th scope="col">Priority</th>
          <th scope="col">Weight</th><th scope="col">Reorder</th><th scope="col">State</th>
          <th scope="col">Why it waits</th></tr></thead>
        <tbody>{queue.map((j: any) => (
          <JobRow key={j.jobId} job={j} others={queue} onChanged={() => setVersion((v) => v + 1)} />))}</tbody>
      </table>
    </section>
  );
}

// Commands, notebooks, TensorBoards and shells. A notebook's or TensorBoard's service opens through
// the master's proxy (its serviceAddress, /proxy/<id>/), which reads the UI's HttpOnly `auth` cookie.
const TASK_KINDS: [string, string, string][] = [
  ["commands", "commands", "Commands"],
  ["notebooks", "notebooks", "Notebooks"],
  ["tensorboards", "tensorboards", "TensorBoards"],
  ["shells", "shells", "Shells"],
];

function TaskTable(props: { path: string; field: string; title: string }) {
  const [list, err] = usePoll(() => api<any>(`/api/v1/${props.path}`), [props.path], 5000);
  const rows: any[] = list?.[props.field] ?? [];
  const opens = props.path === "notebooks" || props.path === "tensorboards";
  return (
    <table id={`tasks-${props.path}`}><caption>{props.title}</caption>
      <thead><tr><th scope="col">Id</th><th scope="col">Description</th><th scope="col">State</th>
        <th scope="col">Owner</th>{opens && <th scope="col">Open</th>}</tr></thead>
      <tbody>
        {err && <tr><td colSpan={opens ? 5 : 4} role="alert">{err}</td></tr>}
        {rows.map((c) => (
          <tr data-task-id={c.id}><td>{c.id}</td><td>{c.description}</td>
            <td>{String(c.state ?? "").replace("STATE_", "")}</td><td>{c.username}</td>
            {opens && <td>{c.serviceAddress && c.state === "STATE_RUNNING" ?
              <a href={c.serviceAddress}>Open {c.description || c.id}</a> :
              <span class="muted">not running</span>}</td>}</tr>))}
      </tbody>
    </table>
  );
}

export function Tasks() {
  return (
    <section aria-labelledby="tasks-title">
      <h1 id="tasks-title">Tasks</h1>
      {TASK_KINDS.map(([path, field, title]) => <TaskTable path={path} field={field} title={title} />)}
    </section>
  );
}

import { useEffect, useState } from "preact/hooks";
import { api, follow, logIn, post, Experiment, Trial } from "./api";
import { CostLine } from "./cost";
import { RegisterableCheckpoints } from "./models";
import { CodeView } from "./code";
import { ConfirmButton } from "./confirm";
import { submitted } from "./forms";
import { formatNumber } from "./formatting";
import { hpCells, hpNames } from "./hptable";
import { HpViews } from "./hpviews";
import { MetricChart } from "./metricchart";
import { JobRow } from "./jobqueue";
import { usePoll } from "./poll";
import { Link, navigate } from "./router";

export { MetricChart };

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

const LIVE = new Set(["STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING",
  "STATE_PAUSED", "STATE_STOPPING_COMPLETED",
  "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED", "STATE_STOPPING_ERROR"]);

// Determined's experiment tab names, and ours, to the tab shown.
const EXP_TABS: Record<string, string> = { overview: "overview", trials: "overview", hyperparameters: "hyperparameters",
  visualization: "hyperparameters", checkpoints: "checkpoints", config: "config", configuration: "config",
  code: "code", logs: "logs" };
const experimentTab = (tab?: string) => EXP_TABS[tab ?? ""] ?? "overview";

export function ExperimentDetail(props: { id: number; tab?: string }) {
  const [exp, err] = usePoll(() => api<{ experiment: Experiment; config: any }>(
    `/api/v1/experiments/${props.id}`), [props.id], 3000);
  const [trials] = usePoll(() => api<{ trials: Trial[] }>(
    `/api/v1/experiments/${props.id}/trials?limit=1000`), [props.id], 5000);
  const [ckpts] = usePoll(() => api<{ checkpoints: any[] }>(
    `/api/v1/experiments/${props.id}/checkpoints`), [props.id], 10000);
  // The URL's tab (/experiments/3/checkpoints, Determined's names too) opens that tab.
  const [tab, setTab] = useState(() => experimentTab(props.tab));
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
      <CostLine path={`/api/v1/experiments/${e.id}/cost`} id="exp-cost" />
      <div class="toolbar">
        <button type="button" data-action="activate" onClick={() => act("activate")}>activate</button>
        {/* What cannot be undone at once asks first (Determined confirms these too). */}
        {([["pause", "Pause"], ["kill", "Kill"], ["archive", "Archive"]] as const).map(([v, V]) => (
          <ConfirmButton label={v} question={`${V} experiment ${e.id} (${e.name})?`} confirm={`${V} experiment ${e.id}`}
            id={`exp-${v}`} onConfirm={() => act(v)} />))}
        <span role="status">{msg}</span>
      </div>
      <div role="tablist" aria-label="Experiment views">
        {["overview", "hyperparameters", "checkpoints", "config", "code", "logs"].map((t) => (
          <button role="tab" type="button" aria-selected={tab === t} onClick={() => { setTab(t); history.replaceState(null, "", `/det/experiments/${e.id}/${t}`); }}>
            {t}</button>))}
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
      {tab === "checkpoints" && <RegisterableCheckpoints checkpoints={ckpts?.checkpoints ?? []} experimentId={e.id} />}
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
  const hps = hpNames(props.trials);
  return (
    <div>
      <table>
        <caption>Trials</caption>
        <thead><tr><th scope="col"><span class="sr-only">Compare</span></th><th scope="col">Trial</th>
          <th scope="col">State</th><th scope="col">Batches</th><th scope="col">Searcher metric</th>
          {hps.map((n) => <th scope="col">{n}</th>)}</tr></thead>
        <tbody>{props.trials.map((t) => (
          <tr data-trial-id={t.id}>
            <td><input type="checkbox" aria-label={`Compare trial ${t.id}`} checked={picked.has(t.id)}
              onChange={() => { const n = new Set(picked); n.has(t.id) ? n.delete(t.id) : n.add(t.id); setPicked(n); }} /></td>
            <td><Link href={`/experiments/${t.experimentId}/trials/${t.id}`}>{t.id}</Link></td>
            <td>{t.state.replace("STATE_", "")}</td><td>{t.totalBatchesProcessed ?? ""}</td>
            <td class="num">{t.searcherMetricValue == null ? "" : formatNumber(t.searcherMetricValue)}</td>
            {hpCells(t, hps)}</tr>))}
        </tbody>
      </table>
      <button type="button" disabled={picked.size < 1 || picked.size > 50}
        onClick={() => navigate(`/compare?trials=${Array.from(picked).join(",")}`)}>
        Compare {picked.size} trials</button>
    </div>
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
          <tr><td><Link href={`/resourcepool/${encodeURIComponent(p.name)}`}>{p.name}</Link></td><td>{p.type.replace("RESOURCE_POOL_TYPE_", "")}</td><td>{p.numAgents}</td>
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

import { useEffect, useState } from "preact/hooks";
import { api, Experiment, Trial } from "./api";
import { formatValue } from "./formatting";
import { MetricChart } from "./metricchart";

const MAX = 50;

// One compared column: a trial, or an experiment with its trials (whose curves are overlaid).
type Item = { label: string; hparams: Record<string, unknown>; config: any; trialIds: number[] };

// Nested config flattened to dotted keys, so two configs diff line by line.
export function flatten(value: unknown, prefix = "", out: Record<string, string> = {}) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (!entries.length && prefix) out[prefix] = "{}";
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out[prefix] = JSON.stringify(value);
  }
  return out;
}

// Experiment hparams are the config's hyperparameter specs: show a const's value, else the spec.
function experimentHparams(config: any): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries<any>(config?.hyperparameters ?? {})) {
    out[k] = v && typeof v === "object" && v.type === "const" ? v.val : v;
  }
  return out;
}

async function loadTrials(ids: number[]): Promise<Item[]> {
  const trials = await Promise.all(ids.map((id) =>
    api<{ trial: Trial }>(`/api/v1/trials/${id}`).then((r) => r.trial)));
  const configs = new Map<number, any>();
  for (const e of new Set(trials.map((t) => t.experimentId))) {
    configs.set(e, (await api<{ config: any }>(`/api/v1/experiments/${e}`)).config);
  }
  return trials.map((t) => ({ label: `Trial ${t.id}`, hparams: t.hparams,
    config: configs.get(t.experimentId), trialIds: [t.id] }));
}

async function loadExperiments(ids: number[]): Promise<Item[]> {
  return Promise.all(ids.map(async (id) => {
    const [e, ts] = await Promise.all([
      api<{ experiment: Experiment; config: any }>(`/api/v1/experiments/${id}`),
      api<{ trials: Trial[] }>(`/api/v1/experiments/${id}/trials?limit=${MAX}`),
    ]);
    return { label: `Experiment ${id}`, hparams: experimentHparams(e.config), config: e.config,
      trialIds: ts.trials.map((t) => t.id) };
  }));
}

// Differences are found on the exact values; `format` only changes how a value reads (a
// hyperparameter's 0.30000000000000004 as 0.3), never whether two columns differ.
function DiffTable(props: { id: string; caption: string; what: string; items: Item[];
  rows: (it: Item) => Record<string, unknown>; onlyDiffs: boolean; format?: boolean }) {
  const cols = props.items.map(props.rows);
  const keys = Array.from(new Set(cols.flatMap((c) => Object.keys(c)))).sort();
  const shown = keys.map((k) => {
    const exact = cols.map((c) => (k in c ? (typeof c[k] === "string" ? c[k] as string : JSON.stringify(c[k])) : "—"));
    const vals = props.format ? cols.map((c, i) => (k in c ? formatValue(c[k]) : exact[i])) : exact;
    return { k, vals, differs: new Set(exact).size > 1 };
  }).filter((r) => r.differs || !props.onlyDiffs);
  return (
    <table id={props.id}><caption>{props.caption}</caption>
      <thead><tr><th scope="col">{props.what}</th>{props.items.map((it) => <th scope="col">{it.label}</th>)}</tr></thead>
      <tbody>{shown.map((r) => (
        <tr class={r.differs ? "differs" : ""} data-key={r.k}>
          <th scope="row">{r.k}{r.differs ? " (differs)" : ""}</th>{r.vals.map((v) => <td>{v}</td>)}</tr>))}
      </tbody>
    </table>
  );
}

export function Compare(props: { trials: number[]; experiments: number[] }) {
  const byExperiment = props.experiments.length > 0;
  const ids = (byExperiment ? props.experiments : props.trials).slice(0, MAX);
  const [items, setItems] = useState<Item[]>([]);
  const [error, setError] = useState("");
  const [onlyDiffs, setOnlyDiffs] = useState(true);
  useEffect(() => {
    setError("");
    (byExperiment ? loadExperiments(ids) : loadTrials(ids)).then(setItems)
      .catch((e) => setError(e.message));
  }, [byExperiment, ids.join(",")]);
  const noun = byExperiment ? "experiments" : "trials";
  const trialIds = items.flatMap((it) => it.trialIds).slice(0, MAX);
  return (
    <section aria-labelledby="cmp-title">
      <h1 id="cmp-title">Compare {ids.length} {noun}</h1>
      <p id="compare-ids">{ids.join(", ")}</p>
      {error && <p role="alert" class="error">{error}</p>}
      {trialIds.length > 0 && <MetricChart id="compare-training" trialIds={trialIds} group="training" />}
      {trialIds.length > 0 && <MetricChart id="compare-validation" trialIds={trialIds} group="validation" />}
      <DiffTable id="hparam-diff" caption="Hyperparameters (differences marked)" what="Hyperparameter"
        items={items} rows={(it) => it.hparams} onlyDiffs={false} format />
      <label><input type="checkbox" checked={onlyDiffs}
        onChange={(e) => setOnlyDiffs((e.target as HTMLInputElement).checked)} /> Only differing config keys</label>
      <DiffTable id="config-diff" caption="Configuration" what="Config key" items={items}
        rows={(it) => flatten(it.config)} onlyDiffs={onlyDiffs} />
    </section>
  );
}

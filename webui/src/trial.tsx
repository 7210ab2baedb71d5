import { api, Trial } from "./api";
import { CostLine } from "./cost";
import { Checkpoint } from "./checkpoints";
import { formatNumber } from "./formatting";
import { HpTable } from "./hptable";
import { Breadcrumbs, placeCrumbs, TabLinks, usePlace } from "./layout";
import { MetricChart } from "./metricchart";
import { RegisterableCheckpoints } from "./models";
import { Logs } from "./pages";
import { Profiler } from "./profiler";
import { usePoll } from "./poll";
import { Link } from "./router";

// A trial's page with Determined's tabs, each its own URL (/experiments/3/trials/7/logs; the
// short form /trials/7/logs too). The overview keeps the charts and the live logs together, as a
// running trial is watched there.
const TABS: [string, string][] = [["overview", "Overview"], ["hyperparameters", "Hyperparameters"],
  ["checkpoints", "Checkpoints"], ["logs", "Logs"], ["profiler", "Profiler"]];
const LIVE = new Set(["STATE_ACTIVE", "STATE_PAUSED", "STATE_STOPPING_COMPLETED",
  "STATE_STOPPING_CANCELED", "STATE_STOPPING_KILLED", "STATE_STOPPING_ERROR", "STATE_RUNNING"]);

export function TrialDetail(props: { experimentId?: number; id: number; tab?: string }) {
  const tab = TABS.some(([t]) => t === props.tab) ? props.tab! : "overview";
  const [trial, err] = usePoll(() => api<{ trial: Trial }>(`/api/v1/trials/${props.id}`), [props.id], 3000);
  const place = usePlace(undefined, trial?.trial.experimentId ?? props.experimentId);
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!trial) return <p>Loading…</p>;
  const t = trial.trial;
  const live = LIVE.has(t.state);
  const base = `/experiments/${t.experimentId}/trials/${t.id}`;
  return (
    <section aria-labelledby="trial-title">
      <Breadcrumbs crumbs={[...placeCrumbs(place), [`Experiment ${t.experimentId}`, `/experiments/${t.experimentId}`],
        [`Trial ${t.id}`]]} />
      <h1 id="trial-title">Trial {t.id} of <Link href={`/experiments/${t.experimentId}`}>experiment {t.experimentId}</Link></h1>
      <p>State: <strong id="trial-state">{t.state.replace("STATE_", "")}</strong> · batches {t.totalBatchesProcessed ?? 0}
        {t.searcherMetricValue != null && <> · searcher metric {formatNumber(t.searcherMetricValue)}</>}</p>
      <CostLine path={`/api/v1/trials/${t.id}/cost`} id="trial-cost" />
      <TabLinks label="Trial views" base={base} tabs={TABS} current={tab} />
      {tab === "overview" && (
        <div>
          <MetricChart id="trial-training" trialIds={[t.id]} group="training" live={live} />
          <MetricChart id="trial-validation" trialIds={[t.id]} group="validation" live={live} />
          <HpTable hparams={t.hparams} caption="Hyperparameters" />
          <Logs path={`/api/v1/trials/${t.id}/logs`} live={live} />
        </div>
      )}
      {tab === "hyperparameters" && <HpTable hparams={t.hparams} caption="Hyperparameters" />}
      {tab === "checkpoints" && <TrialCheckpoints experimentId={t.experimentId} trialId={t.id} />}
      {tab === "logs" && <Logs path={`/api/v1/trials/${t.id}/logs`} live={live} />}
      {tab === "profiler" && <Profiler trialId={t.id} live={live} />}
    </section>
  );
}

function TrialCheckpoints(props: { experimentId: number; trialId: number }) {
  const [list, err] = usePoll(() => api<{ checkpoints: Checkpoint[] }>(`/api/v1/trials/${props.trialId}/checkpoints`),
    [props.trialId], 10000);
  return (
    <div>
      {err && <p role="alert" class="error">{err}</p>}
      {list && <RegisterableCheckpoints checkpoints={list.checkpoints} experimentId={props.experimentId} />}
    </div>
  );
}

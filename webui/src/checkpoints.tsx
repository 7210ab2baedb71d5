import { formatNumber } from "./formatting";
import { Link } from "./router";

// A checkpoint as the API sends it (Determined's v1Checkpoint): the trial is in `training`.
export type Checkpoint = {
  uuid: string;
  state: string;
  reportTime?: string;
  metadata?: Record<string, any>;
  resources?: Record<string, string>;
  training?: { trialId?: number | null; experimentId?: number | null; searcherMetric?: number | null };
};

export const checkpointTrial = (c: Checkpoint): number | null =>
  c.training?.trialId ?? c.metadata?.trial_id ?? null;

const batchesOf = (c: Checkpoint) => c.metadata?.steps_completed ?? c.metadata?.total_batches ?? null;

function size(c: Checkpoint): string {
  const bytes = Object.values(c.resources ?? {}).reduce((n, b) => n + Number(b || 0), 0);
  if (!bytes) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  const k = Math.min(units.length - 1, Math.floor(Math.log(bytes) / Math.log(1024)));
  return `${formatNumber(Number((bytes / 1024 ** k).toPrecision(3)))} ${units[k]}`;
}

// An experiment's or a trial's checkpoints. `actions` adds a last column (register as a model
// version, for example) where the page offers one.
export function CheckpointTable(props: { checkpoints: Checkpoint[]; experimentId?: number;
  actions?: (c: Checkpoint) => any; actionsTitle?: string }) {
  const rows = props.checkpoints;
  if (!rows.length) return <p class="muted">No checkpoints yet.</p>;
  return (
    <table id="checkpoints">
      <caption>Checkpoints</caption>
      <thead><tr><th scope="col">UUID</th><th scope="col">Trial</th><th scope="col">Batches</th>
        <th scope="col">Searcher metric</th><th scope="col">Size</th><th scope="col">State</th>
        {props.actions && <th scope="col">{props.actionsTitle ?? "Actions"}</th>}</tr></thead>
      <tbody>{rows.map((c) => {
        const trial = checkpointTrial(c);
        const exp = c.training?.experimentId ?? props.experimentId;
        const metric = c.training?.searcherMetric;
        return (
          <tr data-uuid={c.uuid}><td><code>{c.uuid}</code></td>
            <td data-col="trial">{trial === null ? "" : exp ?
              <Link href={`/experiments/${exp}/trials/${trial}`}>{trial}</Link> : trial}</td>
            <td class="num">{batchesOf(c) ?? ""}</td>
            <td class="num">{typeof metric === "number" ? formatNumber(metric) : ""}</td>
            <td class="num">{size(c)}</td>
            <td>{c.state.replace("STATE_", "")}</td>
            {props.actions && <td>{props.actions(c)}</td>}</tr>);
      })}</tbody>
    </table>
  );
}

import { useState } from "preact/hooks";
import { post } from "./api";
import { submitted } from "./forms";
import { humanize } from "./formatting";

// One row of the queue with Determined's UpdateJobQueue changes (POST /api/v1/job-queues):
// priority, weight, and a move ahead of or behind another job of the same pool. A caller who
// may not change the job sees the master's refusal in the row. Each value is read off its form
// when it is submitted (forms.ts). A form is keyed by the job's value, so a change made
// elsewhere (the CLI, another user) replaces the field's value at the next refresh.
export function JobRow(props: { job: any; others: any[]; onChanged: () => void }) {
  const j = props.job;
  const [msg, setMsg] = useState("");
  const peers = props.others.filter((o) => o.jobId !== j.jobId && o.resourcePool === j.resourcePool);
  const send = async (update: Record<string, unknown>, what: string) => {
    try {
      await post("/api/v1/job-queues", { updates: [{ jobId: j.jobId, ...update }] });
      setMsg(`${what}: done`);
      props.onChanged();
    } catch (e: any) {
      setMsg(`${what}: ${e.message}`);
    }
  };
  const submit = (field: "priority" | "weight") => (e: Event) => {
    send({ [field]: Number(submitted(e)(field)) }, field);
  };
  const move = (e: Event) => {
    const target = submitted(e)("relative-to");
    if ((e as SubmitEvent).submitter?.dataset.action === "behind") {
      send({ behindOf: target }, "move behind");
    } else {
      send({ aheadOf: target }, "move ahead");
    }
  };
  return (
    <tr data-job-id={j.jobId}>
      <td>{j.queuePosition || (j.summary?.jobsAhead ?? "")}</td><td>{j.name}</td><td>{humanize(String(j.type ?? "").replace("TYPE_", "").toLowerCase())}</td>
      <td>{j.username}</td><td>{j.resourcePool}</td>
      <td><form key={`p${j.priority}`} onSubmit={submit("priority")}><label><span class="sr-only">Priority of {j.name}</span>
        <input type="number" name="priority" defaultValue={String(j.priority ?? "")} size={4} />
        </label><button type="submit" data-action="priority">Set</button></form></td>
      <td><form key={`w${j.weight}`} onSubmit={submit("weight")}><label><span class="sr-only">Weight of {j.name}</span>
        <input type="number" name="weight" min="0" step="any" defaultValue={String(j.weight ?? "")}
          size={4} /></label><button type="submit" data-action="weight">Set</button></form></td>
      <td>{peers.length > 0 && (
        <form onSubmit={move}>
          <label><span class="sr-only">Move {j.name} relative to</span>
            <select name="relative-to">
              {peers.map((o) => <option value={o.jobId}>{o.name} ({o.jobId})</option>)}</select></label>
          <button type="submit" data-action="ahead">Ahead</button>
          <button type="submit" data-action="behind">Behind</button>
        </form>)}</td>
      <td>{j.summary?.state?.replace("STATE_", "")}</td>
      <td>{j.waitReason} <span role="status" class="job-msg">{msg}</span></td>
    </tr>
  );
}

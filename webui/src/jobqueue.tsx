import { useState } from "preact/hooks";
import { post } from "./api";

// One row of the queue with Determined's UpdateJobQueue changes (POST /api/v1/job-queues):
// priority, weight, and a move ahead of or behind another job of the same pool. A caller who
// may not change the job sees the master's refusal in the row.
export function JobRow(props: { job: any; others: any[]; onChanged: () => void }) {
  const j = props.job;
  const [priority, setPriority] = useState(String(j.priority ?? ""));
  const [weight, setWeight] = useState(String(j.weight ?? ""));
  const [other, setOther] = useState("");
  const [msg, setMsg] = useState("");
  const peers = props.others.filter((o) => o.jobId !== j.jobId && o.resourcePool === j.resourcePool);
  const target = other || peers[0]?.jobId || "";
  const send = async (update: Record<string, unknown>, what: string) => {
    try {
      await post("/api/v1/job-queues", { updates: [{ jobId: j.jobId, ...update }] });
      setMsg(`${what}: done`);
      props.onChanged();
    } catch (e: any) {
      setMsg(`${what}: ${e.message}`);
    }
  };
  return (
    <tr data-job-id={j.jobId}>
      <td>{j.queuePosition || (j.summary?.jobsAhead ?? "")}</td><td>{j.name}</td><td>{j.type}</td>
      <td>{j.username}</td><td>{j.resourcePool}</td>
      <td><label><span class="sr-only">Priority of {j.name}</span>
        <input type="number" name="priority" value={priority} size={4}
          onInput={(e) => setPriority((e.target as HTMLInputElement).value)} /></label>
        <button type="button" data-action="priority"
          onClick={() => send({ priority: Number(priority) }, "priority")}>Set</button></td>
      <td><label><span class="sr-only">Weight of {j.name}</span>
        <input type="number" name="weight" min="0" step="any" value={weight} size={4}
          onInput={(e) => setWeight((e.target as HTMLInputElement).value)} /></label>
        <button type="button" data-action="weight"
          onClick={() => send({ weight: Number(weight) }, "weight")}>Set</button></td>
      <td>{peers.length > 0 && (
        <>
          <label><span class="sr-only">Move {j.name} relative to</span>
            <select name="relative-to" value={target}
              onChange={(e) => setOther((e.target as HTMLSelectElement).value)}>
              {peers.map((o) => <option value={o.jobId}>{o.name} ({o.jobId})</option>)}</select></label>
          <button type="button" data-action="ahead"
            onClick={() => send({ aheadOf: target }, "move ahead")}>Ahead</button>
          <button type="button" data-action="behind"
            onClick={() => send({ behindOf: target }, "move behind")}>Behind</button>
        </>)}</td>
      <td>{j.summary?.state?.replace("STATE_", "")}</td>
      <td>{j.waitReason} <span role="status" class="job-msg">{msg}</span></td>
    </tr>
  );
}

import { useState } from "preact/hooks";
import { api, ApiError, post } from "./api";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs } from "./layout";
import { usePoll } from "./poll";

// Webhooks (Determined's v1Webhook): a URL called when an experiment reaches a state, or when a
// trial raises a custom alert; Slack or the default JSON format; for a whole workspace or only
// the experiments whose config names the webhook.
type Trigger = { triggerType: string; condition?: { state?: string } };
type Webhook = { id: number; name: string; url: string; webhookType: string; mode: string;
  workspaceId?: number; triggers: Trigger[] };

const STATES = ["COMPLETED", "ERROR", "CANCELED", "ACTIVE", "PAUSED"];

export function Webhooks() {
  const [list, err, reload] = usePoll(() => api<{ webhooks: Webhook[] }>("/api/v1/webhooks"), [], 10000);
  const [msg, setMsg] = useState("");
  const missing = err && /not found/i.test(err);
  return (
    <section aria-labelledby="webhooks-title">
      <Breadcrumbs crumbs={[["Webhooks"]]} />
      <h1 id="webhooks-title">Webhooks</h1>
      {missing ? <p role="alert">This master does not serve webhooks.</p> : err && <p role="alert" class="error">{err}</p>}
      <table id="webhook-table"><caption class="sr-only">Webhooks</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">URL</th><th scope="col">Type</th>
          <th scope="col">Triggers</th><th scope="col">Scope</th><th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.webhooks ?? []).map((w) => (
          <tr data-webhook-id={w.id}><td>{w.name}</td><td><code>{w.url}</code></td>
            <td>{w.webhookType.replace("WEBHOOK_TYPE_", "").toLowerCase()}</td>
            <td>{w.triggers.map((t) => t.triggerType === "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE" ?
              `state ${String(t.condition?.state ?? "").replace("STATE_", "")}` :
              t.triggerType.replace("TRIGGER_TYPE_", "").toLowerCase()).join(", ")}</td>
            <td>{w.mode === "WEBHOOK_MODE_SPECIFIC" ? "named experiments" : `workspace ${w.workspaceId ?? ""}`}</td>
            <td><button type="button" onClick={async () => {
              try { await post(`/api/v1/webhooks/${w.id}/test`, {}); setMsg(`test sent to ${w.name}`); }
              catch (x: any) { setMsg(x.message); }
            }}>Test<span class="sr-only"> {w.name}</span></button>{" "}
              <ConfirmButton label="Delete" id={`delete-webhook-${w.id}`} confirm="Delete webhook"
                question={`Delete webhook ${w.name}?`} onConfirm={async () => {
                try { await api(`/api/v1/webhooks/${w.id}`, { method: "DELETE" }); reload(); }
                catch (x: any) { setMsg(x.message); }
              }} /></td></tr>))}</tbody>
      </table>
      <form class="stack" aria-labelledby="webhook-form-title" onSubmit={async (e) => {
        const field = submitted(e);
        const form = e.currentTarget as HTMLFormElement;
        const states = Array.from(form.querySelectorAll<HTMLInputElement>("input[name=state]:checked")).map((i) => i.value);
        const triggers: Trigger[] = states.map((s) => ({ triggerType: "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE",
          condition: { state: s } }));
        if (field("custom")) triggers.push({ triggerType: "TRIGGER_TYPE_CUSTOM" });
        try {
          await post("/api/v1/webhooks", { name: field("name").trim(), url: field("url").trim(),
            webhookType: field("type"), mode: field("mode"), workspaceId: Number(field("workspace")) || undefined, triggers });
          setMsg(`webhook ${field("name")} created`);
          reload();
        } catch (x: any) { setMsg(x instanceof ApiError && x.status === 404 ? "This master does not serve webhooks." : x.message); }
      }}>
        <h2 id="webhook-form-title">New webhook</h2>
        <label>Name <input name="name" required maxLength={255} /></label>
        <label>URL <input name="url" type="url" required size={50} placeholder="https://hooks.slack.com/…" /></label>
        <label>Format <select name="type"><option value="WEBHOOK_TYPE_DEFAULT">default (JSON)</option>
          <option value="WEBHOOK_TYPE_SLACK">Slack</option></select></label>
        <label>Scope <select name="mode"><option value="WEBHOOK_MODE_WORKSPACE">every experiment of the workspace</option>
          <option value="WEBHOOK_MODE_SPECIFIC">experiments that name it</option></select></label>
        <label>Workspace id <input name="workspace" type="number" min="1" defaultValue="1" /></label>
        <fieldset><legend>Triggers</legend>
          {STATES.map((s) => <label><input type="checkbox" name="state" value={s} defaultChecked={s === "COMPLETED" || s === "ERROR"} /> {s.toLowerCase()}</label>)}
          <label><input type="checkbox" name="custom" value="1" /> custom alerts</label>
        </fieldset>
        <div class="toolbar"><button type="submit">Create webhook</button></div>
        <p role="status" id="webhook-status">{msg}</p>
      </form>
    </section>
  );
}

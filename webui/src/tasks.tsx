import { useState } from "preact/hooks";
import { api, post } from "./api";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs } from "./layout";
import { Logs } from "./pages";
import { usePoll } from "./poll";
import { Link, navigate } from "./router";

// Launching a notebook, TensorBoard, shell or command from the UI: the same requests the CLI's
// `det notebook start` etc. send (POST /api/v1/{notebooks,tensorboards,shells,commands}), with a
// template, a resource pool and slots; a TensorBoard names the experiments it reads. The new
// task's logs open once it is accepted.
const KINDS: [string, string, string][] = [
  ["notebooks", "notebook", "JupyterLab notebook"],
  ["tensorboards", "tensorboard", "TensorBoard"],
  ["shells", "shell", "Shell"],
  ["commands", "command", "Command"],
];

function launchBody(kind: string, field: (n: string) => string): Record<string, unknown> {
  const resources: Record<string, unknown> = {};
  const slots = field("slots").trim();
  if (slots !== "") resources.slots = Number(slots);
  if (field("pool")) resources.resource_pool = field("pool");
  const config: Record<string, unknown> = { resources };
  if (field("description").trim()) config.description = field("description").trim();
  if (kind === "commands") config.entrypoint = field("entrypoint");
  const body: Record<string, unknown> = { config };
  if (field("template")) body.templateName = field("template");
  if (kind === "tensorboards") {
    body.experimentIds = field("experiments").split(/[\s,]+/).filter(Boolean).map(Number);
  }
  return body;
}

export function TaskLaunch() {
  const [kind, setKind] = useState("notebooks");
  const [msg, setMsg] = useState("");
  const [pools] = usePoll(() => api<{ resourcePools: { name: string }[] }>("/api/v1/resource-pools"), [], 0);
  const [templates] = usePoll(() => api<{ templates: { name: string }[] }>("/api/v1/templates?limit=500"), [], 0);
  const [, singular, title] = KINDS.find(([k]) => k === kind)!;
  return (
    <form class="launch" aria-labelledby="launch-title" onSubmit={async (e) => {
      const field = submitted(e);
      const body = launchBody(kind, field);
      if (kind === "tensorboards" && !(body.experimentIds as number[]).every((n) => Number.isInteger(n) && n > 0)) {
        setMsg("experiment ids are whole numbers, separated by commas");
        return;
      }
      try {
        const r = await post<any>(`/api/v1/${kind}`, body);
        const task = r[singular] ?? r.notebook ?? r.command ?? {};
        setMsg(`${title} ${task.id} launched`);
        navigate(`/${kind}/${task.id}/logs`);
      } catch (x: any) { setMsg(`${title}: ${x.message}`); }
    }}>
      <h2 id="launch-title">Launch a task</h2>
      <div class="toolbar">
        <label>Type <select name="kind" id="launch-kind" value={kind}
          onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
          {KINDS.map(([k, , t]) => <option value={k}>{t}</option>)}</select></label>
        <label>Description <input name="description" maxLength={200} /></label>
        <label>Resource pool <select name="pool"><option value="">default</option>
          {(pools?.resourcePools ?? []).map((p) => <option value={p.name}>{p.name}</option>)}</select></label>
        <label>Slots <input name="slots" type="number" min="0" max="64" size={3} /></label>
        <label>Template <select name="template"><option value="">none</option>
          {(templates?.templates ?? []).map((t) => <option value={t.name}>{t.name}</option>)}</select></label>
        {kind === "commands" && <label>Command <input name="entrypoint" required size={40}
          placeholder="python train.py" /></label>}
        {kind === "tensorboards" && <label>Experiment ids <input name="experiments" required size={16}
          placeholder="3, 4" /></label>}
        <button type="submit">Launch {title}</button>
      </div>
      <p role="status" id="launch-status">{msg}</p>
    </form>
  );
}

// Commands, notebooks, TensorBoards and shells. A notebook's or TensorBoard's service opens through
// the master's proxy (its serviceAddress, /proxy/<id>/), which reads the UI's HttpOnly `auth` cookie.
const TABLES: [string, string][] = [["commands", "Commands"], ["notebooks", "Notebooks"],
  ["tensorboards", "TensorBoards"], ["shells", "Shells"]];

function TaskTable(props: { path: string; title: string }) {
  const [list, err, reload] = usePoll(() => api<any>(`/api/v1/${props.path}`), [props.path], 5000);
  const [msg, setMsg] = useState("");
  const rows: any[] = list?.[props.path] ?? [];
  const opens = props.path === "notebooks" || props.path === "tensorboards";
  const cols = opens ? 7 : 6;
  return (
    <table id={`tasks-${props.path}`}><caption>{props.title}</caption>
      <thead><tr><th scope="col">Id</th><th scope="col">Description</th><th scope="col">State</th>
        <th scope="col">Owner</th>{opens && <th scope="col">Open</th>}<th scope="col">Logs</th>
        <th scope="col">Actions</th></tr></thead>
      <tbody>
        {err && <tr><td colSpan={cols} role="alert">{err}</td></tr>}
        {msg && <tr><td colSpan={cols} role="status">{msg}</td></tr>}
        {rows.map((c) => (
          <tr data-task-id={c.id}><td>{c.id}</td><td>{c.description}</td>
            <td>{String(c.state ?? "").replace("STATE_", "")}</td><td>{c.username}</td>
            {opens && <td>{c.serviceAddress && c.state === "STATE_RUNNING" ?
              <a href={c.serviceAddress}>Open {c.description || c.id}</a> :
              <span class="muted">not running</span>}</td>}
            <td><Link href={`/${props.path}/${c.id}/logs`}>Logs<span class="sr-only"> of {c.description || c.id}</span></Link></td>
            <td>{c.state !== "STATE_TERMINATED" && (
              <ConfirmButton label="Kill" id={`kill-${c.id}`} confirm="Kill"
                question={`Kill ${c.description || c.id}?`} onConfirm={async () => {
                  try { await post(`/api/v1/${props.path}/${c.id}/kill`, {}); setMsg(`${c.description || c.id}: killed`); reload(); }
                  catch (x: any) { setMsg(`${c.description || c.id}: ${x.message}`); }
                }} />)}</td></tr>))}
      </tbody>
    </table>
  );
}

export function TasksPage() {
  return (
    <section aria-labelledby="tasks-title">
      <Breadcrumbs crumbs={[["Tasks"]]} />
      <h1 id="tasks-title">Tasks</h1>
      {TABLES.map(([path, title]) => <TaskTable path={path} title={title} />)}
      <TaskLaunch />
    </section>
  );
}
const TYPES = new Set(KINDS.map(([k]) => k));

// /det/{commands,notebooks,shells,tensorboards}/{id}/logs: a task's logs, followed while it runs.
export function TaskLogs(props: { type: string; id: string }) {
  const known = TYPES.has(props.type);
  const [task, err] = usePoll(() => api<any>(`/api/v1/tasks/${encodeURIComponent(props.id)}`), [props.id], 5000);
  const allocs: any[] = task?.task?.allocations ?? [];
  const state = String(allocs[allocs.length - 1]?.state ?? "");
  // Followed until the master says the task ended (then the stream ends by itself).
  const live = !task?.task?.endTime;
  return (
    <section aria-labelledby="task-logs-title">
      <Breadcrumbs crumbs={[["Tasks", "/tasks"], [`${props.id.slice(0, 8)} logs`]]} />
      <h1 id="task-logs-title">Logs of {known ? KINDS.find(([k]) => k === props.type)![2].toLowerCase() : "task"}{" "}
        <code>{props.id}</code></h1>
      {err && <p role="alert" class="error">{err}</p>}
      <p class="muted">{state ? `State ${state.replace("STATE_", "")}` : ""} <Link href="/tasks">All tasks</Link></p>
      <Logs path={`/api/v1/tasks/${encodeURIComponent(props.id)}/logs`} live={live} />
    </section>
  );
}

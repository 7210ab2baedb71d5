import { useState } from "preact/hooks";
import { api, post } from "./api";
import { Checkpoint, CheckpointTable } from "./checkpoints";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs } from "./layout";
import { usePoll } from "./poll";
import { Link, navigate } from "./router";

// The model registry: models, their versions, and registering a checkpoint as a new version.
// Determined's URLs name a model by id (/models/7); the master also answers by name.
type Model = { id: number; name: string; description: string; labels: string[]; archived: boolean;
  numVersions: number; username: string; lastUpdatedTime: string; workspaceId: number };
type Version = { id: number; version: number; name: string; comment: string; labels: string[];
  username: string; creationTime: string; checkpoint: { uuid: string; state: string; training?: any;
    metadata?: any; resources?: Record<string, string> }; model: Model; notes: string; metadata: Record<string, unknown> };

const when = (t: string) => (t ? new Date(t).toLocaleString() : "");

export function ModelList() {
  const [list, err, reload] = usePoll(() => api<{ models: Model[] }>(
    "/api/v1/models?limit=500&sortBy=SORT_BY_LAST_UPDATED_TIME&orderBy=ORDER_BY_DESC"), [], 10000);
  const [msg, setMsg] = useState("");
  return (
    <section aria-labelledby="models-title">
      <Breadcrumbs crumbs={[["Model registry"]]} />
      <h1 id="models-title">Model registry</h1>
      <form class="toolbar" aria-label="New model" onSubmit={async (e) => {
        const field = submitted(e);
        try {
          const r = await post<{ model: Model }>("/api/v1/models",
            { name: field("name").trim(), description: field("description") });
          navigate(`/models/${r.model.id}`);
        } catch (x: any) { setMsg(x.message); }
      }}>
        <label>New model <input name="name" required maxLength={200} /></label>
        <label>Description <input name="description" maxLength={500} /></label>
        <button type="submit">Create model</button>
        <span role="status">{msg}</span>
      </form>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="model-table"><caption class="sr-only">Models</caption>
        <thead><tr><th scope="col">Model</th><th scope="col">Description</th><th scope="col">Versions</th>
          <th scope="col">Labels</th><th scope="col">Owner</th><th scope="col">Updated</th>
          <th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.models ?? []).map((m) => (
          <tr data-model-id={m.id}><td><Link href={`/models/${m.id}`}>{m.name}</Link>{m.archived && " (archived)"}</td>
            <td>{m.description}</td><td>{m.numVersions}</td><td>{m.labels.join(", ")}</td>
            <td>{m.username}</td><td>{when(m.lastUpdatedTime)}</td>
            <td><ConfirmButton label="Delete" id={`delete-model-${m.id}`} confirm="Delete model"
              question={`Delete model ${m.name} and its versions?`} onConfirm={async () => {
              try { await api(`/api/v1/models/${m.id}`, { method: "DELETE" }); reload(); }
              catch (x: any) { setMsg(x.message); }
            }} /></td></tr>))}</tbody>
      </table>
      {list && !list.models.length && <p class="muted">No models yet: create one, then register a checkpoint
        from a trial's checkpoints tab.</p>}
    </section>
  );
}

export function ModelDetail(props: { model: string }) {
  const [data, err, reload] = usePoll(() => api<{ model: Model; modelVersions: Version[] }>(
    `/api/v1/models/${encodeURIComponent(props.model)}/versions?limit=500`), [props.model], 10000);
  const [msg, setMsg] = useState("");
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!data) return <p>Loading…</p>;
  const m = data.model;
  return (
    <section aria-labelledby="model-title">
      <Breadcrumbs crumbs={[["Model registry", "/models"], [m.name]]} />
      <h1 id="model-title">Model {m.name}</h1>
      <p>{m.description || <span class="muted">No description.</span>} · owner {m.username}
        {m.labels.length > 0 && <> · labels {m.labels.join(", ")}</>}</p>
      <div class="toolbar">
        <button type="button" onClick={async () => {
          try { await post(`/api/v1/models/${m.id}/${m.archived ? "unarchive" : "archive"}`, {}); reload(); }
          catch (x: any) { setMsg(x.message); }
        }}>{m.archived ? "Unarchive" : "Archive"}</button>
      </div>
      <EditForm title={`Edit model ${m.name}`} path={`/api/v1/models/${m.id}`}
        fields={[["description", "Description", m.description], ["labels", "Labels (comma separated)", m.labels.join(", ")]]}
        onDone={reload} />
      <RegisterForm model={m.name} onDone={(v) => navigate(`/models/${m.id}/versions/${v}`)} />
      <span role="status">{msg}</span>
      <table id="version-table"><caption>Versions of {m.name}</caption>
        <thead><tr><th scope="col">Version</th><th scope="col">Name</th><th scope="col">Checkpoint</th>
          <th scope="col">Comment</th><th scope="col">Owner</th><th scope="col">Registered</th></tr></thead>
        <tbody>{data.modelVersions.map((v) => (
          <tr data-version={v.version}><td><Link href={`/models/${m.id}/versions/${v.version}`}>{v.version}</Link></td>
            <td>{v.name}</td><td><code>{v.checkpoint.uuid}</code></td><td>{v.comment}</td><td>{v.username}</td>
            <td>{when(v.creationTime)}</td></tr>))}</tbody>
      </table>
    </section>
  );
}

// Registers a checkpoint as the model's next version (POST /api/v1/models/{name}/versions). With
// no `model`, the form asks which model (the checkpoints tabs use it that way).
export function RegisterForm(props: { model?: string; checkpoint?: string; onDone: (version: number) => void }) {
  const [msg, setMsg] = useState("");
  const [models] = usePoll(() => (props.model ? Promise.resolve({ models: [] as Model[] }) :
    api<{ models: Model[] }>("/api/v1/models?limit=500")), [props.model], 0);
  return (
    <form class="toolbar register" aria-label="Register a checkpoint" onSubmit={async (e) => {
      const field = submitted(e);
      const model = props.model ?? field("model");
      const uuid = props.checkpoint ?? field("checkpoint").trim();
      try {
        const r = await post<{ modelVersion: Version }>(`/api/v1/models/${encodeURIComponent(model)}/versions`,
          { checkpointUuid: uuid, modelName: model, name: field("version-name") || undefined,
            comment: field("comment") || undefined });
        setMsg(`registered as version ${r.modelVersion.version} of ${model}`);
        props.onDone(r.modelVersion.version);
      } catch (x: any) { setMsg(x.message); }
    }}>
      {!props.model && (
        <label>Model <select name="model" required>
          {(models?.models ?? []).map((m) => <option value={m.name}>{m.name}</option>)}</select></label>)}
      {!props.checkpoint && <label>Checkpoint UUID <input name="checkpoint" required size={36} /></label>}
      <label>Version name <input name="version-name" maxLength={200} /></label>
      <label>Comment <input name="comment" maxLength={500} /></label>
      <button type="submit">Register{props.checkpoint ? ` checkpoint ${props.checkpoint.slice(0, 8)}` : " checkpoint"}</button>
      <span role="status">{msg}</span>
    </form>
  );
}

export function VersionDetail(props: { model: string; version: number }) {
  const [data, err, reload] = usePoll(() => api<{ modelVersion: Version }>(
    `/api/v1/models/${encodeURIComponent(props.model)}/versions/${props.version}`), [props.model, props.version], 0);
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!data) return <p>Loading…</p>;
  const v = data.modelVersion;
  const c = v.checkpoint;
  const trialId = c.training?.trialId ?? c.metadata?.trial_id;
  const expId = c.training?.experimentId;
  return (
    <section aria-labelledby="version-title">
      <Breadcrumbs crumbs={[["Model registry", "/models"], [v.model.name, `/models/${v.model.id}`],
        [`Version ${v.version}`]]} />
      <h1 id="version-title">{v.model.name} version {v.version}{v.name && `: ${v.name}`}</h1>
      <table><caption>Version {v.version}</caption><tbody>
        <tr><th scope="row">Checkpoint</th><td><code>{c.uuid}</code> ({c.state.replace("STATE_", "")})</td></tr>
        <tr><th scope="row">From</th><td>{expId && trialId ?
          <Link href={`/experiments/${expId}/trials/${trialId}`}>experiment {expId}, trial {trialId}</Link> : "—"}</td></tr>
        <tr><th scope="row">Comment</th><td>{v.comment}</td></tr>
        <tr><th scope="row">Labels</th><td>{v.labels.join(", ")}</td></tr>
        <tr><th scope="row">Registered</th><td>{when(v.creationTime)} by {v.username}</td></tr>
        <tr><th scope="row">Files</th><td>{Object.keys(c.resources ?? {}).length}</td></tr>
      </tbody></table>
      <EditForm title={`Edit version ${v.version}`} path={`/api/v1/models/${v.model.id}/versions/${v.version}`}
        fields={[["name", "Name", v.name], ["comment", "Comment", v.comment],
          ["labels", "Labels (comma separated)", v.labels.join(", ")], ["notes", "Notes", v.notes]]}
        onDone={reload} />
      {v.notes && <><h2>Notes</h2><pre>{v.notes}</pre></>}
      <h2>Metadata</h2>
      <pre class="config" tabIndex={0}>{JSON.stringify(v.metadata, null, 2)}</pre>
    </section>
  );
}

// An experiment's or trial's checkpoints; a completed one is registered as a model version from
// its row (the form opens under the table, for the model the user picks).
export function RegisterableCheckpoints(props: { checkpoints: Checkpoint[]; experimentId: number }) {
  const [registering, setRegistering] = useState<string | null>(null);
  return (
    <div>
      <CheckpointTable checkpoints={props.checkpoints} experimentId={props.experimentId}
        actionsTitle="Model registry" actions={(c) => c.state === "STATE_COMPLETED" && (
          <button type="button" aria-expanded={registering === c.uuid}
            onClick={() => setRegistering(registering === c.uuid ? null : c.uuid)}>
            Register<span class="sr-only"> checkpoint {c.uuid}</span></button>)} />
      {registering && <RegisterForm checkpoint={registering} key={registering} onDone={() => undefined} />}
    </div>
  );
}

// PATCHes a model's or a version's text fields; `labels` is sent as a list.
function EditForm(props: { title: string; path: string; fields: [string, string, string][]; onDone: () => void }) {
  const [msg, setMsg] = useState("");
  return (
    <details class="edit">
      <summary>{props.title}</summary>
      <form class="toolbar" aria-label={props.title} onSubmit={async (e) => {
        const field = submitted(e);
        const body: Record<string, unknown> = {};
        for (const [name] of props.fields) {
          body[name] = name === "labels" ? field(name).split(",").map((l) => l.trim()).filter(Boolean) : field(name);
        }
        try {
          await api(props.path, { method: "PATCH", body: JSON.stringify(body) });
          setMsg("saved");
          props.onDone();
        } catch (x: any) { setMsg(x.message); }
      }}>
        {props.fields.map(([name, label, value]) => (
          <label>{label} {name === "notes" ? <textarea name={name} rows={3} cols={50} defaultValue={value} /> :
            <input name={name} defaultValue={value} maxLength={500} />}</label>))}
        <button type="submit">Save</button>
        <span role="status">{msg}</span>
      </form>
    </details>
  );
}

import { useState } from "preact/hooks";
import { api, post } from "./api";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs, TabLinks } from "./layout";
import { usePoll } from "./poll";
import { Link, navigate } from "./router";

type Workspace = { id: number; name: string; username: string; archived: boolean; immutable: boolean; pinned: boolean;
  numProjects: number; numExperiments: number; defaultComputePool?: string; defaultAuxPool?: string };
type Project = { id: number; name: string; description: string; workspaceId: number; workspaceName: string;
  numExperiments: number; numActiveExperiments: number; username: string; archived: boolean; immutable: boolean };

// Pinned workspaces are the caller's own (POST /api/v1/workspaces/{id}/pin and /unpin, as
// Determined): they head the list and sit in the navigation's pinned bar, which listens for
// "resolute-pins" to reload.
export const pinnedWorkspaces = () =>
  api<{ workspaces: Workspace[] }>("/api/v1/workspaces?pinned=true&limit=50").then((r) => r.workspaces);

export function WorkspaceList() {
  const [list, err, reload] = usePoll(() => api<{ workspaces: Workspace[] }>("/api/v1/workspaces?limit=500"), [], 10000);
  const [msg, setMsg] = useState("");
  const toggle = async (w: Workspace) => {
    try {
      await post(`/api/v1/workspaces/${w.id}/${w.pinned ? "unpin" : "pin"}`, {});
      window.dispatchEvent(new Event("resolute-pins"));
      reload();
    } catch (x: any) { setMsg(x.message); }
  };
  const rows = [...(list?.workspaces ?? [])].sort((a, b) => Number(b.pinned) - Number(a.pinned) || a.id - b.id);
  return (
    <section aria-labelledby="workspaces-title">
      <Breadcrumbs crumbs={[["Workspaces"]]} />
      <h1 id="workspaces-title">Workspaces</h1>
      <form class="toolbar" aria-label="New workspace" onSubmit={async (e) => {
        const name = submitted(e)("name").trim();
        if (!name) return;
        try {
          const r = await post<{ workspace: Workspace }>("/api/v1/workspaces", { name });
          navigate(`/workspaces/${r.workspace.id}`);
        } catch (x: any) { setMsg(x.message); }
      }}>
        <label>New workspace <input name="name" maxLength={80} required /></label>
        <button type="submit">Create workspace</button>
        <span role="status">{msg}</span>
      </form>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="workspace-table"><caption class="sr-only">Workspaces</caption>
        <thead><tr><th scope="col">Workspace</th><th scope="col">Owner</th><th scope="col">Projects</th>
          <th scope="col">Experiments</th><th scope="col">Pinned</th><th scope="col">Archived</th></tr></thead>
        <tbody>{rows.map((w) => (
          <tr data-workspace-id={w.id}><td><Link href={`/workspaces/${w.id}`}>{w.name}</Link></td>
            <td>{w.username}</td><td>{w.numProjects}</td><td>{w.numExperiments}</td>
            <td><button type="button" aria-pressed={w.pinned} onClick={() => toggle(w)}>
              {w.pinned ? "Unpin" : "Pin"}<span class="sr-only"> {w.name}</span></button></td>
            <td>{w.immutable ? "" : (
              <button type="button" onClick={async () => {
                try { await post(`/api/v1/workspaces/${w.id}/${w.archived ? "unarchive" : "archive"}`, {}); reload(); }
                catch (x: any) { setMsg(x.message); }
              }}>{w.archived ? "Unarchive" : "Archive"}<span class="sr-only"> {w.name}</span></button>)}</td></tr>))}
        </tbody>
      </table>
    </section>
  );
}

const WS_TABS: [string, string][] = [["projects", "Projects"], ["resource-pools", "Resource pools"]];

export function WorkspaceDetail(props: { id: number; tab?: string }) {
  const tab = props.tab === "resource-pools" ? "resource-pools" : "projects";
  const [ws, err] = usePoll(() => api<{ workspace: Workspace }>(`/api/v1/workspaces/${props.id}`), [props.id], 10000);
  if (err) return <p role="alert" class="error">{err}</p>;
  if (!ws) return <p>Loading…</p>;
  const w = ws.workspace;
  return (
    <section aria-labelledby="workspace-title">
      <Breadcrumbs crumbs={[["Workspaces", "/workspaces"], [w.name]]} />
      <h1 id="workspace-title">Workspace {w.name}</h1>
      <p class="muted">Owner {w.username} · {w.numProjects} projects · {w.numExperiments} experiments
        {w.archived && " · archived"}</p>
      <TabLinks label="Workspace views" base={`/workspaces/${w.id}`} tabs={WS_TABS} current={tab} />
      {tab === "projects" ? <ProjectList workspace={w} /> : <WorkspacePools workspace={w} />}
    </section>
  );
}

function ProjectList(props: { workspace: Workspace }) {
  const w = props.workspace;
  const [list, err, reload] = usePoll(() => api<{ projects: Project[] }>(
    `/api/v1/workspaces/${w.id}/projects?limit=500`), [w.id], 10000);
  const [msg, setMsg] = useState("");
  return (
    <div>
      <form class="toolbar" aria-label="New project" onSubmit={async (e) => {
        const field = submitted(e);
        const name = field("name").trim();
        if (!name) return;
        try {
          await post(`/api/v1/workspaces/${w.id}/projects`, { name, workspaceId: w.id, description: field("description") });
          reload();
          setMsg(`project ${name} created`);
        } catch (x: any) { setMsg(x.message); }
      }}>
        <label>New project <input name="name" maxLength={80} required /></label>
        <label>Description <input name="description" maxLength={200} /></label>
        <button type="submit">Create project</button>
        <span role="status">{msg}</span>
      </form>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="project-table"><caption>Projects of {w.name}</caption>
        <thead><tr><th scope="col">Project</th><th scope="col">Description</th><th scope="col">Owner</th>
          <th scope="col">Experiments</th><th scope="col">Active</th><th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.projects ?? []).map((p) => (
          <tr data-project-id={p.id}><td><Link href={`/projects/${p.id}/experiments`}>{p.name}</Link></td>
            <td>{p.description}</td><td>{p.username}</td><td>{p.numExperiments}</td><td>{p.numActiveExperiments}</td>
            <td>{!p.immutable && <ConfirmButton label="Delete" id={`delete-project-${p.id}`} confirm="Delete project"
              question={`Delete project ${p.name}?`}
              onConfirm={async () => {
                try { await api(`/api/v1/projects/${p.id}`, { method: "DELETE" }); reload(); }
                catch (x: any) { setMsg(x.message); }
              }} />}</td></tr>))}</tbody>
      </table>
    </div>
  );
}

function WorkspacePools(props: { workspace: Workspace }) {
  const w = props.workspace;
  const [pools, err] = usePoll(() => api<{ resourcePools: string[] }>(
    `/api/v1/workspaces/${w.id}/available-resource-pools`), [w.id], 10000);
  return (
    <div>
      <p>Default compute pool: <strong>{w.defaultComputePool || "the cluster's default"}</strong> · default
        auxiliary pool: <strong>{w.defaultAuxPool || "the cluster's default"}</strong></p>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="workspace-pools"><caption>Resource pools available to {w.name}</caption>
        <thead><tr><th scope="col">Pool</th></tr></thead>
        <tbody>{(pools?.resourcePools ?? []).map((p) => (
          <tr><td><Link href={`/resourcepool/${encodeURIComponent(p)}`}>{p}</Link></td></tr>))}</tbody>
      </table>
    </div>
  );
}

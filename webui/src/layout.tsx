import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { Link, navigate } from "./router";

// Breadcrumbs from a page's place: workspace › project › experiment › trial. A page names what it
// knows (a trial page its experiment); the rest is looked up (an experiment's project, a
// project's workspace), so a link pasted from elsewhere still shows where the page sits.
export type Crumb = [label: string, href?: string];

export function Breadcrumbs(props: { crumbs: Crumb[] }) {
  if (!props.crumbs.length) return null;
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <ol>{props.crumbs.map(([label, href], i) => (
        <li>{href && i < props.crumbs.length - 1 ? <Link href={href}>{label}</Link> :
          <span aria-current={i === props.crumbs.length - 1 ? "page" : undefined}>{label}</span>}</li>))}
      </ol>
    </nav>
  );
}

type Place = { workspace?: { id: number; name: string }; project?: { id: number; name: string } };

// The workspace and project above a project or an experiment (null while loading or when the
// caller may not read them: the crumbs then start at what the page knows).
export function usePlace(projectId?: number, experimentId?: number): Place {
  const [place, setPlace] = useState<Place>({});
  useEffect(() => {
    let stop = false;
    (async () => {
      let pid = projectId;
      if (pid === undefined && experimentId !== undefined) {
        const e = await api<{ experiment: { projectId: number } }>(`/api/v1/experiments/${experimentId}`);
        pid = e.experiment.projectId;
      }
      if (pid === undefined) return;
      const p = await api<{ project: { id: number; name: string; workspaceId: number; workspaceName: string } }>(
        `/api/v1/projects/${pid}`);
      if (!stop) setPlace({ workspace: { id: p.project.workspaceId, name: p.project.workspaceName },
        project: { id: p.project.id, name: p.project.name } });
    })().catch(() => undefined);
    return () => { stop = true; };
  }, [projectId, experimentId]);
  return place;
}

export function placeCrumbs(place: Place): Crumb[] {
  const out: Crumb[] = [["Workspaces", "/workspaces"]];
  if (place.workspace) out.push([place.workspace.name, `/workspaces/${place.workspace.id}`]);
  if (place.project) out.push([place.project.name, `/projects/${place.project.id}/experiments`]);
  return out;
}

// Tabs that are URLs (/experiments/3/checkpoints): a tab can be linked, and Back returns to it.
export function TabLinks(props: { label: string; base: string; tabs: [string, string][]; current: string }) {
  return (
    <nav aria-label={props.label} class="tabs">
      {props.tabs.map(([tab, title]) => (
        <Link href={`${props.base}/${tab}`} aria-current={props.current === tab ? "page" : undefined}>{title}</Link>))}
    </nav>
  );
}

export function NotFound(props: { path: string }) {
  return (
    <section aria-labelledby="not-found-title">
      <h1 id="not-found-title">Page not found</h1>
      <p>There is no page at <code>/det{props.path}</code>.</p>
      <p><Link href="/dashboard">Go to the dashboard</Link></p>
    </section>
  );
}

// The project the experiment list shows (the switcher's choice), kept across visits.
const PROJECT = "resolute.project";
export const currentProject = () => Number(localStorage.getItem(PROJECT)) || 1;
export const rememberProject = (id: number) => localStorage.setItem(PROJECT, String(id));

type ProjectRow = { id: number; name: string; workspaceName: string };

// Every project the caller can see, grouped by workspace; choosing one opens its experiments.
export function ProjectSwitcher(props: { current: number }) {
  const [projects, setProjects] = useState<ProjectRow[]>([]);
  useEffect(() => {
    (async () => {
      const ws = await api<{ workspaces: { id: number; name: string }[] }>("/api/v1/workspaces?limit=100");
      const lists = await Promise.all(ws.workspaces.map((w) =>
        api<{ projects: ProjectRow[] }>(`/api/v1/workspaces/${w.id}/projects?limit=200`)
          .then((r) => r.projects, () => [] as ProjectRow[])));
      setProjects(lists.flat());
    })().catch(() => undefined);
  }, []);
  const groups = Array.from(new Set(projects.map((p) => p.workspaceName)));
  return (
    <label class="switcher">Project{" "}
      <select id="project-switcher" value={String(props.current)} onChange={(e) => {
        const id = Number((e.target as HTMLSelectElement).value);
        rememberProject(id);
        navigate(`/projects/${id}/experiments`);
      }}>
        {!projects.some((p) => p.id === props.current) && <option value={String(props.current)}>project {props.current}</option>}
        {groups.map((g) => (
          <optgroup label={g}>{projects.filter((p) => p.workspaceName === g).map((p) => (
            <option value={String(p.id)}>{p.name}</option>))}</optgroup>))}
      </select>
    </label>
  );
}

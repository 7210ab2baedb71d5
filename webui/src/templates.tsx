import { useState } from "preact/hooks";
import { api, post } from "./api";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs } from "./layout";
import { usePoll } from "./poll";

// Config templates (GET/POST/PATCH/DELETE /api/v1/templates…), as `det template` manages them.
// The config is edited as JSON: the browser has no YAML parser, and the bundle carries none.
type Template = { name: string; config: Record<string, unknown>; workspaceId: number };

function parse(text: string): Record<string, unknown> {
  const value = JSON.parse(text);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error("a template's config is a JSON object");
  }
  return value;
}

export function Templates() {
  const [list, err, reload] = usePoll(() => api<{ templates: Template[] }>("/api/v1/templates?limit=500"), [], 10000);
  const [msg, setMsg] = useState("");
  const [editing, setEditing] = useState<Template | null>(null);
  const save = async (e: Event) => {
    const field = submitted(e);
    const name = editing?.name ?? field("name").trim();
    try {
      const config = parse(field("config"));
      if (editing) {
        await api(`/api/v1/templates/${encodeURIComponent(name)}`, { method: "PATCH", body: JSON.stringify({ name, config }) });
      } else {
        await post(`/api/v1/templates/${encodeURIComponent(name)}`, { name, config, workspaceId: Number(field("workspace")) || 0 });
      }
      setMsg(`template ${name} saved`);
      setEditing(null);
      reload();
    } catch (x: any) { setMsg(`template ${name}: ${x.message}`); }
  };
  return (
    <section aria-labelledby="templates-title">
      <Breadcrumbs crumbs={[["Templates"]]} />
      <h1 id="templates-title">Templates</h1>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="template-table"><caption class="sr-only">Templates</caption>
        <thead><tr><th scope="col">Template</th><th scope="col">Workspace</th><th scope="col">Config</th>
          <th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.templates ?? []).map((t) => (
          <tr data-template={t.name}><td>{t.name}</td><td>{t.workspaceId}</td>
            <td><code class="clip">{JSON.stringify(t.config)}</code></td>
            <td><button type="button" onClick={() => setEditing(t)}>Edit<span class="sr-only"> {t.name}</span></button>{" "}
              <ConfirmButton label="Delete" id={`delete-template-${t.name}`} confirm="Delete template"
                question={`Delete template ${t.name}?`} onConfirm={async () => {
                try { await api(`/api/v1/templates/${encodeURIComponent(t.name)}`, { method: "DELETE" }); reload(); }
                catch (x: any) { setMsg(x.message); }
              }} /></td></tr>))}</tbody>
      </table>
      <form class="stack" aria-labelledby="template-form-title" onSubmit={save} key={editing?.name ?? "new"}>
        <h2 id="template-form-title">{editing ? `Edit template ${editing.name}` : "New template"}</h2>
        {!editing && <label>Name <input name="name" required maxLength={255} /></label>}
        {!editing && <label>Workspace id <input name="workspace" type="number" min="0" defaultValue="1" /></label>}
        <label>Config (JSON) <textarea name="config" rows={8} cols={70} required
          defaultValue={editing ? JSON.stringify(editing.config, null, 2) : '{\n  "resources": {"slots": 1}\n}'} /></label>
        <div class="toolbar"><button type="submit">Save template</button>
          {editing && <button type="button" onClick={() => setEditing(null)}>Cancel</button>}</div>
        <p role="status" id="template-status">{msg}</p>
      </form>
    </section>
  );
}

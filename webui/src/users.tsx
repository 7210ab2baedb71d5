import { useState } from "preact/hooks";
import { api, post } from "./api";
import { AuditLog } from "./admin";
import { submitted } from "./forms";
import { ConfirmButton } from "./confirm";
import { Breadcrumbs, TabLinks } from "./layout";
import { usePoll } from "./poll";

// The admin pages (/det/admin/{user-management,group-management,roles,audit}): Determined's user
// and group management, the roles and what each may do, and our audit log. The master decides
// who may change what; a refusal shows in the page's status line.
const TABS: [string, string][] = [["user-management", "Users"], ["group-management", "Groups"],
  ["roles", "Roles"], ["audit", "Audit log"]];

type UserRow = { id: number; username: string; displayName?: string; admin: boolean; active: boolean;
  remote?: boolean; lastAuthAt?: string | null };

export function Admin(props: { tab?: string; query: URLSearchParams }) {
  const tab = TABS.some(([t]) => t === props.tab) ? props.tab! : "user-management";
  return (
    <section aria-labelledby="admin-title">
      <Breadcrumbs crumbs={[["Admin", "/admin/user-management"], [TABS.find(([t]) => t === tab)![1]]]} />
      <h1 id="admin-title" class={tab === "audit" ? "sr-only" : undefined}>Admin</h1>
      <TabLinks label="Admin views" base="/admin" tabs={TABS} current={tab} />
      {tab === "user-management" && <Users />}
      {tab === "group-management" && <Groups />}
      {tab === "roles" && <Roles />}
      {tab === "audit" && <AuditLog query={props.query} />}
    </section>
  );
}

function Users() {
  const [list, err, reload] = usePoll(() => api<{ users: UserRow[] }>("/api/v1/users?limit=1000"), [], 10000);
  const [msg, setMsg] = useState("");
  const patch = async (u: UserRow, change: Partial<UserRow>, what: string) => {
    try {
      await api(`/api/v1/users/${u.id}`, { method: "PATCH", body: JSON.stringify(change) });
      setMsg(`${u.username}: ${what}`);
      reload();
    } catch (x: any) { setMsg(`${u.username}: ${x.message}`); }
  };
  return (
    <div>
      <h2>Users</h2>
      <form class="toolbar" aria-label="New user" onSubmit={async (e) => {
        const field = submitted(e);
        const username = field("username").trim();
        try {
          await post("/api/v1/users", { user: { username, admin: field("admin") === "on", active: true,
            displayName: field("display") || undefined }, password: field("password") });
          setMsg(`user ${username} created`);
          reload();
        } catch (x: any) { setMsg(`${username}: ${x.message}`); }
      }}>
        <label>Username <input name="username" required maxLength={255} autocomplete="off" /></label>
        <label>Display name <input name="display" maxLength={255} /></label>
        <label>Password <input name="password" type="password" autocomplete="new-password" /></label>
        <label><input type="checkbox" name="admin" /> Admin</label>
        <button type="submit">Add user</button>
      </form>
      <p role="status" id="users-status">{msg}</p>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="user-table"><caption class="sr-only">Users</caption>
        <thead><tr><th scope="col">Username</th><th scope="col">Display name</th><th scope="col">Role</th>
          <th scope="col">Status</th><th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.users ?? []).map((u) => (
          <tr data-user={u.username}><td>{u.username}</td><td>{u.displayName ?? ""}</td>
            <td>{u.admin ? "admin" : "member"}</td><td>{u.active ? "active" : "deactivated"}</td>
            <td><button type="button" onClick={() => patch(u, { admin: !u.admin }, u.admin ? "admin removed" : "made admin")}>
              {u.admin ? "Remove admin" : "Make admin"}<span class="sr-only"> {u.username}</span></button>{" "}
              {u.active ? <ConfirmButton label="Deactivate" id={`deactivate-${u.id}`} confirm="Deactivate"
                question={`Deactivate ${u.username}?`}
                onConfirm={() => patch(u, { active: false }, "deactivated")} /> :
                <button type="button" onClick={() => patch(u, { active: true }, "activated")}>
                  Activate<span class="sr-only"> {u.username}</span></button>}</td></tr>))}</tbody>
      </table>
    </div>
  );
}

type GroupRow = { group: { groupId: number; name: string }; numMembers: number };

function Groups() {
  const [list, err, reload] = usePoll(() => post<{ groups: GroupRow[] }>("/api/v1/groups/search", { limit: 500, offset: 0 }), [], 10000);
  const [users] = usePoll(() => api<{ users: UserRow[] }>("/api/v1/users?limit=1000"), [], 0);
  const [open, setOpen] = useState<number | null>(null);
  const [msg, setMsg] = useState("");
  const [members, , reloadMembers] = usePoll(() => (open === null ? Promise.resolve(null) :
    api<{ group: { users: UserRow[] } }>(`/api/v1/groups/${open}`)), [open], 0);
  const change = async (id: number, body: Record<string, unknown>, what: string) => {
    try {
      await api(`/api/v1/groups/${id}`, { method: "PUT", body: JSON.stringify({ groupId: id, ...body }) });
      setMsg(what);
      reload();
      reloadMembers();
    } catch (x: any) { setMsg(x.message); }
  };
  if (err && /403|forbidden|admin/i.test(err)) return <p role="alert">Only an admin may manage groups.</p>;
  return (
    <div>
      <h2>Groups</h2>
      <form class="toolbar" aria-label="New group" onSubmit={async (e) => {
        const name = submitted(e)("name").trim();
        try { await post("/api/v1/groups", { name }); setMsg(`group ${name} created`); reload(); }
        catch (x: any) { setMsg(`${name}: ${x.message}`); }
      }}>
        <label>New group <input name="name" required maxLength={255} /></label>
        <button type="submit">Add group</button>
      </form>
      <p role="status" id="groups-status">{msg}</p>
      {err && <p role="alert" class="error">{err}</p>}
      <table id="group-table"><caption class="sr-only">Groups</caption>
        <thead><tr><th scope="col">Group</th><th scope="col">Members</th><th scope="col">Actions</th></tr></thead>
        <tbody>{(list?.groups ?? []).map((g) => (
          <tr data-group={g.group.name}><td>{g.group.name}</td><td>{g.numMembers}</td>
            <td><button type="button" aria-expanded={open === g.group.groupId}
              onClick={() => setOpen(open === g.group.groupId ? null : g.group.groupId)}>
              Members<span class="sr-only"> of {g.group.name}</span></button>{" "}
              <ConfirmButton label="Delete" id={`delete-group-${g.group.groupId}`} confirm="Delete group"
                question={`Delete group ${g.group.name}?`} onConfirm={async () => {
                try { await api(`/api/v1/groups/${g.group.groupId}`, { method: "DELETE" }); setOpen(null); reload(); }
                catch (x: any) { setMsg(x.message); }
              }} /></td></tr>))}</tbody>
      </table>
      {open !== null && members && (
        <div aria-label="Group members" role="region">
          <ul>{members.group.users.map((u) => (
            <li>{u.username} <button type="button" onClick={() => change(open, { removeUsers: [u.id] }, `${u.username} removed`)}>
              Remove<span class="sr-only"> {u.username}</span></button></li>))}</ul>
          <form class="toolbar" aria-label="Add a member" onSubmit={(e) => {
            const id = Number(submitted(e)("user"));
            if (id) change(open, { addUsers: [id] }, "member added");
          }}>
            <label>User <select name="user">{(users?.users ?? []).map((u) => <option value={String(u.id)}>{u.username}</option>)}</select></label>
            <button type="submit">Add member</button>
          </form>
        </div>
      )}
    </div>
  );
}

type Role = { roleId: number; name?: string; permissions?: { id: string; name: string }[];
  scopeTypeMask?: { cluster: boolean; workspace: boolean } };

function Roles() {
  const [list, err] = usePoll(() => post<{ roles: Role[] }>("/api/v1/roles/search", { limit: 0, offset: 0 }), [], 0);
  const off = err && /RBAC|not enabled|404|not found/i.test(err);
  return (
    <div>
      <h2>Roles</h2>
      {off ? <p role="alert">Roles apply when the master runs with RBAC enabled (<code>security.authz.type: rbac</code>).</p>
        : err && <p role="alert" class="error">{err}</p>}
      <table id="role-table"><caption class="sr-only">Roles</caption>
        <thead><tr><th scope="col">Role</th><th scope="col">Scopes</th><th scope="col">Permissions</th></tr></thead>
        <tbody>{(list?.roles ?? []).map((r) => (
          <tr data-role={r.name}><td>{r.name ?? r.roleId}</td>
            <td>{[r.scopeTypeMask?.cluster && "cluster", r.scopeTypeMask?.workspace && "workspace"].filter(Boolean).join(", ")}</td>
            <td><details><summary>{r.permissions?.length ?? 0} permissions</summary>
              <ul class="clip-list">{(r.permissions ?? []).map((p) => <li>{p.name}</li>)}</ul></details></td></tr>))}</tbody>
      </table>
    </div>
  );
}


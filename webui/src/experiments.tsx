import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, post, Experiment, Trial } from "./api";
import { columnHeader } from "./formatting";
import { Link, navigate } from "./router";

type Row = { experiment: Experiment; bestTrial?: Trial | null };
type Cond = { columnName: string; operator: string; value: string };
// A top-level item: a condition, or a group of conditions with its own AND/OR, so a filter like
// "state = COMPLETED AND (hp.lr > 0.01 OR hp.layers = 3)" can be written (Determined's nesting).
type Sub = { conjunction: string; conds: Cond[] };
type Item = Cond | Sub;
const isSub = (x: Item): x is Sub => "conds" in x;
const NEW_COND: Cond = { columnName: "", operator: "=", value: "" };
type Column = { column: string; location: string; type: string; displayName?: string };

const PAGE = 100;
const ROW = 34;
const VIEW = 560;
const OPS = ["=", "!=", "<", "<=", ">", ">=", "contains", "not contains", "is empty", "not empty"];
const DEFAULT_COLS = ["id", "name", "state", "user", "searcherType", "numTrials", "startTime",
  "searcherMetricsVal"];
const VERBS = ["pause", "activate", "kill", "archive", "unarchive", "move"];

// An hp column shows the config's hyperparameter (Determined's list does the same): a constant's
// value, a range's bounds, a categorical's choices. `hp.optimizer.lr` walks nested maps. What the
// trials drew is in the experiment's trials table; a filter on the column matches those values.
export function hpCell(hyperparameters: any, dotted: string): string {
  let hp = hyperparameters;
  for (const part of dotted.split(".")) hp = hp?.[part];
  if (hp === undefined || hp === null) return "";
  if (typeof hp !== "object" || Array.isArray(hp)) return JSON.stringify(hp);
  switch (hp.type) {
    case "const": return typeof hp.val === "string" ? hp.val : JSON.stringify(hp.val);
    case "int": case "double": return `${hp.minval} – ${hp.maxval}`;
    case "log": return `${hp.base ?? 10}^${hp.minval} – ${hp.base ?? 10}^${hp.maxval}`;
    case "categorical": return (hp.vals ?? []).map((v: unknown) => JSON.stringify(v)).join(" | ");
  }
  return "";
}

function cell(row: Row, col: string): string {
  const e = row.experiment;
  if (col.startsWith("hp.")) return hpCell(e.config?.hyperparameters, col.slice(3));
  if (col.startsWith("validation.")) {
    const name = col.slice("validation.".length);
    const v = row.bestTrial?.bestValidation?.metrics?.avgMetrics?.[name] ??
      (name === e.searcherMetric ? row.bestTrial?.searcherMetricValue : undefined);
    return v === undefined || v === null ? "" : String(v);
  }
  switch (col) {
    case "user": return e.username;
    case "tags": return e.labels.join(", ");
    case "state": return e.state.replace("STATE_", "");
    case "searcherMetricsVal": {
      const v = row.bestTrial?.searcherMetricValue;
      return v === undefined || v === null ? "" : String(v);
    }
    case "startTime": case "endTime": {
      const t = (e as any)[col];
      return t ? new Date(t).toISOString().replace("T", " ").slice(0, 19) : "";
    }
    default: return String((e as any)[col] ?? "");
  }
}

function fieldJson(c: Cond) {
  return { kind: "field", columnName: c.columnName, operator: c.operator, value: c.value };
}

export function filterJson(items: Item[], conjunction: string, showArchived: boolean): string {
  return JSON.stringify({
    filterGroup: {
      kind: "group",
      conjunction,
      children: items.flatMap<object>((it) => {
        if (!isSub(it)) return it.columnName ? [fieldJson(it)] : [];
        const kids = it.conds.filter((c) => c.columnName).map(fieldJson);
        return kids.length ? [{ kind: "group", conjunction: it.conjunction, children: kids }] : [];
      }),
    },
    showArchived,
  });
}

// One condition's three inputs; `key` names them (`col-0`, `col-1-2` in a group).
function CondRow(props: { c: Cond; key_: string; label: string; onChange: (c: Cond) => void;
  onRemove: () => void }) {
  const { c, key_ } = props;
  return (
    <div class="cond">
      <label>Column{" "}
        <input list="column-names" value={c.columnName} name={`col-${key_}`}
          onInput={(e) => props.onChange({ ...c, columnName: (e.target as HTMLInputElement).value })} />
      </label>
      <label>Operator{" "}
        <select value={c.operator} name={`op-${key_}`}
          onChange={(e) => props.onChange({ ...c, operator: (e.target as HTMLSelectElement).value })}>
          {OPS.map((o) => <option value={o}>{o}</option>)}
        </select>
      </label>
      <label>Value{" "}
        <input value={c.value} name={`val-${key_}`}
          onInput={(e) => props.onChange({ ...c, value: (e.target as HTMLInputElement).value })} />
      </label>
      <button type="button" onClick={props.onRemove}>Remove {props.label}</button>
    </div>
  );
}

export function ExperimentList(props: { projectId: number }) {
  const [conds, setConds] = useState<Item[]>([]);
  const [conj, setConj] = useState("and");
  const [archived, setArchived] = useState(false);
  const [sort, setSort] = useState("id=desc");
  const [rows, setRows] = useState<Row[]>([]);
  const [total, setTotal] = useState(0);
  const [error, setError] = useState("");
  const [columns, setColumns] = useState<Column[]>([]);
  const [shown, setShown] = useState<string[]>(DEFAULT_COLS);
  const [picker, setPicker] = useState(false);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [pending, setPending] = useState<string | null>(null);
  const [results, setResults] = useState<{ id: number; error: string }[] | null>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [applied, setApplied] = useState(() => filterJson([], "and", false));
  const loading = useRef(0);
  const generation = useRef(0);
  const dialog = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    api<{ columns: Column[] }>(`/api/v1/projects/${props.projectId}/columns`)
      .then((r) => setColumns(r.columns)).catch((e) => setError(String(e.message)));
  }, [props.projectId]);

  // One page in flight per list generation; a page that no longer continues the rows (a new
  // filter, or a page already appended) is dropped, so rows are never duplicated or skipped.
  async function load(offset: number, gen: number) {
    if (loading.current === gen) return;
    loading.current = gen;
    try {
      const r = await post<{ experiments: Row[]; pagination: { total: number } }>(
        "/api/v1/experiments-search",
        { projectId: props.projectId, offset, limit: PAGE, sort, filter: applied });
      if (gen !== generation.current) return;
      setTotal(r.pagination.total);
      setRows((old) => (offset === 0 ? r.experiments :
        offset === old.length ? [...old, ...r.experiments] : old));
      setError("");
    } catch (e: any) {
      if (gen === generation.current) setError(e.message);
    } finally {
      if (loading.current === gen) loading.current = 0;
    }
  }

  useEffect(() => {
    generation.current += 1;
    setRows([]);
    setSelected(new Set());
    setAllMatching(false);
    load(0, generation.current);
  }, [applied, sort, props.projectId]);

  // Rows are fetched a page ahead of the viewport; only loaded rows are rendered, so a row is
  // never blank while scrolling (the scroll height grows as pages arrive).
  useEffect(() => {
    const bottom = scrollTop + VIEW;
    if (loading.current !== generation.current && rows.length < total && bottom > (rows.length - PAGE / 2) * ROW) {
      load(rows.length, generation.current);
    }
  }, [scrollTop, rows.length, total]);

  const first = Math.max(0, Math.floor(scrollTop / ROW) - 10);
  const last = Math.min(rows.length, Math.ceil((scrollTop + VIEW) / ROW) + 10);
  const visible = rows.slice(first, last);
  const count = allMatching ? total - 0 : selected.size;

  function toggleSort(col: string) {
    setSort((s) => (s === `${col}=asc` ? `${col}=desc` : `${col}=asc`));
  }

  async function runBulk(verb: string) {
    const body: any = { projectId: props.projectId };
    if (allMatching) body.searchFilter = applied;
    else body.experimentIds = Array.from(selected);
    if (verb === "move") {
      const dest = Number((document.getElementById("move-dest") as HTMLInputElement)?.value);
      body.destinationProjectId = dest;
    }
    try {
      const r = await post<{ results: { id: number; error: string }[] }>(
        `/api/v1/experiments/${verb}`, body);
      setResults(r.results);
    } catch (e: any) {
      setResults([{ id: 0, error: e.message }]);
    }
    generation.current += 1;
    setRows([]);
    load(0, generation.current);
  }

  const columnNames = useMemo(() => columns.map((c) => c.column), [columns]);
  const failed = results?.filter((r) => r.error) ?? [];

  return (
    <section aria-labelledby="exp-title">
      <h1 id="exp-title">Experiments</h1>
      <form class="filters" onSubmit={(e) => { e.preventDefault();
        setApplied(filterJson(conds, conj, archived)); }} aria-label="Filter experiments">
        <fieldset>
          <legend>Filter</legend>
          <label>Match{" "}
            <select value={conj} onChange={(e) => setConj((e.target as HTMLSelectElement).value)}>
              <option value="and">all conditions (AND)</option>
              <option value="or">any condition (OR)</option>
            </select>
          </label>
          {conds.map((it, i) => isSub(it) ? (
            <fieldset class="subgroup" key={i}>
              <legend>Group {i + 1}</legend>
              <label>Match in group {i + 1}{" "}
                <select value={it.conjunction} name={`conj-${i}`}
                  onChange={(e) => setConds(conds.map((d, j) => j === i ?
                    { ...it, conjunction: (e.target as HTMLSelectElement).value } : d))}>
                  <option value="and">all (AND)</option>
                  <option value="or">any (OR)</option>
                </select>
              </label>
              {it.conds.map((c, k) => (
                <CondRow c={c} key_={`${i}-${k}`} label={`condition ${k + 1} of group ${i + 1}`}
                  onChange={(n) => setConds(conds.map((d, j) => j === i ?
                    { ...it, conds: it.conds.map((x, y) => (y === k ? n : x)) } : d))}
                  onRemove={() => setConds(conds.map((d, j) => j === i ?
                    { ...it, conds: it.conds.filter((_, y) => y !== k) } : d))} />
              ))}
              <button type="button" onClick={() => setConds(conds.map((d, j) => j === i ?
                { ...it, conds: [...it.conds, { ...NEW_COND }] } : d))}>
                Add condition to group {i + 1}</button>
              <button type="button" onClick={() => setConds(conds.filter((_, j) => j !== i))}>
                Remove group {i + 1}</button>
            </fieldset>
          ) : (
            <CondRow c={it} key_={String(i)} label={`condition ${i + 1}`}
              onChange={(n) => setConds(conds.map((d, j) => (j === i ? n : d)))}
              onRemove={() => setConds(conds.filter((_, j) => j !== i))} />
          ))}
          <datalist id="column-names">{columnNames.map((n) => <option value={n} />)}</datalist>
          <button type="button" onClick={() => setConds([...conds, { ...NEW_COND }])}>
            Add condition</button>
          <button type="button" onClick={() => setConds([...conds,
            { conjunction: "or", conds: [{ ...NEW_COND }] }])}>Add group</button>
          <label><input type="checkbox" checked={archived}
            onChange={(e) => setArchived((e.target as HTMLInputElement).checked)} /> Show archived
          </label>
          <button type="submit">Apply filter</button>
        </fieldset>
      </form>
      <div class="toolbar">
        <span role="status" aria-live="polite" id="match-count">{total} experiments match</span>
        <label>Sort{" "}
          <input id="sort" value={sort} onChange={(e) => setSort((e.target as HTMLInputElement).value)} />
        </label>
        <button type="button" aria-expanded={picker} onClick={() => setPicker(!picker)}>Columns</button>
        <button type="button" onClick={() => { setAllMatching(false);
          setSelected(new Set(rows.slice(first, last).map((r) => r.experiment.id))); }}>
          Select page</button>
        <button type="button" id="select-all-matching" onClick={() => setAllMatching(true)}>
          Select all matching ({total})</button>
        <button type="button" onClick={() => { setAllMatching(false); setSelected(new Set()); }}>
          Clear selection</button>
        {VERBS.map((v) => (
          <button type="button" disabled={count === 0} data-verb={v}
            onClick={() => { setPending(v); setResults(null); dialog.current?.showModal(); }}>
            {v[0].toUpperCase() + v.slice(1)}</button>
        ))}
        <button type="button" id="compare-selected"
          disabled={allMatching || selected.size < 1 || selected.size > 50}
          onClick={() => navigate(`/compare?experiments=${Array.from(selected).join(",")}`)}>
          Compare {allMatching ? 0 : selected.size}</button>
      </div>
      {picker && (
        <fieldset class="picker"><legend>Shown columns</legend>
          {columnNames.map((n) => (
            <label><input type="checkbox" checked={shown.includes(n)} onChange={() =>
              setShown(shown.includes(n) ? shown.filter((s) => s !== n) : [...shown, n])} />
              {columnHeader(n, columns.find((k) => k.column === n)?.displayName)}</label>
          ))}
        </fieldset>
      )}
      {error && <p role="alert" class="error">{error}</p>}
      <dialog ref={dialog} aria-labelledby="confirm-title">
        <h2 id="confirm-title">Confirm</h2>
        {results === null ? (
          <form method="dialog" onSubmit={(e) => { e.preventDefault(); runBulk(pending!); }}>
            <p id="confirm-text">{pending && `${pending[0].toUpperCase()}${pending.slice(1)} ${count} experiment${count === 1 ? "" : "s"}?`}</p>
            {pending === "move" && <label>Destination project id <input id="move-dest" type="number" min="1" /></label>}
            <button type="submit">{pending} {count}</button>
            <button type="button" onClick={() => dialog.current?.close()}>Cancel</button>
          </form>
        ) : (
          <div>
            <p id="bulk-summary">{results.length - failed.length} changed, {failed.length} refused.</p>
            {failed.length > 0 && (
              <ul id="bulk-errors">{failed.map((r) => <li>Experiment {r.id}: {r.error}</li>)}</ul>
            )}
            <button type="button" onClick={() => dialog.current?.close()}>Close</button>
          </div>
        )}
      </dialog>
      <div class="grid" role="table" aria-label="Experiments" aria-rowcount={total + 1}>
        <div role="rowgroup" class="grid-head">
          <div role="row" class="grid-row" style={{ gridTemplateColumns: `2.5em repeat(${shown.length}, minmax(7em, 1fr))` }}>
            <span role="columnheader"><span class="sr-only">Selected</span></span>
            {shown.map((c) => (
              <span role="columnheader" aria-sort={sort === `${c}=asc` ? "ascending" : sort === `${c}=desc` ? "descending" : "none"}>
                <button type="button" onClick={() => toggleSort(c)} data-column={c}>
                  {columnHeader(c, columns.find((k) => k.column === c)?.displayName)}</button>
              </span>
            ))}
          </div>
        </div>
        <div role="rowgroup" class="grid-body" style={{ height: `${VIEW}px` }} tabIndex={0}
          aria-label="Experiment rows, scrollable"
          onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)}>
          <div style={{ height: `${rows.length * ROW}px`, position: "relative" }}>
            {visible.map((r, k) => {
              const i = first + k;
              const id = r.experiment.id;
              return (
                <div role="row" class="grid-row" aria-rowindex={i + 2} data-exp-id={id}
                  style={{ position: "absolute", top: `${i * ROW}px`, height: `${ROW}px`, left: 0, right: 0,
                    gridTemplateColumns: `2.5em repeat(${shown.length}, minmax(7em, 1fr))` }}>
                  <span role="cell"><input type="checkbox" aria-label={`Select experiment ${id}`}
                    checked={allMatching || selected.has(id)} onChange={() => {
                      setAllMatching(false);
                      const next = new Set(selected);
                      next.has(id) ? next.delete(id) : next.add(id);
                      setSelected(next);
                    }} /></span>
                  {shown.map((c) => (
                    <span role="cell" data-col={c}>{c === "name" || c === "id" ?
                      <Link href={`/experiments/${id}`}>{cell(r, c)}</Link> : cell(r, c)}</span>
                  ))}
                </div>
              );
            })}
          </div>
        </div>
      </div>
      <p class="muted" id="loaded-count">{rows.length} of {total} loaded</p>
    </section>
  );
}

import { Trial } from "./api";
import { flattenHparams, formatValue } from "./formatting";

// A trial's hyperparameters as a name/value table (nested ones by dotted name), numbers
// formatted to four significant digits; the exact value is the cell's tooltip.
export function HpTable(props: { hparams: Record<string, unknown>; caption?: string }) {
  const rows = flattenHparams(props.hparams ?? {});
  if (!rows.length) return <p class="muted">This trial has no hyperparameters.</p>;
  return (
    <table class="hp-table" id="hp-table">
      <caption class={props.caption ? "" : "sr-only"}>{props.caption ?? "Hyperparameters"}</caption>
      <thead><tr><th scope="col">Hyperparameter</th><th scope="col">Value</th></tr></thead>
      <tbody>{rows.map(([k, v]) => (
        <tr data-hp={k}><th scope="row">{k}</th>
          <td class={typeof v === "number" ? "num" : ""} title={JSON.stringify(v)}>{formatValue(v)}</td></tr>))}
      </tbody>
    </table>
  );
}

// The hyperparameter names of a set of trials (dotted for nested ones), for one column each in a
// trials table instead of a JSON blob per row.
export function hpNames(trials: Trial[]): string[] {
  const names = new Set<string>();
  for (const t of trials) for (const [k] of flattenHparams(t.hparams ?? {})) names.add(k);
  return Array.from(names).sort();
}

export function hpCells(trial: Trial, names: string[]) {
  const flat = new Map(flattenHparams(trial.hparams ?? {}));
  return names.map((n) => {
    const v = flat.get(n);
    return <td class={typeof v === "number" ? "num" : ""} data-hp={n}>{v === undefined ? "" : formatValue(v)}</td>;
  });
}

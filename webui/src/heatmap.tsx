import { useState } from "preact/hooks";
import { Trial } from "./api";

// Axis values: each distinct value when there are few (grid searches, categorical hparams),
// otherwise equal-width bins, so a random search of 200 trials still reads as a grid.
const MAX_DISTINCT = 10;
const BINS = 8;

type Axis = { labels: string[]; index: (v: unknown) => number };

function axisOf(values: unknown[]): Axis {
  const distinct = Array.from(new Set(values.map((v) => JSON.stringify(v))));
  const numeric = values.every((v) => typeof v === "number");
  if (!numeric || distinct.length <= MAX_DISTINCT) {
    const sorted = numeric ? distinct.sort((a, b) => Number(a) - Number(b)) : distinct.sort();
    const at = new Map(sorted.map((s, i) => [s, i]));
    return { labels: sorted, index: (v) => at.get(JSON.stringify(v)) ?? -1 };
  }
  const ns = values as number[];
  const lo = Math.min(...ns), hi = Math.max(...ns);
  const step = (hi - lo) / BINS;
  const fmt = (n: number) => Number(n.toPrecision(3)).toString();
  return {
    labels: Array.from({ length: BINS }, (_, i) => `${fmt(lo + i * step)}–${fmt(lo + (i + 1) * step)}`),
    index: (v) => Math.min(BINS - 1, Math.floor(((v as number) - lo) / step)),
  };
}

export type Cell = { x: number; y: number; mean: number; count: number };

// Mean searcher metric of the trials in each (x, y) cell; trials without a metric are left out.
export function heatCells(trials: Trial[], xName: string, yName: string) {
  const scored = trials.filter((t) => typeof t.searcherMetricValue === "number" &&
    t.hparams[xName] !== undefined && t.hparams[yName] !== undefined);
  const xa = axisOf(scored.map((t) => t.hparams[xName]));
  const ya = axisOf(scored.map((t) => t.hparams[yName]));
  const sums = new Map<string, Cell>();
  for (const t of scored) {
    const x = xa.index(t.hparams[xName]), y = ya.index(t.hparams[yName]);
    const c = sums.get(`${x},${y}`) ?? { x, y, mean: 0, count: 0 };
    c.mean += t.searcherMetricValue as number;
    c.count += 1;
    sums.set(`${x},${y}`, c);
  }
  const cells = Array.from(sums.values()).map((c) => ({ ...c, mean: c.mean / c.count }));
  return { x: xa.labels, y: ya.labels, cells };
}

// Viridis endpoints and midpoint: readable in both themes and for red-green colour blindness.
const STOPS = [[68, 1, 84], [33, 145, 140], [253, 231, 37]];
function colour(f: number): string {
  const s = f <= 0.5 ? 0 : 1, g = f <= 0.5 ? f * 2 : f * 2 - 1;
  const c = STOPS[s].map((a, i) => Math.round(a + (STOPS[s + 1][i] - a) * g));
  return `rgb(${c.join(",")})`;
}

export function HeatMap(props: { trials: Trial[]; names: string[]; metric: string }) {
  const [xPick, setX] = useState(props.names[0]);
  const [yPick, setY] = useState(props.names[1]);
  if (props.names.length < 2) {
    return <p class="muted">The heat map needs two hyperparameters that vary.</p>;
  }
  // The trials arrive by polling: a name picked before may no longer vary.
  const xName = props.names.includes(xPick) ? xPick : props.names[0];
  const yName = props.names.includes(yPick) ? yPick : props.names[1];
  const { x, y, cells } = heatCells(props.trials, xName, yName);
  const means = cells.map((c) => c.mean);
  const lo = Math.min(...means), hi = Math.max(...means);
  const CW = 60, CH = 30, LEFT = 110, TOP = 10;
  const pick = (label: string, value: string, set: (v: string) => void, id: string) => (
    <label>{label} <select id={id} value={value}
      onChange={(e) => set((e.target as HTMLSelectElement).value)}>
      {props.names.map((n) => <option value={n}>{n}</option>)}</select></label>);
  (window as any).__heatmap = { x: xName, y: yName, xLabels: x, yLabels: y, cells };
  return (
    <div>
      <h2>Heat map: {props.metric} over {xName} and {yName}</h2>
      <div class="toolbar">
        {pick("Horizontal axis", xName, setX, "heat-x")}
        {pick("Vertical axis", yName, setY, "heat-y")}
        <span class="muted">colour: mean {props.metric}, {lo.toPrecision(4)} (dark) to {hi.toPrecision(4)} (light)</span>
      </div>
      <svg width={LEFT + CW * x.length + 10} height={TOP + CH * y.length + 40} role="img"
        aria-label={`Heat map of mean ${props.metric} over ${xName} and ${yName}; the table below lists each cell`}>
        {cells.map((c) => (
          <rect x={LEFT + c.x * CW} y={TOP + (y.length - 1 - c.y) * CH} width={CW - 1} height={CH - 1}
            fill={colour(hi === lo ? 0.5 : (c.mean - lo) / (hi - lo))}>
            <title>{`${xName}=${x[c.x]}, ${yName}=${y[c.y]}: ${c.mean} (${c.count} trials)`}</title></rect>))}
        {x.map((l, i) => <text x={LEFT + i * CW + CW / 2} y={TOP + CH * y.length + 16} text-anchor="middle"
          font-size="11" fill="currentColor">{l}</text>)}
        {y.map((l, i) => <text x={LEFT - 6} y={TOP + (y.length - 1 - i) * CH + CH / 2 + 4} text-anchor="end"
          font-size="11" fill="currentColor">{l}</text>)}
      </svg>
      <table id="heat-table">
        <caption>Heat map cells: mean {props.metric} per {xName} and {yName}</caption>
        <thead><tr><th scope="col">{xName}</th><th scope="col">{yName}</th>
          <th scope="col">Mean {props.metric}</th><th scope="col">Trials</th></tr></thead>
        <tbody>{cells.slice().sort((a, b) => a.x - b.x || a.y - b.y).map((c) => (
          <tr><td>{x[c.x]}</td><td>{y[c.y]}</td><td>{c.mean}</td><td>{c.count}</td></tr>))}</tbody>
      </table>
    </div>
  );
}

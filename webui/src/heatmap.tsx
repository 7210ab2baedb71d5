import { useState } from "preact/hooks";
import { Trial } from "./api";
import { fitLabel } from "./chartdata";
import { formatNumber } from "./formatting";

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
  // Cells are as wide as the longest column label needs (within bounds); a longer label is cut
  // with an ellipsis (its full text is in its tooltip and the table), so labels never overlap.
  const CHAR = 7, CH = 30, TOP = 10;
  const longest = (ls: string[]) => ls.reduce((n, l) => Math.max(n, l.length), 0);
  const CW = Math.min(96, Math.max(44, longest(x) * CHAR + 10));
  const xChars = Math.floor((CW - 8) / CHAR);
  const yChars = 16;
  const LEFT = Math.min(yChars, longest(y)) * CHAR + 34;
  const plotW = CW * x.length, plotH = CH * y.length;
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
        <span class="muted">colour: mean {props.metric}, {formatNumber(lo)} (dark) to {formatNumber(hi)} (light)</span>
      </div>
      <div class="scroll-x">
      <svg width={LEFT + plotW + 10} height={TOP + plotH + 44} role="img" id="heat-svg"
        aria-label={`Heat map of mean ${props.metric} over ${xName} and ${yName}; the table below lists each cell`}>
        {cells.map((c) => (
          <rect x={LEFT + c.x * CW} y={TOP + (y.length - 1 - c.y) * CH} width={CW - 1} height={CH - 1}
            fill={colour(hi === lo ? 0.5 : (c.mean - lo) / (hi - lo))}>
            <title>{`${xName}=${x[c.x]}, ${yName}=${y[c.y]}: ${formatNumber(c.mean)} (${c.count} trials)`}</title></rect>))}
        {x.map((l, i) => <text x={LEFT + i * CW + CW / 2} y={TOP + plotH + 15} text-anchor="middle"
          font-size="11" fill="currentColor" class="heat-x-label"><title>{l}</title>{fitLabel(l, xChars)}</text>)}
        {y.map((l, i) => <text x={LEFT - 6} y={TOP + (y.length - 1 - i) * CH + CH / 2 + 4} text-anchor="end"
          font-size="11" fill="currentColor" class="heat-y-label"><title>{l}</title>{fitLabel(l, yChars)}</text>)}
        <text x={LEFT + plotW / 2} y={TOP + plotH + 36} text-anchor="middle" font-size="12"
          fill="currentColor" class="axis-title">{xName}</text>
        <text x={12} y={TOP + plotH / 2} text-anchor="middle" font-size="12" fill="currentColor" class="axis-title"
          transform={`rotate(-90 12 ${TOP + plotH / 2})`}>{fitLabel(yName, 24)}</text>
      </svg>
      </div>
      <table id="heat-table">
        <caption>Heat map cells: mean {props.metric} per {xName} and {yName}</caption>
        <thead><tr><th scope="col">{xName}</th><th scope="col">{yName}</th>
          <th scope="col">Mean {props.metric}</th><th scope="col">Trials</th></tr></thead>
        <tbody>{cells.slice().sort((a, b) => a.x - b.x || a.y - b.y).map((c) => (
          <tr><td>{x[c.x]}</td><td>{y[c.y]}</td><td>{formatNumber(c.mean)}</td><td>{c.count}</td></tr>))}</tbody>
      </table>
    </div>
  );
}

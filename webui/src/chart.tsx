import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useEffect, useRef } from "preact/hooks";
import { degenerateRange, markerIndices } from "./chartdata";
import { formatNumber } from "./formatting";

export type Series = { label: string; x: number[]; y: (number | null)[] };

export const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22"];

// Exponential moving average, as TensorBoard's smoothing slider (0 = raw).
export function smooth(y: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return y;
  let last: number | null = null;
  return y.map((v) => {
    if (v === null || !Number.isFinite(v)) return v;
    last = last === null ? v : last * weight + v * (1 - weight);
    return last;
  });
}

// Series with different steps are joined on the union of their steps (uPlot's aligned data).
function align(series: Series[]): uPlot.AlignedData {
  const steps = Array.from(new Set(series.flatMap((s) => s.x))).sort((a, b) => a - b);
  const index = new Map(steps.map((s, i) => [s, i]));
  const ys = series.map((s) => {
    const col: (number | null)[] = new Array(steps.length).fill(null);
    s.x.forEach((x, i) => (col[index.get(x)!] = s.y[i]));
    return col;
  });
  return [steps, ...ys] as uPlot.AlignedData;
}

// A canvas does not follow CSS: axis ink and grid lines are read from the theme's variables
// when drawn, and every live plot is redrawn when the theme changes.
const cssVar = (name: string, fallback: string) =>
  getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
const ink = () => cssVar("--fg", "#1a1a1a");
const rule = () => cssVar("--line", "#c8c8c8");
const live = new Set<uPlot>();
let watching = false;
function followTheme() {
  if (watching) return;
  watching = true;
  new MutationObserver(() => live.forEach((u) => u.redraw(false, true)))
    .observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
}

// Tick spacings 1, 2, 5, 10, 20, 50, … for an axis of whole numbers.
const INTEGER_STEPS = Array.from({ length: 16 }, (_, e) => [1, 2, 5].map((f) => f * 10 ** e)).flat();

// The y-axis is as wide as its longest tick label, so small values (1.2e-5) are not clipped.
function axisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const longest = (values ?? []).reduce((n, v) => Math.max(n, String(v).length), 0);
  const size = Math.ceil(longest * 7.5) + 16 + (u.axes[axisIdx].label ? 18 : 0);
  return cycleNum > 1 ? Math.max(size, (u.axes[axisIdx] as any)._size ?? 0) : size;
}

export type PlotProps = {
  panel: string;
  title: string;
  series: Series[];
  colors?: string[];
  xLabel: string;
  yLabel: string;
  time?: boolean;
  integerX?: boolean;
  log?: boolean;
  width: number;
  height?: number;
  sync?: string;
  onZoom?: (lo: number, hi: number) => void;
  onPaint?: (ms: number) => void;
};

// One uPlot plot with both axes labelled, a marker on every point of a sparse series (a single
// validation point is drawn, not lost as a zero-length line), and ranges that hold a lone value.
export function Plot(props: PlotProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    if (!host.current) return;
    const data = align(props.series);
    const log = Boolean(props.log);
    const opts: uPlot.Options = {
      width: props.width,
      height: props.height ?? 260,
      title: props.title,
      scales: {
        x: {
          time: Boolean(props.time),
          range: (_u, lo, hi) => (lo === hi || lo === null ? degenerateRange(lo, false, props.time) :
            [lo, hi]) as uPlot.Range.MinMax,
        },
        y: {
          distr: log ? 3 : 1,
          range: (_u, lo, hi) => (lo === hi || lo === null || hi === null ? degenerateRange(lo, log) :
            log ? uPlot.rangeLog(lo, hi, 10, true) : uPlot.rangeNum(lo, hi, 0.1, true)) as uPlot.Range.MinMax,
        },
      },
      axes: [
        { stroke: ink, grid: { stroke: rule, width: 1 }, ticks: { stroke: rule, width: 1 },
          label: props.xLabel, labelSize: 18,
          ...(props.time ? {} : { values: (_u: uPlot, vs: number[]) => vs.map(formatNumber) }),
          // Batches are whole: no tick at 2.5 batches.
          ...(props.integerX ? { incrs: INTEGER_STEPS } : {}) },
        { stroke: ink, grid: { stroke: rule, width: 1 }, ticks: { stroke: rule, width: 1 },
          label: props.yLabel, labelSize: 18, size: axisSize,
          values: (_u: uPlot, vs: number[]) => vs.map((v) => (v === null ? "" : formatNumber(v))) },
      ],
      series: [
        { label: props.xLabel },
        ...props.series.map((s, i) => {
          const marked = markerIndices(data[i + 1] as (number | null)[]);
          const colour = (props.colors ?? COLORS)[i % (props.colors ?? COLORS).length];
          return {
            label: s.label,
            stroke: colour,
            width: 1.5,
            spanGaps: true,
            points: { show: marked.length > 0, filter: () => marked, size: 7, fill: colour },
            value: (_u: uPlot, v: number | null) => (v === null ? "—" : formatNumber(v)),
          };
        }),
      ],
      hooks: {
        setSelect: [
          (u: uPlot) => {
            if (!props.onZoom || u.select.width < 2) return;
            const lo = u.posToVal(u.select.left, "x");
            const hi = u.posToVal(u.select.left + u.select.width, "x");
            props.onZoom(lo, hi);
          },
        ],
      },
      cursor: {
        drag: { x: true, y: false, setScale: !props.onZoom },
        ...(props.sync ? { sync: { key: props.sync } } : {}),
      },
    };
    const started = performance.now();
    plot.current?.destroy();
    const made = new uPlot(opts, data, host.current);
    plot.current = made;
    live.add(made);
    followTheme();
    props.onPaint?.(performance.now() - started);
    // Tests read the drawn plot (its scales and canvas) from here.
    const plots = ((window as any).__plots = (window as any).__plots || {});
    plots[props.panel] = made;
    return () => {
      live.delete(made);
      made.destroy();
      if (plot.current === made) plot.current = null;
      if (plots[props.panel] === made) delete plots[props.panel];
    };
  }, [props.series, props.log, props.width, props.time, props.xLabel, props.yLabel, props.title]);
  return <div ref={host} data-panel={props.panel} />;
}

// A text alternative for a plot: what is drawn, per series its range and last value.
export function describe(series: Series[]): string {
  return series
    .map((s) => {
      const ys = s.y.filter((v): v is number => v !== null && Number.isFinite(v));
      if (!ys.length) return `${s.label}: no data`;
      const lo = ys.reduce((a, b) => (b < a ? b : a));
      const hi = ys.reduce((a, b) => (b > a ? b : a));
      return `${s.label}: min ${formatNumber(lo)}, max ${formatNumber(hi)}, last ${formatNumber(ys[ys.length - 1])}`;
    })
    .join("; ");
}

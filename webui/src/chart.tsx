import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useEffect, useRef } from "preact/hooks";

export type Series = { label: string; x: number[]; y: (number | null)[] };

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
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

export function Chart(props: {
  id: string;
  title: string;
  series: Series[];
  log?: boolean;
  width?: number;
  onZoom?: (lo: number, hi: number) => void;
  zoom?: [number, number] | null;
  loaded?: boolean;
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const width = props.width ?? 900;
  useEffect(() => {
    if (!host.current) return;
    const data = align(props.series);
    const charts = ((window as any).__charts = (window as any).__charts || {});
    // What tests and benchmarks read: absent until the chart holds the server's answer.
    if (props.loaded === false) delete charts[props.id];
    const published = {
      labels: props.series.map((s) => s.label),
      series: props.series.map((s) => ({ x: s.x, y: s.y })),
      zoom: props.zoom ?? null,
      paintMs: 0,
    };
    const opts: uPlot.Options = {
      width,
      height: 320,
      title: props.title,
      scales: { x: { time: false }, y: { distr: props.log ? 3 : 1 } },
      axes: [{ stroke: "currentColor" }, { stroke: "currentColor" }],
      series: [
        { label: "batches" },
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 1.5,
          spanGaps: true,
          points: { show: false },
        })),
      ],
      hooks: {
        setSelect: [
          (u: uPlot) => {
            if (u.select.width < 2) return;
            const lo = u.posToVal(u.select.left, "x");
            const hi = u.posToVal(u.select.left + u.select.width, "x");
            props.onZoom?.(lo, hi);
          },
        ],
      },
      cursor: { drag: { x: true, y: false, setScale: !props.onZoom } },
    };
    const started = performance.now();
    plot.current?.destroy();
    plot.current = new uPlot(opts, data, host.current);
    published.paintMs = performance.now() - started;
    if (props.loaded !== false) charts[props.id] = published;
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [props.series, props.log, width, props.loaded]);
  const points = props.series.reduce((n, s) => n + s.x.length, 0);
  return (
    <figure class="chart">
      <div ref={host} data-chart={props.id} />
      <figcaption class="sr-only">
        {props.title}: {props.series.length} series, {points} points drawn.{" "}
        {props.series
          .map((s) => {
            const ys = s.y.filter((v): v is number => v !== null && Number.isFinite(v));
            if (!ys.length) return `${s.label}: no data`;
            const lo = ys.reduce((a, b) => (b < a ? b : a));
            const hi = ys.reduce((a, b) => (b > a ? b : a));
            return `${s.label}: min ${lo}, max ${hi}, last ${ys[ys.length - 1]}`;
          })
          .join("; ")}
      </figcaption>
    </figure>
  );
}

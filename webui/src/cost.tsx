import { api } from "./api";
import { formatNumber } from "./formatting";
import { usePoll } from "./poll";

// What an experiment or trial has cost so far (docs/cost.md), and a provider pool's offers:
// each instance type x zone with its price, and while it is cold after a capacity error, until
// when and why; the pool's hourly cost against its budget.

type Cost = { cost: number; slotHours: number; unpricedSlotHours: number; currency?: string };

const money = (c: Cost) => `$${c.cost.toFixed(2)}`;

export function CostLine(props: { path: string; id: string }) {
  // A master that keeps no costs answers 404: then nothing is shown.
  const [data] = usePoll(() => api<{ total: Cost }>(props.path).catch(() => null), [props.path], 30000);
  const total = data?.total;
  if (!total) return null;
  return (
    <p id={props.id}>Cost so far: <strong>{money(total)}</strong> for {formatNumber(total.slotHours)} slot-hours
      {total.unpricedSlotHours > 0 && <> ({formatNumber(total.unpricedSlotHours)} slot-hours on unpriced agents)</>}</p>
  );
}

type Offer = { key: string; instanceType: string; location: string; spot: boolean; slots: number;
  pricePerHour: number; fallback: boolean; coldUntil?: string | null; failures: number; lastError?: string | null };
type Provisioner = { provider: string; spot: boolean; instances: any[]; offers: Offer[];
  decisions: { at: string; kind: string; reason: string }[]; waitingReason?: string | null;
  launchError?: string | null; hourlyCost?: number | null; maxHourlyCost?: number | null };

export function PoolOffers(props: { pool: string }) {
  // A static pool has no provider (404): nothing to show.
  const [p] = usePoll(() => api<Provisioner>(`/api/v1/resource-pools/${encodeURIComponent(props.pool)}/provisioner`)
    .catch(() => null), [props.pool], 5000);
  if (!p) return null;
  return (
    <section aria-labelledby="offers-title">
      <h2 id="offers-title">Capacity: {p.provider.toUpperCase()}{p.spot ? ", spot" : ""}</h2>
      <p>{p.instances.length} instances
        {p.hourlyCost != null && <> · ${p.hourlyCost.toFixed(2)}/h</>}
        {p.maxHourlyCost != null && <> of a ${p.maxHourlyCost.toFixed(2)}/h budget</>}</p>
      {p.waitingReason && <p role="status" id="pool-waiting">Waiting: {p.waitingReason}</p>}
      {p.launchError && <p role="alert" class="error">Last launch error: {p.launchError}</p>}
      {p.offers.length > 0 && (
        <table id="pool-offers"><caption>Offers, best first</caption>
          <thead><tr><th scope="col">Instance type</th><th scope="col">Where</th><th scope="col">Market</th>
            <th scope="col">Slots</th><th scope="col">$/h</th><th scope="col">Status</th></tr></thead>
          <tbody>{p.offers.map((o) => (
            <tr>
              <td>{o.instanceType}</td><td>{o.location}</td>
              <td>{o.spot ? "spot" : "on-demand"}{o.fallback ? " (fallback)" : ""}</td>
              <td>{o.slots}</td><td>{o.pricePerHour.toFixed(3)}</td>
              <td>{o.coldUntil ? <>cold until {new Date(o.coldUntil).toLocaleTimeString()}
                {o.lastError && <>: {o.lastError}</>} ({o.failures} failures)</> : "ready"}</td>
            </tr>))}</tbody>
        </table>
      )}
      {p.decisions.length > 0 && (
        <table id="pool-decisions"><caption>Recent scaling decisions</caption>
          <thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Why</th></tr></thead>
          <tbody>{p.decisions.slice(0, 10).map((d) => (
            <tr><td>{new Date(d.at).toLocaleString()}</td><td>{d.kind}</td><td>{d.reason}</td></tr>))}</tbody>
        </table>
      )}
    </section>
  );
}

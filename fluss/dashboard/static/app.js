// The Fluss dashboard: one page, routes after '#', data from the JSON API next to it (relative URLs, so the page
// works at the root and mounted under a prefix). Plain JavaScript and SVG: nothing to build or download.
"use strict";

const REFRESH_MS = 2000;
const main = document.getElementById("main");
let timer = null;
let generation = 0;

// ---------------------------------------------------------------- helpers

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                                                        "'": "&#39;"}[c]));
}

function num(n, digits = 0) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return Number(n).toLocaleString("en-US", {maximumFractionDigits: digits, minimumFractionDigits: 0});
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function pill(text, kind) {
  return `<span class="pill ${kind}">${esc(text)}</span>`;
}

async function api(path) {
  const response = await fetch(path, {cache: "no-store"});
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

function setStatus(ok, text) {
  const el = document.getElementById("status");
  el.textContent = text;
  el.classList.toggle("stale", !ok);
}

// ---------------------------------------------------------------- charts

const COLORS = ["#2f6fdd", "#1f9d55", "#d98e04", "#a34fd6", "#d64545"];

function lineChart(id, title, t, lines, format) {
  const w = 420, h = 150, left = 52, right = 8, top = 8, bottom = 18;
  const values = lines.flatMap(l => l.values.filter(v => v !== null && v !== undefined));
  const max = Math.max(1e-9, ...values) * 1.1;
  const t0 = t.length ? t[0] : 0, t1 = t.length ? t[t.length - 1] : 1;
  const x = i => left + (t.length > 1 ? (t[i] - t0) / Math.max(1e-9, t1 - t0) : 1) * (w - left - right);
  const y = v => top + (1 - v / max) * (h - top - bottom);
  const paths = lines.map((line, k) => {
    let d = "", pen = false;
    line.values.forEach((v, i) => {
      if (v === null || v === undefined) { pen = false; return; }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)} `;
      pen = true;
    });
    return `<path d="${d}" fill="none" stroke="${COLORS[k % COLORS.length]}" stroke-width="1.6"/>`;
  }).join("");
  const span = t.length > 1 ? `${Math.round(t1 - t0)} s` : "";
  const legend = lines.map((line, k) => {
    const last = [...line.values].reverse().find(v => v !== null && v !== undefined);
    return `<span><i style="background:${COLORS[k % COLORS.length]}"></i>${esc(line.name)} ${format(last ?? 0)}</span>`;
  }).join("");
  return `<div class="chart"><div class="title">${esc(title)}</div><div class="legend">${legend}</div>
    <svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" data-chart="${esc(id)}" data-points="${t.length}">
      <line class="axis" x1="${left}" y1="${h - bottom}" x2="${w - right}" y2="${h - bottom}"/>
      <line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${h - bottom}"/>
      <text x="${left - 4}" y="${top + 8}" text-anchor="end">${esc(format(max / 1.1))}</text>
      <text x="${left - 4}" y="${h - bottom}" text-anchor="end">0</text>
      <text x="${w - right}" y="${h - 4}" text-anchor="end">${esc(span)}</text>${paths}</svg></div>`;
}

const perSecond = n => `${num(n, n < 10 ? 1 : 0)}/s`;
const bytesPerSecond = n => `${bytes(n)}/s`;
const millis = n => `${num(n, n < 10 ? 2 : 0)} ms`;

// ---------------------------------------------------------------- pages

async function overviewPage() {
  const [o, s] = await Promise.all([api("api/overview"), api("api/series")]);
  document.getElementById("cluster").textContent = o.bootstrap_servers;
  const t = o.totals;
  const card = (label, value, cls = "") => `<div class="card ${cls}" data-card="${esc(label)}">
      <div class="value">${esc(value)}</div><div class="label">${esc(label)}</div></div>`;
  const coordinators = o.coordinators.map(c => `<tr data-testid="coordinator-row">
      <td>${esc(c.address)}</td>
      <td>${pill(c.state, c.state === "active" ? "ok" : c.state === "standby" ? "off" : "bad")}</td>
      <td>${c.id ?? ""}</td><td>${c.zookeeper ? pill(c.zookeeper, c.zookeeper === "connected" ? "ok" : "bad") : ""}</td>
    </tr>`).join("");
  const servers = o.tablet_servers.map(ts => `<tr data-testid="server-row" data-server="${ts.id}">
      <td>${ts.id}</td><td>${esc(ts.address)}</td>
      <td>${ts.scrape_error ? pill("metrics down", "bad") : ts.metrics ? pill("up", "ok") : pill("no metrics", "off")}</td>
      <td class="num">${num(ts.leaders)}</td><td class="num">${num(ts.replicas)}</td>
      <td class="num">${ts.under_replicated ? pill(num(ts.under_replicated), "warn") : num(ts.under_replicated)}</td>
      <td class="num">${bytes(ts.log_size)}</td><td class="num">${bytes(ts.kv_size)}</td>
      <td>${ts.zookeeper ? pill(ts.zookeeper, ts.zookeeper === "connected" ? "ok" : "bad") : "–"}</td></tr>`).join("");
  const lat = s.latency;
  const latencyLines = key => Object.keys(lat).map(r => ({name: r, values: lat[r][key]}));
  return `
    <h2>Cluster</h2>
    <div class="cards">
      ${card("tablet servers", num(t.tablet_servers))}
      ${card("tables", num(t.tables))}
      ${card("partitions", num(t.partitions))}
      ${card("buckets", num(t.buckets))}
      ${card("offline buckets", num(t.offline_buckets), t.offline_buckets ? "bad" : "")}
      ${card("under-replicated", num(t.under_replicated), t.under_replicated ? "warn" : "")}
      ${card("ZooKeeper sessions", `${o.zookeeper.connected}/${o.zookeeper.sessions}`,
             o.zookeeper.connected < o.zookeeper.sessions ? "bad" : "")}
    </div>
    ${o.metrics ? "" : `<p class="muted">The servers export no metrics: start them with
       <code>metrics.reporters: prometheus</code> for sizes, health gauges and charts.</p>`}
    <h2>Live</h2>
    <div class="charts">
      ${lineChart("produce-records", "Produce (records/s)", s.t, [{name: "records", values: s.produce_records}], perSecond)}
      ${lineChart("throughput", "Throughput", s.t, [{name: "in", values: s.produce_bytes},
                  {name: "fetch", values: s.fetch_bytes}, {name: "replication", values: s.replication_bytes}],
                  bytesPerSecond)}
      ${lineChart("latency-avg", "Request latency, mean", s.t, latencyLines("avg"), millis)}
      ${lineChart("latency-p99", "Request latency, p99", s.t, latencyLines("p99"), millis)}
    </div>
    <h2>Coordinators</h2>
    <table class="grid"><thead><tr><th>address</th><th>state</th><th>id</th><th>ZooKeeper</th></tr></thead>
      <tbody>${coordinators}</tbody></table>
    <h2>Tablet servers</h2>
    <table class="grid"><thead><tr><th>id</th><th>address</th><th>metrics</th><th>leaders</th><th>replicas</th>
      <th>under-replicated</th><th>log size</th><th>KV size</th><th>ZooKeeper</th></tr></thead>
      <tbody>${servers}</tbody></table>`;
}

async function tablesPage() {
  const d = await api("api/tables");
  const rows = d.tables.map(tb => `<tr data-testid="table-row" data-table="${esc(tb.database)}.${esc(tb.table)}">
      <td><a href="#/table/${encodeURIComponent(tb.database)}/${encodeURIComponent(tb.table)}">${esc(tb.database)}.${esc(tb.table)}</a></td>
      <td>${esc(tb.kind)}</td><td class="num">${tb.buckets}</td><td>${tb.partitioned ? "yes" : ""}</td>
      <td class="num">${esc(tb.replication ?? "")}</td><td>${tb.lake ? pill("lake", "ok") : ""}</td>
      <td class="num">${perSecond(tb.records_in_per_s)}</td><td class="num">${bytesPerSecond(tb.bytes_out_per_s)}</td>
      <td class="num">${bytes(tb.log_size)}</td></tr>`).join("");
  return `<h2>Tables (${d.tables.length})</h2>
    <table class="grid"><thead><tr><th>table</th><th>kind</th><th>buckets</th><th>partitioned</th><th>replication</th>
      <th>lake</th><th>writes</th><th>client reads</th><th>log size (all replicas)</th></tr></thead>
      <tbody>${rows || `<tr><td colspan="9" class="muted">no tables</td></tr>`}</tbody></table>`;
}

async function tablePage(database, table) {
  const d = await api(`api/tables/${encodeURIComponent(database)}/${encodeURIComponent(table)}`);
  const pk = d.kind === "primary key";
  const partitioned = d.partition_keys.length > 0;
  const buckets = d.buckets.map(b => `<tr data-testid="bucket-row" data-bucket="${esc(b.partition ?? "")}/${b.bucket}">
      ${partitioned ? `<td>${esc(b.partition)}</td>` : ""}<td class="num">${b.bucket}</td>
      <td class="num">${b.leader >= 0 ? b.leader : pill("none", "bad")}</td><td>${b.replicas.join(", ")}</td>
      <td>${b.in_sync ? b.isr.join(", ") : pill(b.isr.join(", ") || "empty", "warn")}</td>
      <td class="num" data-testid="start-offset">${num(b.start_offset)}</td>
      <td class="num" data-testid="end-offset">${num(b.end_offset)}</td>
      <td class="num">${bytes(b.log_size)}</td>
      ${pk ? `<td class="num">${bytes(b.kv_size)}</td>
              <td>${b.kv_snapshot ? `#${b.kv_snapshot.id} at ${num(b.kv_snapshot.log_offset)}, ${age(b.kv_snapshot.age_s)} ago` : "–"}</td>` : ""}
      ${d.lake ? `<td class="num">${num(b.tiered_offset)}</td><td class="num">${num(b.tier_lag)}</td>` : ""}</tr>`).join("");
  const columns = d.columns.map(c => `${esc(c.name)} <span class="muted">${esc(c.type)}</span>${c.primary_key ? " 🔑" : ""}`)
    .join("<br>");
  const props = Object.entries(d.properties).map(([k, v]) => `${esc(k)} = ${esc(v)}`).join("<br>") || "–";
  return `<h2>${esc(database)}.${esc(table)} <span class="muted">(${esc(d.kind)} table, id ${d.id})</span></h2>
    <dl class="kv">
      <dt>rows</dt><dd data-testid="rows">${num(d.rows)}</dd>
      <dt>columns</dt><dd>${columns}</dd>
      ${partitioned ? `<dt>partitioned by</dt><dd>${esc(d.partition_keys.join(", "))}</dd>` : ""}
      <dt>bucket key</dt><dd>${esc(d.bucket_keys.join(", ") || "–")}</dd>
      <dt>properties</dt><dd>${props}</dd>
      ${d.lake ? `<dt>lake snapshot</dt><dd data-testid="lake">${d.lake.snapshot_id === null ? "not tiered yet" :
        `#${d.lake.snapshot_id}, committed ${age(d.lake.age_s)} ago; tiering lag ${num(d.lake.tier_lag)} records`}</dd>` : ""}
    </dl>
    <h2>Live</h2>
    <div class="charts">
      ${lineChart("table-records", "Writes (records/s)", d.series.t, [{name: "records", values: d.series.records_in}], perSecond)}
      ${lineChart("table-reads", "Client reads", d.series.t, [{name: "bytes", values: d.series.bytes_out}], bytesPerSecond)}
    </div>
    <h2>Buckets (${d.buckets.length})</h2>
    <table class="grid"><thead><tr>${partitioned ? "<th>partition</th>" : ""}<th>bucket</th><th>leader</th>
      <th>replicas</th><th>ISR</th><th>log start</th><th>log end (HW)</th><th>log size</th>
      ${pk ? "<th>KV size</th><th>KV snapshot</th>" : ""}${d.lake ? "<th>tiered to</th><th>tiering lag</th>" : ""}
      </tr></thead><tbody>${buckets}</tbody></table>`;
}

// ---------------------------------------------------------------- routing and refresh

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "tables") return {name: "tables", render: tablesPage};
  if (parts[0] === "table" && parts.length >= 3) return {name: "tables", render: () => tablePage(parts[1], parts[2])};
  return {name: "overview", render: overviewPage};
}

let busy = false;

async function refresh() {
  if (busy) return;  // the previous refresh is still waiting for the server
  busy = true;
  try {
    await render();
  } finally {
    busy = false;
  }
}

async function render() {
  const mine = generation;
  const r = route();
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("active", a.dataset.nav === r.name));
  try {
    const html = await r.render();
    if (mine !== generation) return;  // the route changed meanwhile
    main.innerHTML = html;
    setStatus(true, `updated ${new Date().toLocaleTimeString()}`);
  } catch (e) {
    if (mine !== generation) return;
    setStatus(false, "refresh failed");
    main.innerHTML = `<div class="error">${esc(e.message)}</div>`;
  }
}

function start() {
  generation++;
  clearInterval(timer);
  busy = false;
  refresh();
  timer = setInterval(refresh, REFRESH_MS);
}

window.addEventListener("hashchange", start);
start();

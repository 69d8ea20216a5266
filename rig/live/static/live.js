// feltlab live view: renders the snapshots the server streams (server-sent events).
// Read-only: this script only reads /state and /events; it sends nothing else.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const VERDICTS = ["PASS", "FAIL", "ERROR", "INCONCLUSIVE", "ABORTED"];
  const SVG = "http://www.w3.org/2000/svg";

  function text(el, s) { el.textContent = s == null ? "" : String(s); }
  function dur(s) {
    if (s == null || !isFinite(s)) return "–";
    if (s < 1e-3) return (s * 1e6).toFixed(0) + " µs";
    if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + " ms";
    if (s < 120) return s.toFixed(1) + " s";
    if (s < 7200) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  function num(x) { return x == null ? "–" : (typeof x === "number" ? x.toLocaleString("en") : String(x)); }
  function kv(table, rows) {
    table.replaceChildren();
    for (const [k, v, cls] of rows) {
      const tr = document.createElement("tr");
      const a = document.createElement("td"); text(a, k);
      const b = document.createElement("td"); text(b, v);
      if (cls) b.className = cls;
      tr.append(a, b); table.append(tr);
    }
  }

  function histogram(name, h) {
    const box = document.createElement("div");
    box.className = "hist";
    box.dataset.name = name;
    const title = document.createElement("div"); title.className = "name"; text(title, name);
    const stats = document.createElement("div"); stats.className = "stats";
    text(stats, `n ${num(h.n)} · p50 ${dur(h.p50)} · p95 ${dur(h.p95)} · p99 ${dur(h.p99)} · max ${dur(h.max)}`);
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 240 70");
    svg.setAttribute("preserveAspectRatio", "none");
    const counts = h.counts || [];
    const top = Math.max(1, ...counts);
    const w = 240 / Math.max(1, counts.length);
    counts.forEach((c, i) => {
      const r = document.createElementNS(SVG, "rect");
      const hgt = c ? Math.max(1, 66 * c / top) : 0;
      r.setAttribute("x", (i * w).toFixed(2));
      r.setAttribute("width", Math.max(0.5, w - 1).toFixed(2));
      r.setAttribute("y", (70 - hgt).toFixed(2));
      r.setAttribute("height", hgt.toFixed(2));
      const t = document.createElementNS(SVG, "title");
      t.textContent = `${dur(h.edges[i])} – ${dur(h.edges[i + 1])}: ${c}`;
      r.append(t);
      svg.append(r);
    });
    const axis = document.createElement("div"); axis.className = "stats";
    if (h.edges && h.edges.length) text(axis, `${dur(h.edges[0])} … ${dur(h.edges[h.edges.length - 1])}` + (h.scale === "log" ? " (log scale)" : ""));
    box.append(title, stats, svg, axis);
    return box;
  }

  function render(s) {
    const c = s.campaign || {};
    const p = s.progress || {};
    const d = s.device || {};
    const b = s.bus || {};
    const sm = s.samples || {};
    document.body.dataset.state = s.state || "";
    text($("device"), c.device ? `${c.device} · ${c.kind || ""} campaign ${c.id ? c.id.slice(0, 8) : ""} · seed ${c.seed ?? "–"} · ${c.directory || ""}` : "waiting for the campaign…");

    // verdict
    const box = $("verdict-box");
    const v = s.verdict;
    box.className = "verdict-box " + (v && VERDICTS.includes(v) ? v : (v ? "ERROR" : (s.state === "failed" ? "failed" : "pending")));
    const ve = $("verdict");
    ve.dataset.verdict = v || "";
    if (v) text(ve, v);
    else if (s.state === "failed") text(ve, "no verdict: the campaign failed");
    else if (s.state === "analysing") text(ve, "not yet: analysing the capture");
    else text(ve, "not yet: the campaign is running");
    const link = $("report-link");
    link.replaceChildren();
    if (s.report) {
      const a = document.createElement("a");
      a.href = "/" + s.report; a.id = "report"; a.target = "_blank"; a.rel = "noopener";
      text(a, "open the report (report.html)");
      link.append(a);
    }

    // progress
    const frac = Math.max(0, Math.min(1, p.fraction || 0));
    $("bar-fill").style.width = (100 * frac).toFixed(1) + "%";
    const pe = $("progress");
    pe.dataset.done = String(p.done || 0);
    pe.dataset.total = p.total == null ? "" : String(p.total);
    const unit = c.unit || "samples";
    text(pe, `${s.phase || ""}: ${num(p.done)} of ${num(p.total)} ${unit} (${(100 * frac).toFixed(1)}%)`);
    const sim = c.clock === "sim";
    // a finished campaign read from its folder has no wall time of its own: none shown
    let t = p.wall_elapsed_s == null ? "" : `elapsed ${dur(p.wall_elapsed_s)} wall`;
    if (!v && p.wall_left_s != null) t += `, about ${dur(p.wall_left_s)} left`;
    if (p.clock_elapsed_s != null && sim) {
      t += `${t ? " · " : ""}${dur(p.clock_elapsed_s)} simulated`;
      if (!v && p.clock_left_s != null) t += `, ${dur(p.clock_left_s)} simulated left`;
    }
    text($("timing"), t);
    const desc = (c.clock_description || "").replace(/^(simulated|real) time:\s*/, "");
    text($("clock"), c.clock ? (sim ? "SIMULATED TIME: " : "REAL TIME: ") + desc : "");
    $("interim").classList.toggle("hidden", !s.interim);

    kv($("device-table"), [
      ["state", d.lost ? "LOST (no heartbeat)" : (d.online ? "online" : (d.online === false ? "not heard yet" : "–")), d.lost ? "warn" : ""],
      ["heartbeats", num(d.heartbeats)],
      ["heartbeats missed", num(d.heartbeats_missed)],
      ["faults raised", num(d.faults)],
      ["faults active", (d.faults_active || []).join(", ") || "none"],
      ["reboots", num(d.reboots)],
      ["malformed frames", num(d.malformed)],
      ["stale replies discarded", num(d.stale_replies)],
      ["failed transfers", num(d.transfer_errors)],
      ["retransmissions", num(d.retransmissions)],
    ]);
    const rows = [
      ["frames sent", num(b.frames_sent)],
      ["frames received", num(b.frames_received)],
      ["frames lost", num(b.frames_lost)],
    ];
    if (b.frames_in_capture != null) rows.push(["frames in the capture", num(b.frames_in_capture)]);
    rows.push(["bitrate", b.bitrate ? num(b.bitrate) + " bit/s" : "unpaced"]);
    const pct = (x) => (x == null ? "–" : (100 * x).toFixed(1) + " %");
    rows.push(["bus load, part average", pct(b.load_average) + " (frame bits before stuffing over the part's bus time)"]);
    rows.push(["bus load, last second", pct(b.load)]);
    kv($("bus-table"), rows);
    kv($("samples-table"), [
      [unit + " collected", num(sm.collected)],
      [unit + " missing", num(sm.missing), sm.missing ? "warn" : ""],
      ...((sm.missing_list || []).slice(0, 5).map((m) => ["  #" + m[0], m[1]])),
    ]);
    const hu = s.host_uncertainty;
    if (hu && typeof hu === "object") {
      const p99 = (o) => (o && typeof o === "object" && o.p99 != null ? dur(o.p99) : "–");
      kv($("host-table"), [
        ["uncertainty", hu.seconds == null ? "–" : `${dur(hu.seconds)} (p99), ${dur(hu.seconds_max)} (max)`],
        ["source", String(hu.source || "–")],
        ["timer overshoot", p99(hu.timer_overshoot) + " (p99)"],
        ["loopback round trip", hu.loopback_round_trip ? p99(hu.loopback_round_trip) + " (p99)" : String(hu.loopback_reason || "not measured")],
        ["timestamp resolution", hu.resolution_s == null ? "–" : dur(hu.resolution_s)],
        ["device on this host", hu.device_on_host ? "yes (its own late wake-ups counted)" : "no"],
        ["measured", (hu.measured || []).map((m) => String(m.label)).join(", ") || "–"],
      ]);
    } else {
      kv($("host-table"), [["measured", sim ? "not applicable: simulated time does not depend on the host" : "not yet (measured by the rig, shown when recorded)"]]);
    }

    const lat = $("latencies");
    lat.replaceChildren();
    for (const [name, h] of Object.entries(s.latencies || {})) lat.append(histogram(name, h));
    if (!lat.children.length) text(lat, "none yet");

    const checks = $("checks");
    checks.replaceChildren();
    if ((s.checks || []).length) {
      const head = document.createElement("tr");
      for (const col of ["check", "value", "limits / p", "verdict"]) {
        const th = document.createElement("th"); text(th, col); head.append(th);
      }
      checks.append(head);
      for (const r of s.checks) {
        const tr = document.createElement("tr");
        const val = r.value == null ? (r.reason ? "not measured: " + r.reason : "") : r.value + (r.unit ? " " + r.unit : "");
        for (const [x, cls] of [[r.name], [val], [r.limits || ""], [r.verdict, "v-" + r.verdict]]) {
          const td = document.createElement("td"); text(td, x); if (cls) td.className = cls; tr.append(td);
        }
        checks.append(tr);
      }
    } else {
      const tr = document.createElement("tr"); const td = document.createElement("td");
      text(td, "checks run on the whole capture at the end"); tr.append(td); checks.append(tr);
    }
    const pw = $("power");
    pw.replaceChildren();
    const pnotes = $("power-notes");
    pnotes.replaceChildren();
    if (s.power && (s.power.rows || []).length) {
      text($("power-level"), `power required ${s.power.required} at ${s.power.level}`);
      const head = document.createElement("tr");
      for (const col of ["alternative", "shoes", "power [95% CI]", "caught", "shoes needed", "caught first by"]) {
        const th = document.createElement("th"); text(th, col); head.append(th);
      }
      pw.append(head);
      const f = (x) => (x == null ? "-" : Number(x).toFixed(3));
      for (const r of s.power.rows) {
        const tr = document.createElement("tr");
        const cells = [[r.model], [r.shoes], [`${f(r.power)} [${f(r.low)}, ${f(r.high)}]`],
          [r.caught ? "yes" : "no", r.caught ? "v-PASS" : "v-INCONCLUSIVE"],
          [r.needed == null ? "not within 10,000,000" : r.needed], [r.by || "no check"]];
        for (const [x, cls] of cells) {
          const td = document.createElement("td"); text(td, x); if (cls) td.className = cls; tr.append(td);
        }
        pw.append(tr);
      }
      for (const n of s.power.notes || []) { const li = document.createElement("li"); text(li, n); pnotes.append(li); }
    } else {
      text($("power-level"), "the power against named alternatives is computed with the checks at the end");
    }
    const errs = $("errors");
    errs.replaceChildren();
    for (const e of s.errors || []) { const li = document.createElement("li"); text(li, e); errs.append(li); }
    if (!errs.children.length) { const li = document.createElement("li"); text(li, "none"); errs.append(li); }
    const evs = $("events");
    evs.replaceChildren();
    for (const e of (s.events || []).slice().reverse()) {
      const li = document.createElement("li");
      text(li, `${new Date(e.t * 1000).toISOString().slice(11, 23)} ${e.text}`);
      evs.append(li);
    }
    if (!evs.children.length) { const li = document.createElement("li"); text(li, "none"); evs.append(li); }
    document.body.dataset.version = String(s.version || 0);
  }

  function connect() {
    const conn = $("connection");
    if (!window.EventSource) {
      text(conn, "this browser has no EventSource: reload to refresh");
      fetch("/state").then((r) => r.json()).then(render);
      return;
    }
    const es = new EventSource("/events");
    es.addEventListener("snapshot", (ev) => { render(JSON.parse(ev.data)); text(conn, "live: updates as the campaign runs"); });
    es.addEventListener("end", () => { es.close(); text(conn, "campaign over: final state shown"); });
    es.onerror = () => { text(conn, "connection lost: the server stopped (the page shows the last state received)"); };
  }
  connect();
})();

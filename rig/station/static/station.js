// The station's operator page: one tile a socket, from the snapshots of /events (or /state).
"use strict";
(function () {
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function dur(s) {
    if (s === null || s === undefined || !isFinite(s)) return "–";
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return h ? h + " h " + m + " min" : m ? m + " min " + r + " s" : r + " s";
  }
  function tile(t) {
    const d = el("article", {
      class: "tile", id: "tile-" + t.name, "data-socket": t.name, "data-state": t.state,
      "data-verdict": t.verdict || "", "data-done": t.done, "data-total": t.total || "",
    });
    d.appendChild(el("h2", {}, t.name));
    d.appendChild(el("p", { class: "sub" }, t.device + " · " + t.kind + (t.batch ? " · batch " + t.batch : "")));
    const v = el("p", { class: "verdict" }, (t.verdict || "no verdict yet") + (t.verdict && t.interim ? " (so far)" : ""));
    d.appendChild(v);
    d.appendChild(el("p", { class: "state" }, "state: " + t.state + (t.starts > 1 ? " (started " + t.starts + " times)" : "")));
    const bar = el("div", { class: "bar" });
    const fill = el("div", { class: "bar-fill" });
    const frac = t.total ? Math.min(1, t.done / t.total) : 0;
    fill.style.width = (100 * frac).toFixed(1) + "%";
    bar.appendChild(fill);
    d.appendChild(bar);
    d.appendChild(el("p", { class: "progress" }, t.done + " of " + (t.total || "?") + " " + t.unit));
    d.appendChild(el("p", { class: "rate" }, "rate: " + (t.rate ? t.rate.toFixed(2) + " " + t.unit + "/s" : "–") + " · ETA " + dur(t.eta_s)));
    d.appendChild(el("p", { class: "faults" }, t.fault_count ? t.fault_count + " fault(s): " + t.faults.join("; ") : ""));
    const links = el("p", { class: "links" });
    if (t.live_url) links.appendChild(el("a", { href: t.live_url, class: "live" }, "live page"));
    if (t.live_url && t.report) links.appendChild(document.createTextNode(" · "));
    if (t.report) links.appendChild(el("a", { href: "/" + t.report, class: "report" }, "report"));
    d.appendChild(links);
    return d;
  }
  function render(s) {
    document.getElementById("station").textContent = s.station || "";
    const sum = document.getElementById("summary");
    sum.dataset.state = s.state;
    const tally = Object.entries(s.tally || {}).map(([k, v]) => v + " " + k).join(", ");
    sum.textContent = (s.state === "ended" ? "ended after " : "running for ") + dur(s.elapsed_s) + ": " + tally +
      (s.active_batch ? " · batch " + s.active_batch + " running" : "");
    const tiles = document.getElementById("tiles");
    tiles.replaceChildren(...(s.sockets || []).map(tile));
    const br = document.getElementById("batch-report");
    br.replaceChildren();
    if (s.batch_report) br.appendChild(el("a", { id: "batch-report-link", href: "/" + s.batch_report }, "batch report"));
    const body = document.querySelector("#record tbody");
    body.replaceChildren(...(s.record || []).slice().reverse().map((e) => {
      const tr = el("tr");
      const rest = Object.assign({}, e);
      delete rest.t; delete rest.event; delete rest.socket;
      tr.appendChild(el("td", {}, e.t));
      tr.appendChild(el("td", {}, e.socket || ""));
      tr.appendChild(el("td", {}, e.event));
      tr.appendChild(el("td", {}, JSON.stringify(rest)));
      return tr;
    }));
  }
  function start() {
    if (!window.EventSource) {
      fetch("/state").then((r) => r.json()).then(render);
      return;
    }
    const es = new EventSource("/events");
    es.addEventListener("snapshot", (ev) => render(JSON.parse(ev.data)));
    es.addEventListener("end", () => es.close());
  }
  start();
})();

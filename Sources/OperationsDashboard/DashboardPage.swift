// The page: one HTML document whose script reads the JSON routes and the live feed.
#if Dashboard
enum DashboardPage {
    static let html = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="icon" href="data:,">
    <title>Operations dashboard</title>
    <style>
    body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
    header { background: #1d2330; color: #fff; padding: 8px 16px; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
    header a { color: #cfe0ff; text-decoration: none; }
    header .title { font-weight: 600; }
    main { padding: 16px; }
    table { border-collapse: collapse; background: #fff; margin: 8px 0 16px; }
    th, td { border-bottom: 1px solid #e3e6ea; padding: 4px 10px; text-align: left; vertical-align: top; }
    th { background: #eef1f5; font-weight: 600; }
    td.num { text-align: right; font-variant-numeric: tabular-nums; }
    .banner { background: #fde7e7; color: #8a1c1c; padding: 8px 16px; }
    .muted { color: #6b7380; }
    .state-failed, .error { color: #b42318; }
    .state-succeeded { color: #067647; }
    .state-running { color: #175cd3; }
    .state-cancelled { color: #6b7380; }
    pre { background: #fff; border: 1px solid #e3e6ea; padding: 8px; overflow: auto; max-height: 300px; white-space: pre-wrap; overflow-wrap: anywhere; }
    #store-name { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    /* A fixed width: the live indicator's text changes at every push, and must not reflow the page under a click. */
    #live { display: inline-block; width: 11em; white-space: nowrap; overflow: hidden; }
    .tabs a { margin-right: 12px; }
    .tabs a.current { font-weight: 700; }
    button { margin-right: 6px; }
    #action-result { margin-left: 8px; }
    svg text { font: 11px system-ui, sans-serif; }
    </style>
    </head>
    <body>
    <header>
      <span class="title">Operations</span>
      <a href="#/">Queues</a><a href="#/failures">Failures</a><a href="#/workers">Workers</a><a href="#/local">In-process</a>
      <form id="search-form"><input id="search" placeholder="id, kind or key" size="18"> <button>Search</button></form>
      <span id="store-name" class="muted"></span>
      <span id="live" class="muted">connecting…</span>
      <label class="muted">token <input id="token" type="password" size="10"></label>
    </header>
    <div id="store-error" class="banner" hidden></div>
    <main id="view">Loading…</main>
    <script>
    "use strict";
    const state = { overview: null };
    const view = document.getElementById("view");
    const esc = (value) => String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
    const opLink = (id) => `<a class="op-link" href="#/operation/${esc(id)}">${esc(id)}</a>`;
    const states = ["waiting", "ready", "running", "succeeded", "failed", "cancelled"];
    const queueHash = (name, extra) => esc(`#/queue?name=${encodeURIComponent(name)}` + (extra || ""));
    const queueAPI = (what, name) => `/api/queue${what}?name=${encodeURIComponent(name)}`;
    const time = (value) => value ? new Date(value).toLocaleTimeString() : "";
    async function getJSON(path) {
      const response = await fetch(path, { cache: "no-store" });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || response.statusText);
      return body;
    }
    async function act(path) {
      const token = document.getElementById("token").value;
      const headers = token ? { "Authorization": "Bearer " + token } : {};
      const response = await fetch(path, { method: "POST", headers });
      const body = await response.json();
      // A done action shows its effect: the view is read again, then told what was done
      // (the new view's result line, not the one the re-render replaced).
      if (response.ok) await route();
      const out = document.getElementById("action-result");
      if (!out) return;
      out.textContent = response.ok ? body.done : "refused: " + body.error;
      out.className = response.ok ? "done" : "error";
    }
    function sparkline(values) {
      const max = Math.max(1, ...values), w = 4;
      const bars = values.map((v, i) => `<rect x="${i * w}" y="${20 - (v / max) * 20}" width="${w - 1}" height="${(v / max) * 20}" fill="#175cd3"></rect>`).join("");
      return `<svg class="sparkline" width="${values.length * w}" height="20">${bars}</svg>`;
    }
    function showStore(overview) {
      const store = overview && overview.store;
      const banner = document.getElementById("store-error");
      banner.hidden = !(store && store.error);
      banner.textContent = store && store.error ? store.error : "";
      document.getElementById("store-name").textContent = store ? store.name : "in-process only";
    }
    function queuesView(overview) {
      const store = overview.store;
      if (!store) return `<p>No store: see <a href="#/local">in-process queues</a>.</p>`;
      const rows = store.queues.map((q) => `<tr class="queue-row" data-queue="${esc(q.name)}">
        <td><a href="${queueHash(q.name)}">${esc(q.name)}</a></td>
        <td class="num c-waiting">${q.counts.waiting}</td><td class="num c-ready">${q.counts.ready}</td><td class="num c-running">${q.counts.running}</td>
        <td class="num c-succeeded">${q.counts.succeeded}</td><td class="num c-failed">${q.counts.failed}</td><td class="num c-cancelled">${q.counts.cancelled}</td>
        <td class="num">${q.limit ?? "none"}</td><td>${q.suspended ? "suspended" : ""}</td><td>${sparkline(q.finishedPerMinute)}</td></tr>`).join("");
      return `<h2>Queues</h2><table id="queues"><tr><th>queue</th><th>waiting</th><th>ready</th><th>running</th>
        <th>succeeded</th><th>failed</th><th>cancelled</th><th>limit</th><th></th><th>finished per minute</th></tr>${rows}</table>
        <p class="muted">Finished counts cover the last ${store.windowMinutes} minutes.</p>
        <h3>Workers</h3>${workersTable(store.workers)}<h3>Recent failures</h3>${failuresTable(store.failures)}`;
    }
    function workersTable(workers) {
      if (!workers.length) return `<p id="workers" class="muted">No worker sent a heartbeat lately.</p>`;
      return `<table id="workers"><tr><th>worker</th><th>queues</th><th>kinds</th><th>running</th><th>last heartbeat</th></tr>` +
        workers.map((w) => `<tr class="worker-row"><td>${esc(w.name)}</td><td>${esc(w.queues.join(", "))}</td><td>${esc(w.kinds.join(", "))}</td>
        <td class="num">${w.running}</td><td>${time(w.lastHeartbeat)}</td></tr>`).join("") + `</table>`;
    }
    function failuresTable(groups) {
      if (!groups.length) return `<p id="failures" class="muted">No failures in the window.</p>`;
      return `<table id="failures"><tr><th>queue</th><th>kind</th><th>error</th><th>count</th><th>last</th><th>latest</th></tr>` +
        groups.map((g) => `<tr class="failure-row"><td>${esc(g.queue)}</td><td>${esc(g.kind)}</td><td class="error">${esc(g.error)}</td>
        <td class="num">${g.count}</td><td>${time(g.lastFailedAt)}</td><td>${opLink(g.latest)}</td></tr>`).join("") + `</table>`;
    }
    function operationsTable(operations) {
      return `<table id="operations"><tr><th>id</th><th>kind</th><th>state</th><th>key</th><th>attempt</th><th>finished</th><th>error</th></tr>` +
        operations.map((o) => `<tr class="operation-row"><td>${opLink(o.id)}</td><td>${esc(o.kind)}</td><td class="state-${o.state}">${o.state}</td>
        <td>${esc(o.key)}</td><td class="num">${o.attempt}/${o.maximumAttempts}</td><td>${time(o.finishedAt)}</td><td class="error">${esc(o.error)}</td></tr>`).join("") + `</table>`;
    }
    async function queueView(params) {
      const name = params.get("name") || "";
      const stateName = states.includes(params.get("state")) ? params.get("state") : "ready";
      const after = /^[0-9]+$/.test(params.get("after") || "") ? params.get("after") : null;
      const page = await getJSON(queueAPI("", name) + `&state=${stateName}` + (after ? `&after=${after}` : ""));
      const q = state.overview && state.overview.store && state.overview.store.queues.find((x) => x.name === name);
      const tabs = states.map((s) =>
        `<a class="${s === stateName ? "current" : ""}" href="${queueHash(name, "&state=" + s)}">${s}${q ? " (" + q.counts[s] + ")" : ""}</a>`).join("");
      const next = page.next ? `<a id="next-page" href="${queueHash(name, "&state=" + stateName + "&after=" + Number(page.next))}">next page</a>` : "";
      const actions = `<p><button id="suspend" data-action="${esc(queueAPI("/suspend", name))}">Suspend</button>
        <button id="resume" data-action="${esc(queueAPI("/resume", name))}">Resume</button>
        limit <input id="limit" size="4"> <button id="set-limit" data-action="${esc(queueAPI("/limit", name))}" data-with-limit="1">Set</button>
        <span id="action-result"></span></p>`;
      return `<h2>Queue ${esc(name)}${q && q.suspended ? " (suspended)" : ""}</h2>${actions}<p class="tabs">${tabs}</p>${operationsTable(page.operations)}${next}`;
    }
    function graph(op) {
      const rowHeight = 26, width = 640;
      const rows = Math.max(op.dependencies.length, op.dependents.length, 1);
      const height = rows * rowHeight + 10;
      const node = (o, x, y, cls) => `<a class="graph-node ${cls}" href="#/operation/${o.id}"><rect x="${x}" y="${y}" width="180" height="20" rx="4" fill="#fff" stroke="#8a94a6"></rect>
        <text x="${x + 6}" y="${y + 14}" class="state-${o.state}">${o.id} ${esc(o.kind)} · ${o.state}</text></a>`;
      const cy = height / 2 - 10;
      let out = `<svg id="graph" width="${width}" height="${height}">`;
      op.dependencies.forEach((d, i) => { const y = 5 + i * rowHeight; out += `<line x1="190" y1="${y + 10}" x2="230" y2="${cy + 10}" stroke="#8a94a6"></line>` + node(d, 10, y, "dependency"); });
      op.dependents.forEach((d, i) => { const y = 5 + i * rowHeight; out += `<line x1="410" y1="${cy + 10}" x2="450" y2="${y + 10}" stroke="#8a94a6"></line>` + node(d, 450, y, "dependent"); });
      out += `<rect x="230" y="${cy}" width="180" height="20" rx="4" fill="#e8f0fe" stroke="#175cd3"></rect><text x="236" y="${cy + 14}">${op.id} ${esc(op.kind)}</text></svg>`;
      return out;
    }
    // What the store accepts: a cancel of an unfinished operation, a retry of a failed or cancelled one.
    const unfinished = ["waiting", "ready", "running"];
    const retryable = ["failed", "cancelled"];
    async function operationView(id) {
      const op = await getJSON(`/api/operations/${encodeURIComponent(id)}`);
      const attempts = op.attempts.map((a) => `<tr class="attempt-row"><td class="num">${a.number}</td><td>${esc(a.worker)}</td><td>${time(a.start)}</td>
        <td>${time(a.end)}</td><td class="error attempt-error">${esc(a.error)}</td></tr>`).join("");
      const pretty = (text, value) => esc(value !== null && value !== undefined ? JSON.stringify(value, null, 2) : (text ?? ""));
      return `<h2>Operation ${op.id} <span class="state-${op.state}" id="op-state">${op.state}</span></h2>
        <p>${unfinished.includes(op.state) ? `<button id="cancel" data-action="/api/operations/${Number(op.id)}/cancel">Cancel</button>` : ""}
        ${retryable.includes(op.state) ? `<button id="retry" data-action="/api/operations/${Number(op.id)}/retry">Retry</button>` : ""}<span id="action-result"></span></p>
        <table><tr><th>queue</th><td><a href="${queueHash(op.queue)}">${esc(op.queue)}</a></td></tr><tr><th>kind</th><td>${esc(op.kind)}</td></tr>
        <tr><th>key</th><td>${esc(op.key)}</td></tr><tr><th>attempt</th><td>${op.attempt} of ${op.maximumAttempts}</td></tr>
        <tr><th>why</th><td id="wait-description">${esc(op.waitDescription)}</td></tr><tr><th>worker</th><td>${esc(op.worker)}</td></tr>
        <tr><th>error</th><td class="error" id="op-error">${esc(op.error ?? op.cancelReason)}</td></tr></table>
        <h3>Dependencies and dependents</h3>${graph(op)}
        <h3>Attempts</h3><table id="attempts"><tr><th>#</th><th>worker</th><th>start</th><th>end</th><th>error</th></tr>${attempts}</table>
        <h3>Input</h3><pre id="input">${pretty(op.input, op.inputJSON)}</pre><h3>Output</h3><pre id="output">${pretty(op.output, op.outputJSON)}</pre>`;
    }
    async function searchView(params) {
      const q = params.get("q") || "";
      const result = await getJSON(`/api/search?q=${encodeURIComponent(q)}`);
      return `<h2>Search: ${esc(q)}</h2>` + (result.operations.length ? operationsTable(result.operations) : `<p id="no-results">Nothing matches.</p>`);
    }
    function timeline(entries) {
      if (!entries.length) return `<p class="muted">No operation yet.</p>`;
      const end = Math.max(...entries.map((e) => e.finished ?? e.started ?? e.enqueued), 0.001);
      const start = Math.min(...entries.map((e) => e.enqueued));
      const span = Math.max(end - start, 0.001), width = 640, lane = 14;
      const lanes = Math.max(1, ...entries.map((e) => (e.slot ?? -1) + 1));
      let out = `<svg class="timeline" width="${width + 10}" height="${(lanes + 1) * lane + 6}">`;
      for (const e of entries) {
        if (e.started === null || e.started === undefined) continue;
        const x = 5 + ((e.started - start) / span) * width;
        const w = Math.max(2, (((e.finished ?? end) - e.started) / span) * width);
        const color = e.finished === null || e.finished === undefined ? "#175cd3" : e.cancelled ? "#98a2b3" : "#12b76a";
        out += `<rect class="bar" x="${x}" y="${3 + (e.slot ?? 0) * lane}" width="${w}" height="${lane - 3}" fill="${color}"><title>${esc(e.name)}</title></rect>`;
      }
      const waiting = entries.filter((e) => e.started === null || e.started === undefined).length;
      return out + `<text x="5" y="${(lanes + 1) * lane}">${waiting} waiting · ${entries.length} shown over ${(span * 1000).toFixed(1)} ms</text></svg>`;
    }
    function localView(overview) {
      if (!overview.local.length) return `<p>No in-process queue is watched.</p>`;
      return overview.local.map((q) => `<section class="local-queue" data-queue="${esc(q.name)}"><h2>${esc(q.name)}</h2>
        <p>${q.operationCount} in the queue · limit ${q.limit < 0 ? "default" : q.limit}${q.suspended ? " · suspended" : ""}</p>
        ${timeline(q.timeline)}<pre class="wait-description">${esc(q.waitDescription.join("\\n"))}</pre>
        ${q.stalls.length ? `<h3>Stall reports</h3><ul>${q.stalls.map((s) => `<li class="stall error">${esc(s)}</li>`).join("")}</ul>` : ""}</section>`).join("");
    }
    async function route() {
      const hash = location.hash.slice(1) || "/";
      const [path, query] = hash.split("?");
      const params = new URLSearchParams(query || "");
      const parts = path.split("/").filter(Boolean);
      try {
        if (!state.overview) { state.overview = await getJSON("/api/overview"); showStore(state.overview); }
        let html;
        if (parts[0] === "queue") html = await queueView(params);
        else if (parts[0] === "operation") html = await operationView(parts[1] || "");
        else if (parts[0] === "failures") html = `<h2>Failures</h2>` + (state.overview.store ? failuresTable(state.overview.store.failures) : "");
        else if (parts[0] === "workers") html = `<h2>Workers</h2>` + (state.overview.store ? workersTable(state.overview.store.workers) : "");
        else if (parts[0] === "search") html = await searchView(params);
        else if (parts[0] === "local") html = localView(state.overview);
        else html = queuesView(state.overview);
        view.innerHTML = html;
        view.dataset.route = parts[0] || "queues";
        view.dataset.renders = String(Number(view.dataset.renders || 0) + 1);
      } catch (error) {
        view.innerHTML = `<p class="error" id="page-error">${esc(error.message)}</p>`;
        view.dataset.route = "error";
      }
    }
    const live = ["queues", "failures", "workers", "local"];
    function connect() {
      const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/live`);
      socket.onopen = () => { document.getElementById("live").textContent = "live"; };
      socket.onmessage = (message) => {
        state.overview = JSON.parse(message.data);
        showStore(state.overview);
        document.getElementById("live").textContent = "live · refresh " + state.overview.refresh;
        document.body.dataset.refresh = state.overview.refresh;
        if (live.includes(view.dataset.route)) route();
      };
      socket.onclose = () => { document.getElementById("live").textContent = "disconnected, retrying"; setTimeout(connect, 2000); };
    }
    // Actions: buttons carry their route in data-action (never in script text).
    view.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-action]");
      if (!button) return;
      let path = button.dataset.action;
      if (button.dataset.withLimit) path += "&value=" + encodeURIComponent(document.getElementById("limit").value || "none");
      act(path);
    });
    document.getElementById("search-form").onsubmit = (event) => {
      event.preventDefault();
      location.hash = "#/search?q=" + encodeURIComponent(document.getElementById("search").value);
    };
    window.addEventListener("hashchange", route);
    route().then(connect);
    </script>
    </body>
    </html>
    """
}
#endif

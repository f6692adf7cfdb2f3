/**
 * The operator's status page (`GET /`): one self-contained HTML document, no build step, no CDN.
 * It reads `GET /status` every second and renders what applies to the host's placement mode
 * (`placement.mode` of `/status`):
 *
 * - static: this host, its slot and lease time left, the cluster's leader records;
 * - leases: this host in the lease cluster (address, incarnation, partitions served and
 *   deploying), the active placement driver, and the lease table (every partition's holder,
 *   expiration, time left, term, fencing token). No slot sections: a leases host holds no slot.
 *
 * Then the extra sections the host adds (partitions served, flush lag). The sections of the other
 * mode are removed from the document at the first answer. Elements carry `data-testid`s, which
 * the browser test asserts on.
 */
export const STATUS_PAGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vvm-host status</title>
<style>
	:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
	body { margin: 1.5rem; max-width: 60rem; }
	h1 { font-size: 1.3rem; margin: 0 0 .2rem; }
	.sub { color: #777; margin-bottom: 1rem; }
	section { border: 1px solid #8884; border-radius: .5rem; padding: .8rem 1rem; margin-bottom: 1rem; }
	h2 { font-size: 1rem; margin: 0 0 .5rem; }
	table { border-collapse: collapse; width: 100%; }
	td, th { text-align: left; padding: .25rem .6rem .25rem 0; border-bottom: 1px solid #8882; }
	.badge { display: inline-block; padding: .1rem .5rem; border-radius: 1rem; font-weight: 600; }
	.leader { background: #2a2; color: #fff; } .follower { background: #888; color: #fff; }
	.problem { background: #c33; color: #fff; }
	.bar { height: .5rem; background: #8883; border-radius: .25rem; overflow: hidden; margin-top: .3rem; }
	.bar > div { height: 100%; background: #2a2; }
	.error { color: #c33; }
	code { font-size: .9em; }
	.muted { color: #777; }
	tr.self td { background: #2a21; }
	td .bar { width: 4rem; margin-top: .15rem; }
	table.leases td:not(:last-child), table.leases th { white-space: nowrap; }
	.role { margin-left: .4rem; font-size: .8rem; vertical-align: middle; }
</style>
</head>
<body>
<h1>vvm-host <span id="phase" data-testid="phase" class="badge follower">…</span></h1>
<div class="sub">
	placement <span data-testid="placement-mode">…</span> ·
	<span data-testid="address">…</span> · pid <span data-testid="pid">…</span> ·
	version <span data-testid="version">…</span> · updated <span data-testid="updated">never</span>
	<span data-testid="fetch-error" class="error"></span>
</div>
<div data-testid="static-view" hidden>
<section data-testid="section-this-host">
	<h2>This host</h2>
	<table><tbody data-testid="leadership"></tbody></table>
	<div class="bar"><div data-testid="lease-bar" style="width:0%"></div></div>
</section>
<section data-testid="section-leader-records">
	<h2>Leader records of the cluster</h2>
	<table>
		<thead><tr><th>slot</th><th>holder</th><th title="the leader record's TTL on the storage; the leader's lease ends before it (at 0.8 of the leadership after the last renewal was sent), so its 'lease time left' is shorter">record expires in</th></tr></thead>
		<tbody data-testid="slots"></tbody>
	</table>
</section>
</div>
<div data-testid="leases-view" hidden>
<section data-testid="section-lease-host">
	<h2>This host in the lease cluster</h2>
	<table><tbody data-testid="lease-host"></tbody></table>
</section>
<section data-testid="section-placement-driver">
	<h2>Placement driver <span data-testid="driver-role" class="badge follower role">…</span></h2>
	<table><tbody data-testid="placement-driver"></tbody></table>
</section>
<section data-testid="section-lease-table">
	<h2 data-testid="lease-table-title">Lease cluster</h2>
	<table class="leases">
		<thead><tr><th>partition</th><th>holder</th><th>expires at</th><th>time left</th><th>term</th>
			<th>fencing token</th><th>accepted</th><th>state</th></tr></thead>
		<tbody data-testid="lease-table"></tbody>
	</table>
</section>
</div>
<div id="extra"></div>
<script>
"use strict";
const $ = (id) => document.querySelector('[data-testid="' + id + '"]');
const text = (v) => (v === null || v === undefined ? "—" : String(v));
const row = (cells) => {
	const tr = document.createElement("tr");
	for (const c of cells) { const td = document.createElement("td"); td.textContent = text(c); tr.append(td); }
	return tr;
};
const testRow = (id, cells) => { const tr = row(cells); tr.dataset.testid = id; return tr; };
const list = (xs) => (xs.length === 0 ? "none" : xs.join(", "));
const secs = (ms) => (ms / 1000).toFixed(1) + " s";
// The mode of the first answer; the other mode's sections leave the document. A host restarted
// in the other mode on the same port gets a fresh page.
let mode;
function chooseMode(m) {
	if (mode === m) return true;
	if (mode !== undefined) { location.reload(); return false; }
	mode = m;
	document.body.dataset.placement = m;
	$("placement-mode").textContent = m;
	$(m === "leases" ? "leases-view" : "static-view").hidden = false;
	$(m === "leases" ? "static-view" : "leases-view").remove();
	return true;
}
function renderStatic(s) {
	const phase = $("phase");
	phase.textContent = s.leader ? "leader of slot " + s.leadership.slot : s.phase;
	phase.className = "badge " + (s.problem ? "problem" : s.leader ? "leader" : "follower");
	const l = s.leadership;
	const rows = l
		? [["slot", l.slot], ["holder", l.holder], ["lease time left", (l.timeLeftMs / 1000).toFixed(1) + " s"],
			["renewals", l.renewals], ["fencing token", l.fencingToken], ["lease valid", l.leaseValid]]
		: [["slot", "none: waiting"], ["holder", null]];
	$("leadership").replaceChildren(...rows.map(row));
	const pct = l ? Math.max(0, Math.min(100, (100 * l.timeLeftMs) / l.leaseMs)) : 0;
	$("lease-bar").style.width = pct.toFixed(0) + "%";
	$("slots").replaceChildren(...s.slots.map((x) => {
		const tr = row([x.slot, x.holderError ? "error: " + x.holderError : (x.holder ?? "free"),
			x.expiresInSeconds === undefined ? null : x.expiresInSeconds + " s"]);
		tr.dataset.slot = x.slot;
		return tr;
	}));
}
function renderLeases(s, p) {
	const phase = $("phase");
	const joined = p.table !== undefined;
	phase.textContent = joined && s.phase === "serving"
		? "serving " + p.served.length + " of " + p.partitions + " partitions" : s.phase;
	phase.className = "badge " + (s.phase === "failed" || s.problem ? "problem"
		: s.phase === "serving" ? "leader" : "follower");
	const role = $("driver-role");
	if (!joined) {
		$("lease-host").replaceChildren(testRow("lease-host-placement", ["placement", "leases"]),
			row(["address", s.address]), row(["state", "joining the lease cluster"]));
		$("placement-driver").replaceChildren(testRow("driver-active", ["active placement driver", "none known yet"]));
		role.textContent = "…"; role.className = "badge follower role";
		$("lease-table").replaceChildren();
		return;
	}
	$("lease-host").replaceChildren(
		testRow("lease-host-placement", ["placement", "leases: lease interval " + secs(p.leaseIntervalMs)
			+ ", clock-skew bound " + p.maxClockSkewMs + " ms"]),
		testRow("lease-host-address", ["address", p.address]),
		testRow("lease-host-incarnation", ["incarnation", p.incarnation]),
		testRow("lease-host-served", ["serving", list(p.served) + " (" + p.served.length + " of "
			+ p.partitions + " partitions)"]),
		testRow("lease-host-deploying", ["deploying", list(p.deploying)]));
	const d = p.placementDriver, m = p.metrics;
	role.textContent = d.self ? "this host" : "standby";
	role.className = "badge role " + (d.self ? "leader" : "follower");
	const rows = [testRow("driver-active", ["active placement driver", d.self ? "this host (" + p.address + ")"
		: d.address === null ? "none known yet" : d.address + (d.incarnation ? " · incarnation " + d.incarnation : "")]),
		testRow("driver-self", ["this host", d.self ? "active: grants, prolongs and moves the leases"
			: "standby candidate: takes over if the active driver's leadership lapses"])];
	if (d.self) {
		rows.push(row(["ticks", m.ticks + (m.lastTickMs === undefined ? "" : " · last " + m.lastTickMs.toFixed(1) + " ms")]),
			row(["granted / prolonged / expired", m.granted + " / " + m.prolonged + " / " + m.expired]),
			row(["batch conflicts", m.conflicts]));
	}
	rows.push(row(["lease table read", p.table.updatedAt === undefined ? "never"
		: secs(Math.max(0, p.now - p.table.updatedAt)) + " ago (" + p.table.shards + " shard" + (p.table.shards === 1 ? "" : "s") + ")"]),
		row(["storage errors", m.storageErrors]),
		row(["loop runs over their interval", m.slowRuns
			+ (m.slowRuns > 0 ? " (storage too slow for the lease interval: see the log's leases.slow-loop)" : "")]));
	$("placement-driver").replaceChildren(...rows);
	const byGroup = new Map(p.table.leases.map((l) => [l.group, l]));
	const served = new Set(p.served), deploying = new Set(p.deploying);
	const holders = new Set();
	const trs = [];
	for (let g = 0; g < p.partitions; g++) {
		const l = byGroup.get(g);
		if (l === undefined) {
			const tr = row([g, "no lease yet", null, null, null, null, null, "not granted"]);
			tr.dataset.partition = g;
			trs.push(tr);
			continue;
		}
		const self = l.holder.incarnation === p.incarnation;
		const left = l.expirationTime - p.now;
		if (left > 0) holders.add(l.holder.address + "/" + l.holder.incarnation);
		const state = served.has(g) ? "served here" : deploying.has(g) ? "deploying here"
			: left <= 0 ? "expired" : self ? "held here, not served" : "held elsewhere";
		const tr = row([g, l.holder.address + (self ? " (this host)" : ""),
			new Date(l.expirationTime).toLocaleTimeString([], { hour12: false }), left > 0 ? secs(left) : "expired", l.term,
			l.startTime, l.accepted ? "yes" : "not yet", state + (left > 0 && !l.prolongable ? " · moving" : "")]);
		tr.children[1].title = "incarnation " + l.holder.incarnation;
		const bar = document.createElement("div"); bar.className = "bar";
		const fill = document.createElement("div");
		fill.style.width = Math.max(0, Math.min(100, (100 * left) / p.leaseIntervalMs)).toFixed(0) + "%";
		bar.append(fill); tr.children[3].append(bar);
		tr.dataset.partition = g;
		if (self) tr.className = "self";
		trs.push(tr);
	}
	$("lease-table").replaceChildren(...trs);
	$("lease-table-title").textContent = "Lease cluster (" + p.partitions + " partitions, "
		+ holders.size + " holding host" + (holders.size === 1 ? "" : "s") + ")";
}
function render(s) {
	const placement = s.placement ?? { mode: "static" };
	if (!chooseMode(placement.mode)) return;
	$("address").textContent = s.address;
	$("pid").textContent = s.pid;
	$("version").textContent = s.version;
	$("updated").textContent = new Date().toLocaleTimeString();
	$("fetch-error").textContent = s.problem ? " · problem: " + s.problem : "";
	if (mode === "leases") renderLeases(s, placement);
	else renderStatic(s);
	const extra = document.getElementById("extra");
	const sections = s.sections ?? [];
	extra.replaceChildren(...sections.map((sec) => {
		const el = document.createElement("section");
		el.dataset.testid = "section-" + sec.id;
		const h = document.createElement("h2"); h.textContent = sec.title; el.append(h);
		const table = document.createElement("table");
		const head = document.createElement("thead"); head.append(row(sec.columns));
		const body = document.createElement("tbody"); body.append(...sec.rows.map(row));
		table.append(head, body); el.append(table);
		return el;
	}));
}
async function refresh() {
	try {
		const res = await fetch("/status", { cache: "no-store" });
		render(await res.json());
	} catch (e) {
		$("fetch-error").textContent = " · cannot reach the host: " + e.message;
	}
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
`;

/**
 * The operator's status page (`GET /`): one self-contained HTML document, no build step, no CDN.
 * It reads `GET /status` every second and renders this host, its slot and lease time left, the
 * cluster's leader records, and any extra sections the host adds (partitions, flush lag).
 * Elements carry `data-testid`s, which the browser test asserts on.
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
</style>
</head>
<body>
<h1>vvm-host <span id="phase" data-testid="phase" class="badge follower">…</span></h1>
<div class="sub">
	<span data-testid="address">…</span> · pid <span data-testid="pid">…</span> ·
	version <span data-testid="version">…</span> · updated <span data-testid="updated">never</span>
	<span data-testid="fetch-error" class="error"></span>
</div>
<section>
	<h2>This host</h2>
	<table><tbody data-testid="leadership"></tbody></table>
	<div class="bar"><div data-testid="lease-bar" style="width:0%"></div></div>
</section>
<section>
	<h2>Leader records of the cluster</h2>
	<table>
		<thead><tr><th>slot</th><th>holder</th><th>expires in</th></tr></thead>
		<tbody data-testid="slots"></tbody>
	</table>
</section>
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
function render(s) {
	const phase = $("phase");
	phase.textContent = s.leader ? "leader of slot " + s.leadership.slot : s.phase;
	phase.className = "badge " + (s.problem ? "problem" : s.leader ? "leader" : "follower");
	$("address").textContent = s.address;
	$("pid").textContent = s.pid;
	$("version").textContent = s.version;
	$("updated").textContent = new Date().toLocaleTimeString();
	$("fetch-error").textContent = s.problem ? " · problem: " + s.problem : "";
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
	const extra = document.getElementById("extra");
	extra.replaceChildren(...(s.sections ?? []).map((sec) => {
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

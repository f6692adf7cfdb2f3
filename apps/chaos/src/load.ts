// The load generator: POST /work to every host, one request at a time per host, continuously.
// Every accepted unit of work (200) is written to answers.jsonl with the host's own fields and
// this side's send and receive times on the same monotonic clock.
import type { ChaosHost } from "./chaos-host.ts";
import type { AnswerRecord } from "./checker.ts";
import type { LineFile } from "./jsonl-file.ts";
import { monoMs, sleep } from "./mono.ts";

/** One accepted unit of work as the load generator received it (the checker's answer record). */
interface WorkAnswer extends AnswerRecord {
	readonly pid: number;
}

/** Counters of a running load generator. */
export interface LoadStats {
	accepted: number;
	refused: number;
	failed: number;
}

/** A running load generator. */
export interface Load {
	readonly stats: LoadStats;
	stop(): Promise<void>;
}

/** How long one request may take; a host stopped longer answers after it resumes (or not at all). */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Starts one request loop per host, pausing `intervalMs` between requests.
 *
 * @example
 * ```ts
 * const load = startLoad(hosts, openLineFile("answers.jsonl"), 20);
 * await load.stop();
 * ```
 */
export function startLoad(
	hosts: readonly ChaosHost[],
	answers: LineFile,
	intervalMs: number,
): Load {
	const stats: LoadStats = { accepted: 0, refused: 0, failed: 0 };
	const stopping = new AbortController();
	const loop = async (host: ChaosHost): Promise<void> => {
		while (!stopping.signal.aborted) {
			const inc = host.current;
			if (inc?.port === undefined) {
				await sleep(25, stopping.signal);
				continue;
			}
			const sent = monoMs();
			try {
				const res = await fetch(`http://127.0.0.1:${inc.port}/work`, {
					method: "POST",
					signal: AbortSignal.any([AbortSignal.timeout(REQUEST_TIMEOUT_MS), stopping.signal]),
				});
				const text = await res.text();
				const received = monoMs();
				if (res.status === 200) {
					stats.accepted++;
					const answer: WorkAnswer = {
						host: host.name,
						pid: inc.pid,
						sent,
						received,
						// The host's answer: { done, at, mono, slot, holder, incarnation, fencingToken, leaseLeftMs }.
						body: JSON.parse(text) as WorkAnswer["body"],
					};
					answers.write(JSON.stringify(answer));
				} else {
					stats.refused++;
				}
			} catch {
				stats.failed++; // the process died or is restarting; the next loop finds the new one
				await sleep(25, stopping.signal);
			}
			if (intervalMs > 0) await sleep(intervalMs, stopping.signal);
		}
	};
	const loops = hosts.map((h) => loop(h));
	return {
		stats,
		async stop() {
			stopping.abort();
			await Promise.allSettled(loops);
		},
	};
}

import type { Logger } from "@vvm/log";
import type { LeadershipEvent } from "./events.ts";

/**
 * Logs one leadership event: acquisitions and releases at `info`, renewals and refused
 * acquisitions at `debug`, failed renewal attempts at `warn`, losses and failed releases at
 * `error`. Fields: the event as it is (`event` = its type), keys and values as strings.
 */
export function logLeadershipEvent<K, V>(log: Logger, event: LeadershipEvent<K, V>): void {
	const { type, key, value, ...rest } = event;
	const fields = { event: type, key: String(key), value: String(value), ...rest };
	switch (type) {
		case "acquired":
			log.info(fields, `acquired leadership of ${String(key)}`);
			return;
		case "released":
			log.info(fields, `released leadership of ${String(key)}`);
			return;
		case "renewed":
			log.debug(fields, `renewed leadership of ${String(key)}`);
			return;
		case "acquire-failed":
			log.debug(fields, `leadership of ${String(key)} not acquired (${event.reason})`);
			return;
		case "renewal-failed":
			log.warn(fields, `renewal of ${String(key)} failed (attempt ${event.attempt})`);
			return;
		case "lost":
			log.error(fields, `leadership of ${String(key)} lost (${event.reason})`);
			return;
		case "release-failed":
			log.error(
				fields,
				`releasing leadership of ${String(key)} failed; the record expires by its TTL`,
			);
			return;
	}
}

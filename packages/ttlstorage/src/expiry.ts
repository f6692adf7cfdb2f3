/** No expiry (a record written with `ttlSeconds = 0`). */
export const NO_EXPIRY = 0;

/** Expiry time in ms for a record written at `nowMs`; {@link NO_EXPIRY} when `ttlSeconds` is 0. */
export function expireAtMs(nowMs: number, ttlSeconds: number): number {
	return ttlSeconds === 0 ? NO_EXPIRY : nowMs + ttlSeconds * 1000;
}

/** The one expiry rule: expired when `now >= expireAt`. */
export function isExpired(expireAt: number, nowMs: number): boolean {
	return expireAt !== NO_EXPIRY && nowMs >= expireAt;
}

/** Remaining TTL in whole seconds, rounded up; 0 for no expiry; `undefined` when expired. */
export function remainingSeconds(expireAt: number, nowMs: number): number | undefined {
	if (expireAt === NO_EXPIRY) return 0;
	if (isExpired(expireAt, nowMs)) return undefined;
	return Math.ceil((expireAt - nowMs) / 1000);
}

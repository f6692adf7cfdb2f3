/** Whether a TCP connection to host:port succeeds within the timeout. */
export declare function isReachable(
	host: string,
	port: number,
	timeoutMs?: number,
): Promise<boolean>;
/**
 * Resolves to `false` when the server is reachable, or to the reason to skip. Throws instead of
 * skipping in CI (`CI=true`) or when `enabledVar` is set.
 */
export declare function requireServer(server: {
	name: string;
	host: string;
	port: number;
	enabledVar: string;
	startHint: string;
}): Promise<false | string>;
/** Host and port of a `host:port` or URL endpoint. */
export declare function hostPort(
	endpoint: string,
	defaultPort: number,
): { host: string; port: number };

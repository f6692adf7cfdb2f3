// What the HTTP server and the modules that add to it share: the shapes only, so the modules
// import this file and the server imports this file, never each other.

/** A JSON answer of a route. */
export interface JsonReply {
	readonly status: number;
	readonly body: unknown;
	readonly headers?: Readonly<Record<string, string>>;
}

/** Extra routes of the host: a reply, or `undefined` when the request is not theirs. */
export type ExtraRoutes = (method: string, url: URL) => JsonReply | undefined;

/** One table of the status page beyond the built-in ones. */
export interface StatusSection {
	readonly id: string;
	readonly title: string;
	readonly columns: readonly string[];
	readonly rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>;
}

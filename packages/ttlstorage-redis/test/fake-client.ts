// A stand-in for an ioredis client in the tests without a server: it records what would be sent
// and answers from a script of replies (or errors).
import type { RedisArg, RedisClient } from "../src/index.ts";
import { REDIS_CLIENT_OPTIONS } from "../src/index.ts";

export interface FakeClient extends RedisClient {
	status: string;
	/** Every command sent, in order: its name and arguments. */
	readonly sent: { command: string; args: RedisArg[] }[];
	/** Replies to give, in order; an Error rejects. Empty: resolves to `null`. */
	readonly replies: unknown[];
}

/** A ready fake client with the required options (plus `options`). */
export function fakeClient(options: Record<string, unknown> = {}): FakeClient {
	const sent: FakeClient["sent"] = [];
	const replies: unknown[] = [];
	return {
		status: "ready",
		options: { ...REDIS_CLIENT_OPTIONS, ...options },
		sent,
		replies,
		async callBuffer(command: string, ...args: RedisArg[]) {
			sent.push({ command, args });
			const reply = replies.shift() ?? null;
			if (reply instanceof Error) throw reply;
			return reply;
		},
	};
}

/** An error as ioredis builds one for a server's error reply. */
export function replyError(message: string): Error {
	const error = new Error(message);
	error.name = "ReplyError";
	return error;
}

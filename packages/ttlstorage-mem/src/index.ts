export {
	createMemTTLStorage,
	type MemTTLStorage,
	type MemTTLStorageOptions,
} from "./mem-ttl-storage.ts";

export {
	type AnyAbstractLevel,
	createLevelTTLStorage,
	type LevelTTLStorage,
	type LevelTTLStorageOptions,
} from "./level-ttl-storage.ts";

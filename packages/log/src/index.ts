export { type Logger, type LogMethod, libraryLogger, silentLogger } from "./logger.ts";

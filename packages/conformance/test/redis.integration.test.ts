import { runMatrix } from "../src/drivers.ts";

await runMatrix("redis");

import { runMatrix } from "../src/drivers.ts";
import { runPipelined } from "../src/pipelined.ts";

await runMatrix("redis");
// cp's suites again with pipelineDepth 8 over Redis on its server clock (src/pipelined.ts).
await runPipelined("redis");

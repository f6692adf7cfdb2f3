import { runMatrix } from "../src/drivers.ts";
import { runPipelined } from "../src/pipelined.ts";

await runMatrix("level");
// cp's suites again with pipelineDepth 8 over classic-level on disk (src/pipelined.ts).
await runPipelined("level");

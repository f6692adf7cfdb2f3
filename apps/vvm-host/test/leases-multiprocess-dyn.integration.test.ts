// Three host processes with --placement leases on DynamoDB Local (test/support/leases-multiprocess.ts):
// no partition served by two hosts at once under SIGKILL and SIGSTOP, and how long they stayed dark.
import { leasesAcrossProcesses } from "./support/leases-multiprocess.ts";

await leasesAcrossProcesses("dyn");

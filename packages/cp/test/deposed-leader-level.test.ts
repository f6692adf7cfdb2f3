import { deposedLeaderSuite } from "../src/testing/index.ts";
import { levelOnDisk } from "./level-on-disk.ts";

deposedLeaderSuite("deposed leader over ttlstorage-level (classic-level on disk)", levelOnDisk);

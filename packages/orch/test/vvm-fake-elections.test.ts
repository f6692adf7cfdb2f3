import { createFakeElections, FakeKiller, MapTTLStorage } from "./fakes.ts";
import { newClock, vvmCases } from "./vvm-cases.ts";

vvmCases("fake elections", () => {
	const clock = newClock();
	return {
		clock,
		storage: new MapTTLStorage(clock),
		killer: new FakeKiller(),
		createElections: createFakeElections,
	};
});

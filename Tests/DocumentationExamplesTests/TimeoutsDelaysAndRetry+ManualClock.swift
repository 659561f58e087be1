// Sources/OperationsComposition/OperationsComposition.docc/TimeoutsDelaysAndRetry.md: a
// test on a manual clock.

import OperationsTestSupport
import Operations
import OperationsComposition
import Testing

func timeoutsDelaysAndRetryManualClock(queue: OperationQueue, longWork: @escaping @Sendable () async throws -> Void) async {
let clock = ManualClock()
let operation = AsyncBlockOperation { try await longWork() }
operation.timeout(after: .seconds(5), clock: clock)
queue.addOperation(operation)
await clock.waitForSleepers(1)        // the timer is armed
clock.advance(by: .seconds(5))
#expect(await operation.outcome(within: .seconds(10))?.error is TimeoutError)
}

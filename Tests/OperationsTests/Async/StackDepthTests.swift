import Operations
import OperationsComposition
import OperationsTestSupport
import Testing
import TestTraits

/// Thousands of async operations in a row: starting, finishing, cancelling or releasing one
/// must not take a stack frame for each one before it. Each runs as an exit test, where a
/// stack overflow ends only the child.
@Suite("Async operations by the thousand: no start, finish or release recurses", .timeLimit(.minutes(3)))
struct StackDepthTests {
    @Test("a 20,000-stage then chain whose head fails does not overflow the stack", .oneExitTestAtATime)
    func longFailingChain() async {
        // Each stage is cancelled at start (its input failed) and finished at once. The
        // thread that ended one body must not start the next inside that finish: that would
        // take one stack frame group per stage, a crash at a few thousand.
        await #expect(processExitsWith: .success) {
            struct Boom: Error {}
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            let head = AsyncBlockOperation<Int> { throw Boom() }
            var stages: [ValueOperation<Int>] = [head]
            for _ in 0..<20_000 { stages.append(stages.last!.then { value async in value + 1 }) }
            queue.addOperations(stages, waitUntilFinished: false)
            await queue.waitUntilAllOperationsAreFinished()
            precondition(stages.allSatisfy { $0.isFinished })
        }
    }

    @Test("a 200,000-stage then chain that never ran is released without recursion", .oneExitTestAtATime)
    func abandonedChainReleased() async {
        // Each stage holds its input (for its value) besides listing it as a dependency:
        // dropping the last stage must not release the chain one nested deinit per stage.
        await #expect(processExitsWith: .success) {
            var last: ValueOperation<Int> = ValueBlockOperation { 0 }
            for _ in 0..<200_000 { last = last.then { $0 + 1 } }
            _ = consume last
        }
    }

    @Test("cancelling 50,000 queued async operations behind running bodies does not overflow the stack", .oneExitTestAtATime)
    func cancelLargeBatch() async {
        await #expect(processExitsWith: .success) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 4
            let entered = AsyncCounter()
            let running = (0..<4).map { _ in
                AsyncBlockOperation {
                    entered.increment()
                    await TestGate().wait()
                }
            }
            queue.addOperations(running, waitUntilFinished: false)
            await entered.wait(for: 4)
            queue.addOperations((0..<50_000).map { _ in AsyncBlockOperation {} }, waitUntilFinished: false)
            queue.cancelAllOperations()
            await queue.waitUntilAllOperationsAreFinished()
        }
    }}

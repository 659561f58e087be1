import Operations
import OperationsComposition
import Testing
import TestTraits

@Suite("Finishes set off by other finishes, nested deeply on one thread")
struct NestedAnnouncementTests {
    /// Operations started by hand from the `isFinished` observer of the one before; the
    /// observer at `waitAt` then waits for the operation it just started. True when the
    /// chain ended.
    static func chainEnds(length: Int, waitAt: Int) -> Bool {
        let done = BlockingSignal()
        onNewThread {
            let operations = (0..<length).map { _ in BlockOperation {} }
            var tokens: [NSKeyValueObservation] = []
            for index in 0..<length {
                tokens.append(operations[index].observe(\.isFinished, options: [.new]) { _, change in
                    guard change.newValue == true, index + 1 < length else { return }
                    let next = operations[index + 1]
                    next.start()
                    if index + 1 == waitAt { next.waitUntilFinished() }
                })
            }
            operations[0].start()
            done.open()
            withExtendedLifetime(tokens) {}
        }
        return done.wait()
    }

    @Test("a wait on this thread for an operation whose announcement was handed back returns")
    func waitForHandedBack() {
        let limit = NestedAnnouncements.depthLimit
        #expect(Self.chainEnds(length: limit + 4, waitAt: limit - 1), "announced nested")
        #expect(Self.chainEnds(length: limit + 4, waitAt: limit), "handed back to the outermost announcement")
        #expect(Self.chainEnds(length: limit + 4, waitAt: limit + 2), "handed back, deeper")
    }

    @Test("a chain of 20,000 finishes set off by observers' didFinish takes a bounded stack", .oneExitTestAtATime)
    func observerChain() async {
        await #expect(processExitsWith: .success) {
            let count = isSanitized ? 2_000 : 20_000
            let operations = (0..<count).map { _ in BlockOperation {} }
            for index in 0..<(count - 1) {
                let next = operations[index + 1]
                operations[index].addObserver(BlockObserver(didFinish: { _, _ in next.start() }))
            }
            let done = DispatchSemaphore(value: 0)
            onNewThread {
                operations[0].start()
                done.signal()
            }
            done.wait()
            guard operations.allSatisfy({ $0.isFinished }) else { exit(1) }
        }
    }

    @Test("a sequence of 100,000 operations, each started by hand from the previous one's completion block, takes a bounded stack", .oneExitTestAtATime)
    func completionBlockSequence() async {
        await #expect(processExitsWith: .success) {
            let count = isSanitized ? 10_000 : 100_000
            // Plain ones, cancelled ones (start() finishes them without main()), and
            // asynchronous ones that finish inside their own start().
            let operations: [Operation] = (0..<count).map { index in
                switch index % 3 {
                case 0:
                    return BlockOperation {}
                case 1:
                    let cancelled = BlockOperation {}
                    cancelled.cancel()
                    return cancelled
                default:
                    return DocumentedAsyncOperation { done in done() }
                }
            }
            let done = DispatchSemaphore(value: 0)
            for index in 0..<count {
                let next = index + 1 < count ? operations[index + 1] : nil
                operations[index].completionBlock = {
                    if let next { next.start() } else { done.signal() }
                }
            }
            onNewThread { operations[0].start() }
            // A failure guard only: the sequence ends, or the process dies of its stack.
            guard done.wait(timeout: .now() + 600) == .success else { exit(1) }
            guard operations.allSatisfy({ $0.isFinished }) else { exit(2) }
        }
    }
}

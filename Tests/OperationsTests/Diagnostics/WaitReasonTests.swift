import Operations
import OperationsComposition
import Testing

@Suite("Why an operation is not running")
struct WaitReasonTests {
    @Test("unfinished dependencies, in a queue or not")
    func dependencies() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let queued = ClosureOperation(name: "download")
        let loose = ClosureOperation(name: "loose")
        let operation = ClosureOperation(name: "filter")
        operation.addDependency(queued)
        operation.addDependency(loose)
        queue.addOperations([queued, operation], waitUntilFinished: false)
        #expect(operation.waitReasons == [
            .dependency(queued, isInQueue: true), .dependency(loose, isInQueue: false), .queueSuspended(queue),
        ])
        #expect(operation.waitDescription.contains("\"loose\""))
        #expect(operation.waitDescription.contains("in no queue"))
        loose.start()
        #expect(operation.waitReasons == [.dependency(queued, isInQueue: true), .queueSuspended(queue)])
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.waitReasons == [.finished])
    }

    @Test("an operation in no queue")
    func notInQueue() {
        let operation = Operation()
        #expect(operation.waitReasons == [.notInQueue])
    }

    @Test("the concurrency limit, and running")
    func limit() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let running = BlockingSignal(), release = BlockingSignal()
        let first = ClosureOperation { _ in running.open(); release.wait() }
        let second = ClosureOperation()
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(running.wait())
        #expect(first.waitReasons == [.executing])
        #expect(second.waitReasons == [.concurrencyLimit(queue, limit: 1)])
        release.open()
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("an overridden isReady that returns false")
    func overriddenIsReady() {
        final class Closed: Operation, @unchecked Sendable {
            let open = Shared(false)
            override var isReady: Bool { super.isReady && open() }
        }
        let queue = OperationQueue()
        let operation = Closed()
        queue.addOperation(operation)
        #expect(operation.waitReasons == [.isReadyReturnsFalse])
        operation.open.update { $0 = true }
        operation.didChangeValue(forKey: "isReady")
        queue.waitUntilAllOperationsAreFinished()
    }

    /// Adds an operation behind a pending barrier (cancelling it first if `cancelled`) and
    /// checks that its one wait reason is the barrier.
    private func checkWaitsForPendingBarrier(cancelled: Bool) {
        let queue = OperationQueue()
        let release = BlockingSignal()
        queue.addOperation { release.wait() }
        queue.addBarrierBlock {}
        let later = ClosureOperation(name: "later")
        queue.addOperation(later)
        if cancelled { later.cancel() }
        #expect(later.waitReasons.count == 1)
        if case .barrier = later.waitReasons.first {} else { Issue.record("expected a barrier reason, got \(later.waitReasons)") }
        release.open()
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("a pending barrier")
    func barrier() {
        checkWaitsForPendingBarrier(cancelled: false)
    }

    @Test("a cancelled operation added after a pending barrier still waits for it")
    func cancelledBehindBarrier() {
        checkWaitsForPendingBarrier(cancelled: true)
    }
}

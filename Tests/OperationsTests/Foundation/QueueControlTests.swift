import Operations
import OperationsComposition
import Testing

@Suite("OperationQueue: cancel, wait, barriers, progress, properties")
struct QueueControlTests {
    @Test("cancelAllOperations() cancels every operation; each still finishes and completes")
    func cancelAll() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let ran = Shared(0), completed = Shared(0)
        var operations: [Operation] = []
        for _ in 0..<50 {
            let operation = BlockOperation { ran.increment() }
            operation.completionBlock = { completed.increment() }
            operations.append(operation)
        }
        // A chain, as in Foundation's crash report: dependents added first.
        for (earlier, later) in zip(operations, operations.dropFirst()) { later.addDependency(earlier) }
        queue.addOperations(operations.reversed(), waitUntilFinished: false)
        queue.cancelAllOperations()
        #expect(operations.allSatisfy { $0.isCancelled })
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran() == 0)
        #expect(completed() == 50)
        #expect(operations.allSatisfy { $0.isFinished })
    }

    /// Forced: the running operation's `cancel()` ends its body (as closing its socket
    /// would), then waits until the operation queued before it either ran its work or
    /// finished. A queued operation not cancelled by then takes the freed slot and runs.
    /// The running one has the higher priority, so the queued ones sit on both sides of it
    /// in the order added.
    @Test("cancelAllOperations() cancels queued operations before running ones: none runs in a slot a cancelled one frees")
    func cancelAllQueuedFirst() {
        let queue = suspendedSerialQueue()
        let ran = Shared<[String]>([])
        let (earlier, earlierSettled) = operationLoggingItsWork("earlier", to: ran)
        let running = CancelEndsBodyOperation { #expect(earlierSettled.wait(), "the queued operation neither ran nor finished") }
        running.queuePriority = .veryHigh
        let later = BlockOperation { ran.append("later") }
        queue.addOperations([earlier, running, later], waitUntilFinished: false)
        queue.isSuspended = false
        #expect(running.bodyStarted.wait())
        queue.cancelAllOperations()
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran() == [], "queued operations ran their work after cancelAllOperations()")
        #expect([earlier, running, later].allSatisfy { $0.isCancelled && $0.isFinished })
    }

    /// An operation a worker has claimed but not started is not running: it is cancelled
    /// after the waiting ones, and its start finishes it without its work. Forced: its
    /// worker's read of `isReady` (every worker reads it between the claim and `start()`)
    /// waits for its cancellation, and its `cancel()` then waits until the operation queued
    /// behind it either ran its work or finished. The claimed one was made and added after
    /// the queued one (it has the higher priority), so an order by addition or by
    /// dependency position alone cancels it first.
    @Test("cancelAllOperations() cancels an operation a worker claimed but has not started after the waiting ones; it runs no work")
    func cancelAllClaimedNotStarted() {
        let queue = suspendedSerialQueue()
        let ran = Shared<[String]>([])
        let (queued, queuedSettled) = operationLoggingItsWork("queued", to: ran)
        let claimed = ClaimHeldOperation(queue: queue, work: { ran.append("claimed") }) {
            #expect(queuedSettled.wait(), "the queued operation neither ran nor finished")
        }
        claimed.queuePriority = .veryHigh
        queue.addOperations([queued, claimed], waitUntilFinished: false)
        queue.isSuspended = false
        #expect(claimed.claimed.wait())
        queue.cancelAllOperations()
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran() == [], "operations that were not running ran their work after cancelAllOperations()")
        #expect([queued, claimed].allSatisfy { $0.isCancelled && $0.isFinished })
    }

    @Test("waitUntilAllOperationsAreFinished() includes asynchronous operations and operations added while waiting")
    func waitIncludesLateAdds() {
        let queue = OperationQueue()
        let release = BlockingSignal()
        let lateRan = Shared(false)
        let asyncOperation = DeferredOperation { op in
            onNewThread {
                release.wait()
                queue.addOperation { usleep(1_000); lateRan.update { $0 = true } }
                op.finish()
            }
        }
        queue.addOperation(asyncOperation)
        let waited = BlockingSignal()
        onNewThread {
            queue.waitUntilAllOperationsAreFinished()
            waited.open()
        }
        #expect(!waited.wait(timeout: 0.05))
        release.open()
        #expect(waited.wait())
        #expect(lateRan())
        #expect(queue.operationCount == 0)
    }

    @Test("a barrier runs after everything added before it, and before everything added after it")
    func barrier() {
        let queue = OperationQueue()
        let log = Shared<[String]>([])
        let release = BlockingSignal()
        for index in 0..<5 {
            queue.addOperation {
                if index == 0 { release.wait() }
                log.append("before")
            }
        }
        queue.addBarrierBlock { log.append("barrier") }
        for _ in 0..<5 {
            queue.addOperation { log.append("after") }
        }
        release.open()
        queue.waitUntilAllOperationsAreFinished()
        let expected = Array(repeating: "before", count: 5) + ["barrier"] + Array(repeating: "after", count: 5)
        #expect(log() == expected)
    }

    @Test("a barrier on an empty queue runs; two barriers keep their order")
    func barriers() {
        let queue = OperationQueue()
        let log = Shared<[String]>([])
        queue.addBarrierBlock { log.append("b1") }
        queue.addOperation { log.append("op") }
        queue.addBarrierBlock { log.append("b2") }
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["b1", "op", "b2"])
    }

    @Test("progress reports nothing until totalUnitCount is set; then one unit per finished operation")
    func progress() {
        let queue = OperationQueue()
        queue.addOperation {}
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.progress.completedUnitCount == 0)
        queue.progress.totalUnitCount = 10
        for _ in 0..<10 { queue.addOperation {} }
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.progress.completedUnitCount == 10)
        #expect(queue.progress.fractionCompleted == 1)
    }

    @Test("a new queue: background QoS, default name, no underlying queue, empty")
    func defaults() {
        let queue = OperationQueue()
        #expect(queue.qualityOfService == .background)
        #expect(queue.name?.hasPrefix("NSOperationQueue 0x") == true)
        #expect(queue.underlyingQueue == nil)
        #expect(queue.operations.isEmpty)
        #expect(queue.operationCount == 0)
        #expect(!queue.isSuspended)
        queue.name = "images"
        #expect(queue.name == "images")
        queue.qualityOfService = .userInitiated
        #expect(queue.qualityOfService == .userInitiated)
    }

    @Test("operations lists unfinished operations in the order added")
    func operationsList() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let a = Operation(), b = Operation(), c = Operation()
        queue.addOperations([a, b], waitUntilFinished: false)
        queue.addOperation(c)
        #expect(queue.operations == [a, b, c])
        #expect(queue.operationCount == 3)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.operations.isEmpty)
    }

    @Test("operations run on the underlying queue when one is set")
    func underlyingQueue() {
        let key = DispatchSpecificKey<String>()
        let dispatchQueue = DispatchQueue(label: "underlying")
        dispatchQueue.setSpecific(key: key, value: "underlying")
        let queue = OperationQueue()
        queue.underlyingQueue = dispatchQueue
        #expect(queue.underlyingQueue === dispatchQueue)
        let seen = Shared<[String?]>([])
        for _ in 0..<3 {
            queue.addOperation { seen.update { $0.append(DispatchQueue.getSpecific(key: key)) } }
        }
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == ["underlying", "underlying", "underlying"])
    }

    @Test("an operation's own QoS is kept when added to a queue")
    func operationQoSWins() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        operation.qualityOfService = .userInitiated
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.qualityOfService == .userInitiated)
    }
}

// Serialized: one test cancels everything on the (shared) main queue.
@Suite("OperationQueue.main and OperationQueue.current", .serialized)
struct MainQueueTests {
    static let mainKey = DispatchSpecificKey<Bool>()

    @Test("main is serial, userInteractive, runs on DispatchQueue.main, and is current there")
    func mainQueue() {
        DispatchQueue.main.setSpecific(key: Self.mainKey, value: true)
        let main = OperationQueue.main
        #expect(main === OperationQueue.main)
        #expect(main.maxConcurrentOperationCount == 1)
        #expect(main.qualityOfService == .userInteractive)
        let seen = Shared<[String]>([])
        let done = BlockingSignal()
        main.addOperation {
            let onMain = DispatchQueue.getSpecific(key: Self.mainKey) == true
            seen.append("onMain=\(onMain) current=\(OperationQueue.current === OperationQueue.main)")
            done.open()
        }
        #expect(done.wait())
        #expect(seen() == ["onMain=true current=true"])
    }

    @Test("cancelAllOperations() works on the main queue")
    func cancelOnMain() {
        let main = OperationQueue.main
        let hold = BlockingSignal(), holding = BlockingSignal()
        main.addOperation { holding.open(); hold.wait() }
        #expect(holding.wait())
        let ran = Shared(false)
        let completed = BlockingSignal()
        let operation = BlockOperation { ran.update { $0 = true } }
        operation.completionBlock = { completed.open() }
        main.addOperation(operation)
        main.cancelAllOperations()
        hold.open()
        #expect(completed.wait())
        #expect(operation.isCancelled && operation.isFinished)
        #expect(!ran())
    }

    @Test("current is the queue running the operation, nil on other threads")
    func current() {
        let queue = OperationQueue()
        let seen = Shared<[Bool]>([])
        queue.addOperation { seen.update { $0.append(OperationQueue.current === queue) } }
        queue.waitUntilAllOperationsAreFinished()
        let other = BlockingSignal()
        Thread.detachNewThread {
            seen.update { $0.append(OperationQueue.current == nil) }
            other.open()
        }
        #expect(other.wait())
        #expect(seen() == [true, true])
    }
}

/// Holds its worker in the read of `isReady` that follows its claim (the first read made
/// on its queue's worker) until it is cancelled; `afterCancel` ends its first `cancel()`.
/// - Note: `@unchecked Sendable`: its own fields are `let`s of `Sendable` types.
private final class ClaimHeldOperation: Operation, @unchecked Sendable {
    /// Opened when its worker reads `isReady` after the claim.
    let claimed = BlockingSignal()
    private let cancelled = BlockingSignal()
    private let queue: ObjectIdentifier
    private let held = Shared(false)
    private let cancelledOnce = Shared(false)
    private let work: @Sendable () -> Void
    private let afterCancel: @Sendable () -> Void

    init(queue: OperationQueue, work: @escaping @Sendable () -> Void, afterCancel: @escaping @Sendable () -> Void) {
        self.queue = ObjectIdentifier(queue)
        self.work = work
        self.afterCancel = afterCancel
        super.init()
    }

    override var isReady: Bool {
        let onWorker = OperationQueue.current.map(ObjectIdentifier.init) == queue
        if onWorker, held.update({ held in defer { held = true }; return !held }) {
            claimed.open()
            _ = cancelled.wait()
        }
        return super.isReady
    }

    override func main() { work() }

    override func cancel() {
        super.cancel()
        cancelled.open()
        if cancelledOnce.update({ done in defer { done = true }; return !done }) { afterCancel() }
    }
}

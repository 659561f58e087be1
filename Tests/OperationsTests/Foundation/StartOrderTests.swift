import Operations
import OperationsComposition
import Testing

/// An operation that logs its name from `main()` and counts the calls of its `start()`
/// (overridden, as subclasses do).
private final class LoggingOperation: Operation, @unchecked Sendable {
    let log: Shared<[String]>
    let startCalls = Shared(0)

    init(_ name: String, log: Shared<[String]>) {
        self.log = log
        super.init()
        self.name = name
    }

    override func start() {
        startCalls.increment()
        super.start()
    }

    override func main() { log.append(name ?? "?") }
}

@Suite("OperationQueue: which ready operation starts first")
struct StartOrderTests {
    private func operations(_ names: [String], log: Shared<[String]>) -> [String: LoggingOperation] {
        Dictionary(uniqueKeysWithValues: names.map { ($0, LoggingOperation($0, log: log)) })
    }

    /// Adds `a`, `c`, `d` and `b` to `queue` in that order, `b` of QoS `.userInitiated` and
    /// waiting for `a`; returns them by name.
    @discardableResult
    private func addRaisedOperationBehindItsDependency(to queue: OperationQueue, log: Shared<[String]>) -> [String: LoggingOperation] {
        let op = operations(["a", "c", "d", "b"], log: log)
        op["b"]!.qualityOfService = .userInitiated
        op["b"]!.addDependency(op["a"]!)
        for name in ["a", "c", "d", "b"] { queue.addOperation(op[name]!) }
        return op
    }

    @Test("a serial queue starts the ready operation added first, not the one that became ready first")
    func serialQueueStartsInTheOrderAdded() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let op = operations(["a", "b", "c", "d", "e"], log: log)
        op["b"]!.addDependency(op["a"]!)
        op["d"]!.addDependency(op["c"]!)
        for name in ["a", "b", "c", "d", "e"] { queue.addOperation(op[name]!) }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["a", "b", "c", "d", "e"])
    }

    @Test("within one priority band the operation added first starts first; higher bands still go before")
    func samePriorityBandStartsInTheOrderAdded() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let op = operations(["plain", "a", "b", "c"], log: log)
        for name in ["a", "b", "c"] { op[name]!.queuePriority = .high }
        op["b"]!.addDependency(op["a"]!)
        for name in ["plain", "a", "b", "c"] { queue.addOperation(op[name]!) }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["a", "b", "c", "plain"])
    }

    @Test("operations whose priority was raised after they were added start in the order they were added")
    func raisedPrioritiesKeepTheOrderAdded() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let op = operations(["a", "b", "c", "d"], log: log)
        for name in ["a", "b", "c", "d"] { queue.addOperation(op[name]!) }
        // Raised in another order than added, each once it waits in the queue.
        for name in ["d", "b", "c"] { op[name]!.queuePriority = .high }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["b", "c", "d", "a"])
    }

    @Test("a queue that is not serial gives a free slot to the ready operation added first")
    func concurrentQueueFillsASlotInTheOrderAdded() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let log = Shared<[String]>([])
        let cStarted = BlockingSignal(), eStarted = BlockingSignal()
        let op: [String: Operation] = [
            // `a` ends once `c` holds the other slot; `c` holds it until `e` starts, so
            // that one slot decides every start after the first two.
            "a": ClosureOperation(name: "a") { _ in log.append("a"); cStarted.wait() },
            "b": ClosureOperation(name: "b") { _ in log.append("b") },
            "c": ClosureOperation(name: "c") { _ in log.append("c"); cStarted.open(); eStarted.wait() },
            "d": ClosureOperation(name: "d") { _ in log.append("d") },
            "e": ClosureOperation(name: "e") { _ in log.append("e"); eStarted.open() },
        ]
        op["b"]!.addDependency(op["a"]!)
        op["d"]!.addDependency(op["b"]!)
        for name in ["a", "b", "c", "d", "e"] { queue.addOperation(op[name]!) }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        let order = log()
        #expect(Set(order.prefix(2)) == ["a", "c"])
        #expect(Array(order.dropFirst(2)) == ["b", "d", "e"])
    }

    @Test("every way of adding takes its place in the order added")
    func everyWayOfAddingKeepsTheOrderAdded() async {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let first = LoggingOperation("first", log: log)
        // Each of these becomes ready only when the one before it finishes: after every
        // operation added later that is ready at once.
        let single = LoggingOperation("single", log: log)
        single.addDependency(first)
        let batched = LoggingOperation("batched", log: log)
        batched.addDependency(single)
        let batchedReady = LoggingOperation("batched-ready", log: log)
        let asyncOperation = AsyncBlockOperation { log.append("async-operation") }
        asyncOperation.addDependency(batched)

        queue.addOperation(first)
        queue.addOperation(single)
        queue.addOperation { log.append("block") }
        queue.addOperations([batched, batchedReady], waitUntilFinished: false)
        queue.addOperation { () async in log.append("async-body") }
        queue.addOperation(asyncOperation)
        queue.addBarrierBlock { log.append("barrier") }
        queue.addOperation { log.append("after-barrier") }
        queue.isSuspended = false
        await queue.waitUntilAllOperationsAreFinished()
        #expect(log() == [
            "first", "single", "block", "batched", "batched-ready", "async-body", "async-operation",
            "barrier", "after-barrier",
        ])
    }

    // MARK: Barriers and cancelled operations

    @Test("a cancelled operation added after a barrier does not pass through start() before the barrier has run")
    func cancelledOperationAfterBarrierWaitsForIt() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let before = LoggingOperation("before", log: log)
        let after = LoggingOperation("after", log: log)
        let seenInBarrier = Shared<(finished: Bool, startCalls: Int)?>(nil)
        queue.addOperation(before)
        queue.addBarrierBlock {
            log.append("barrier")
            seenInBarrier.update { $0 = (after.isFinished, after.startCalls()) }
        }
        queue.addOperation(after)
        after.cancel()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["before", "barrier"])
        #expect(seenInBarrier()?.finished == false)
        #expect(seenInBarrier()?.startCalls == 0)
        #expect(after.isFinished && after.isCancelled)
        #expect(after.startCalls() == 1)
    }

    @Test("a cancelled operation of a higher band added after a barrier still waits for the barrier")
    func cancelledHighPriorityOperationAfterBarrierWaitsForIt() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let before = LoggingOperation("before", log: log)
        let after = LoggingOperation("after", log: log)
        after.queuePriority = .veryHigh
        let completed = BlockingSignal()
        after.completionBlock = { completed.open() }
        let startCallsSeenInBarrier = Shared<Int?>(nil)
        queue.addOperation(before)
        queue.addBarrierBlock {
            log.append("barrier")
            startCallsSeenInBarrier.update { $0 = after.startCalls() }
        }
        queue.addOperation(after)
        after.cancel()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["before", "barrier"])
        #expect(startCallsSeenInBarrier() == 0)
        #expect(completed.wait())
    }

    @Test("a cancelled operation waits for every barrier added before it; one added before a barrier does not")
    func cancelledOperationsAndTwoBarriers() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let early = LoggingOperation("early", log: log)
        let between = LoggingOperation("between", log: log)
        let late = LoggingOperation("late", log: log)
        for operation in [early, between, late] { operation.queuePriority = .veryHigh }
        let finishedAtBarrier = Shared<[String]>([])
        func barrier(_ name: String) -> @Sendable () -> Void {
            { [early, between, late] in
                log.append(name)
                let finished = [early, between, late].filter(\.isFinished).map { $0.name ?? "?" }
                finishedAtBarrier.append("\(name): \(finished.joined(separator: ","))")
            }
        }
        queue.addOperation { log.append("plain") }
        queue.addOperation(early)
        queue.addBarrierBlock(barrier("barrier1"))
        queue.addOperation(between)
        queue.addBarrierBlock(barrier("barrier2"))
        queue.addOperation(late)
        for operation in [late, between, early] { operation.cancel() }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["plain", "barrier1", "barrier2"])
        #expect(finishedAtBarrier() == ["barrier1: early", "barrier2: early,between"])
        #expect(late.isFinished && late.startCalls() == 1)
    }

    // MARK: When the band is fixed

    @Test("an operation's band comes from its QoS when it was added to a queue that was not serial then")
    func bandIsFixedWhenAdded() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let log = Shared<[String]>([])
        addRaisedOperationBehindItsDependency(to: queue, log: log)
        // Serial from now on: `b` still starts in the band its QoS chose when it was added.
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["a", "b", "c", "d"])
    }

    /// Runs a suspended queue of limit 2 whose first slot a very high blocker holds until
    /// `operations` have finished: the other slot shows their order, on a queue that is
    /// not serial. `add` adds them (the blocker is added first).
    private func runBehindBlocker(_ queue: OperationQueue, _ operations: [Operation], add: () -> Void) {
        let release = BlockingSignal()
        let blocker = BlockOperation { release.wait() }
        blocker.queuePriority = .veryHigh
        queue.addOperation(blocker)
        add()
        let done = BlockOperation { release.open() }
        for operation in operations { done.addDependency(operation) }
        queue.addOperation(done)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("an operation added to a serial queue keeps the normal band after the queue stops being serial")
    func bandIsFixedWhenAddedToSerialQueue() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let op = addRaisedOperationBehindItsDependency(to: queue, log: log)
        queue.maxConcurrentOperationCount = 2
        runBehindBlocker(queue, Array(op.values)) {}
        #expect(log() == ["a", "c", "d", "b"])
    }

    @Test("a QoS set after the operation was added does not move it to another band")
    func qualityOfServiceSetLaterKeepsTheBand() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let log = Shared<[String]>([])
        let op = operations(["a", "c", "d", "b"], log: log)
        op["b"]!.addDependency(op["a"]!)
        runBehindBlocker(queue, Array(op.values)) {
            for name in ["a", "c", "d", "b"] { queue.addOperation(op[name]!) }
            op["b"]!.qualityOfService = .userInitiated
        }
        #expect(log() == ["a", "c", "d", "b"])
    }

    @Test("a queuePriority set after the operation was added wins over the band its QoS chose")
    func queuePrioritySetLaterWins() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let log = Shared<[String]>([])
        let op = addRaisedOperationBehindItsDependency(to: queue, log: log)
        queue.maxConcurrentOperationCount = 1
        op["b"]!.queuePriority = .low
        op["c"]!.queuePriority = .veryLow
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["a", "d", "b", "c"])
    }

    @Test("a barrier does not raise the operations before it: on a serial queue with a QoS they keep their queuePriority order")
    func barrierDoesNotRaiseEarlierOperations() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.qualityOfService = .userInitiated
        queue.isSuspended = true
        let log = Shared<[String]>([])
        let op = operations(["e", "f"], log: log)
        op["e"]!.queuePriority = .low
        queue.addOperation(op["e"]!)
        queue.addOperation(op["f"]!)
        queue.addBarrierBlock { log.append("barrier") }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["f", "e", "barrier"])
    }
}

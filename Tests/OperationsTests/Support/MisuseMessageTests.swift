import Operations
import OperationsComposition
import Testing
import TestTraits

@Suite("Programmer errors name the operation and the rule; QoS order")
struct MisuseMessageTests {
    // MARK: Self-dependency

    /// `op.addDependency(op)` is a programmer error whatever `trapsOnDependencyCycles` says
    /// (it is off here): it stops the process rather than warning and leaving the operation
    /// stuck. Forced: no race.
    @Test("an operation depending on itself stops the process, even without trapsOnDependencyCycles", .oneExitTestAtATime)
    func selfDependencyAlwaysTraps() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = false
            let operation = Operation().named("narcissus")
            operation.addDependency(operation)
        }.map { $0.standardErrorContent.containsText("addDependency: ", "\"narcissus\"", "cannot depend on itself") }.check()
    }

    // MARK: Misuse messages

    /// A batch listing one operation twice names the call that was made.
    @Test("a duplicate in addOperations is reported by addOperations", .oneExitTestAtATime)
    func duplicateInBatchNamesAddOperations() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("dup")
            OperationQueue().addOperations([operation, operation], waitUntilFinished: false)
        }.map { $0.standardErrorContent.containsText("addOperations: ", "\"dup\"", "more than once", "only once") }.check()
    }

    /// Any refusal inside a batch is reported by `addOperations`.
    @Test("a finished operation in addOperations is reported by addOperations", .oneExitTestAtATime)
    func finishedInBatchNamesAddOperations() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let finished = Operation().named("finished-one")
            finished.start()
            OperationQueue().addOperations([Operation(), finished], waitUntilFinished: false)
        }.map { $0.standardErrorContent.containsText("addOperations: ", "\"finished-one\"", "has finished") }.check()
    }

    /// Adding to a second queue names both queues.
    @Test("adding to a second queue names the queue it is in and the one it was added to", .oneExitTestAtATime)
    func secondQueueIsNamed() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("shared")
            let first = OperationQueue(), second = OperationQueue()
            first.name = "first"
            second.name = "second"
            first.isSuspended = true
            first.addOperation(operation)
            second.addOperation(operation)
        }.map {
            $0.standardErrorContent.containsText(
                "addOperation: ", "\"shared\"", "is already in another queue (\"first\") and cannot be added to queue \"second\"")
        }.check()
    }

    /// A queue whose limit is 0 starts nothing; the description says so (not
    /// "already runs 0 operations").
    @Test("waitDescription names a concurrency limit of 0")
    func limitZeroDescription() {
        let queue = OperationQueue()
        queue.name = "zero"
        queue.maxConcurrentOperationCount = 0
        let operation = Operation().named("idle")
        queue.addOperation(operation)
        let description = operation.waitDescription
        #expect(description.contains("its queue \"zero\" starts nothing: its maxConcurrentOperationCount is 0"), "\(description)")
        #expect(!description.contains("already runs"), "\(description)")
        operation.cancel()
        queue.maxConcurrentOperationCount = 1
        queue.waitUntilAllOperationsAreFinished()
    }

    /// A two-operation cycle reads in the direction the edges were written:
    /// `a.addDependency(b)` then `b.addDependency(a)`.
    @Test("a two-operation cycle message reads in the direction written", .oneExitTestAtATime)
    func twoCycleDirection() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let a = Operation(), b = Operation()
            a.name = "a"
            b.name = "b"
            a.addDependency(b)
            b.addDependency(a)
        }.map {
            $0.standardErrorContent.containsText(
                "addDependency: making operation \"b\" (Operation) depend on operation \"a\" (Operation) closes a dependency cycle: \"a\" depends on \"b\"; \"b\" depends on \"a\"")
        }.check()
    }

    /// A three-operation cycle: `a → b`, `b → c` written, then `c → a` closes it.
    @Test("a three-operation cycle message reads in the direction written", .oneExitTestAtATime)
    func threeCycleDirection() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let a = Operation(), b = Operation(), c = Operation()
            a.name = "a"
            b.name = "b"
            c.name = "c"
            a.addDependency(b)
            b.addDependency(c)
            c.addDependency(a)
        }.map {
            $0.standardErrorContent.containsText(
                "closes a dependency cycle: \"a\" depends on \"b\"; \"b\" depends on \"c\"; \"c\" depends on \"a\"")
        }.check()
    }

    // MARK: QoS orders a concurrent queue

    /// Adds `qualities.count` held operations (named by index, or "urgent" for `urgent`) to
    /// a suspended queue of limit 2, resumes it, and returns the names of the first two to
    /// start. Forced: the suspended queue has them all ready before any starts; each one
    /// holds its slot on a gate until both slots are taken, so the first batch is exactly
    /// what the queue picked first.
    private func firstBatch(queue: OperationQueue, defaults: Int, urgent: QualityOfService) -> Set<String> {
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let started = Shared<[String]>([])
        let oneStarted = BlockingSignal(), release = BlockingSignal()
        let body: @Sendable (ClosureOperation) -> Void = { operation in
            started.append(operation.name ?? "?")
            oneStarted.open()
            release.wait()
        }
        for index in 0..<defaults { queue.addOperation(ClosureOperation(name: "\(index)", body)) }
        let urgentOperation = ClosureOperation(name: "urgent", body)
        urgentOperation.qualityOfService = urgent
        queue.addOperation(urgentOperation)
        queue.isSuspended = false
        #expect(oneStarted.wait() && oneStarted.wait(), "two operations did not start")
        let batch = Set(started())
        release.open(defaults + 1)
        queue.waitUntilAllOperationsAreFinished()
        return batch
    }

    /// On a limit-2 queue, a `.userInitiated` operation added
    /// after six at the default QoS (queuePriority never set) starts in the first batch.
    @Test("a userInitiated operation starts in the first batch of a limit-2 queue")
    func userInitiatedJumpsAhead() {
        let batch = firstBatch(queue: OperationQueue(), defaults: 6, urgent: .userInitiated)
        #expect(batch.contains("urgent"), "first batch: \(batch.sorted())")
    }

    /// The same on a `.background` queue, for a `.userInteractive` operation.
    @Test("a userInteractive operation starts in the first batch of a background limit-2 queue")
    func userInteractiveJumpsAheadOnBackgroundQueue() {
        let queue = OperationQueue()
        queue.qualityOfService = .background
        let batch = firstBatch(queue: queue, defaults: 6, urgent: .userInteractive)
        #expect(batch.contains("urgent"), "first batch: \(batch.sorted())")
    }

    /// The counterpart: on a serial queue QoS does not jump the line. Forced: all are ready in the suspended queue before any
    /// starts.
    @Test("on a serial queue a userInitiated operation does not jump the line")
    func serialQueueStaysFIFO() {
        let queue = suspendedSerialQueue()
        let order = Shared<[String]>([])
        let body: @Sendable (ClosureOperation) -> Void = { order.append($0.name ?? "?") }
        for index in 0..<6 { queue.addOperation(ClosureOperation(name: "\(index)", body)) }
        let urgent = ClosureOperation(name: "urgent", body)
        urgent.qualityOfService = .userInitiated
        queue.addOperation(urgent)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(order() == ["0", "1", "2", "3", "4", "5", "urgent"])
    }

    /// Runs operations (named, with a QoS and a queuePriority when given) one at a time on
    /// a limit-2 queue (a held blocker takes the other slot), after adding them all while
    /// the queue is suspended, and returns the order they started in. Forced: the blocker
    /// has started before the queue is suspended; on resuming, one slot is free, so the
    /// ready operations start one after another, in the queue's order.
    private func runOrder(_ specs: [(name: String, quality: QualityOfService?, priority: Operation.QueuePriority?)]) -> [String] {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        let blockerStarted = BlockingSignal(), releaseBlocker = BlockingSignal()
        queue.addOperation {
            blockerStarted.open()
            releaseBlocker.wait()
        }
        #expect(blockerStarted.wait())
        queue.isSuspended = true
        let order = Shared<[String]>([])
        let allRan = BlockingSignal()
        let count = specs.count
        for spec in specs {
            let operation = ClosureOperation(name: spec.name) { operation in
                if order.update({ $0.append(operation.name ?? "?"); return $0.count }) == count { allRan.open() }
            }
            if let quality = spec.quality { operation.qualityOfService = quality }
            if let priority = spec.priority { operation.queuePriority = priority }
            queue.addOperation(operation)
        }
        queue.isSuspended = false
        #expect(allRan.wait(), "not all ran: \(order())")
        releaseBlocker.open()
        queue.waitUntilAllOperationsAreFinished()
        return order()
    }

    /// The mapping when `queuePriority` was never set (queue not serial):
    /// userInteractive → veryHigh, userInitiated → high, default → normal, utility → low,
    /// background → veryLow. Added lowest first, they must run highest first.
    @Test("QoS gives the priority band when queuePriority was never set")
    func qualityOfServiceBands() {
        let order = runOrder([
            ("background", .background, nil), ("utility", .utility, nil), ("default", .default, nil),
            ("userInitiated", .userInitiated, nil), ("userInteractive", .userInteractive, nil),
        ])
        #expect(order == ["userInteractive", "userInitiated", "default", "utility", "background"])
    }

    /// The counterpart: a `queuePriority` that was set wins over the QoS, even when set to
    /// `.normal`.
    @Test("an explicit queuePriority wins over the QoS")
    func explicitPriorityWins() {
        let order = runOrder([
            ("plain", nil, nil), ("interactive-normal", .userInteractive, .normal),
            ("background-veryHigh", .background, .veryHigh),
        ])
        #expect(order == ["background-veryHigh", "plain", "interactive-normal"])
    }
}

import Operations
import OperationsComposition
import Testing

/// Seeded randomized stress: random dependency graphs across queues with different limits,
/// priorities, cancellation at every stage, suspension, limit changes, barriers, classic
/// asynchronous subclasses finishing from other threads, and overridden `isReady` flipping.
///
/// `OPERATIONS_STRESS_SECONDS` sets how long it runs (default 5; CI uses 60; a soak, hours).
/// `OPERATIONS_STRESS_SEED` replays one seed: the graph, the kinds of operations and the
/// actions are drawn from it (thread timing is not).
@Suite("Stress", .serialized)
struct StressTests {
    @Test("random schedules keep every invariant")
    func randomSchedules() async {
        // Run on a thread of its own: the rounds block while they wait, and a blocked thread
        // of Swift's cooperative pool is one fewer for the async bodies they wait for.
        let (failure, rounds) = await onOwnThread { () -> (String?, Int) in
            let environment = ProcessInfo.processInfo.environment
            let seconds = Double(environment["OPERATIONS_STRESS_SECONDS"] ?? "") ?? 5
            let fixedSeed = environment["OPERATIONS_STRESS_SEED"].flatMap(UInt64.init)
            let deadline = Date().addingTimeInterval(seconds)
            var rounds = 0, operations = 0
            var seed = fixedSeed ?? UInt64(Date().timeIntervalSince1970 * 1000)
            let firstSeed = seed
            repeat {
                let result = StressRound(seed: seed).run()
                rounds += 1
                operations += result.operations
                if !result.failures.isEmpty {
                    let details = result.failures.prefix(20).joined(separator: "\n")
                    return ("stress seed \(seed) (rerun with OPERATIONS_STRESS_SEED=\(seed)):\n\(details)", rounds)
                }
                seed &+= 0x9E37_79B9
            } while fixedSeed == nil && Date() < deadline
            // The summary only on request: the test log shows test results and nothing else.
            if environment["OPERATIONS_STRESS_SUMMARY"] == "1" {
                print("stress: \(rounds) schedules, \(operations) operations, \(String(format: "%.0f", seconds)) s budget, seeds \(firstSeed) + k·0x9E3779B9 for k < \(rounds)")
            }
            return (nil, rounds)
        }
        if let failure { Issue.record("\(failure)") }
        #expect(rounds > 0)
    }
}

/// What every operation of a round records.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class StressLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var runs: [Int: Int] = [:]
    private var completions: [Int: Int] = [:]
    private var running: [Int: Int] = [:]
    private(set) var failures: [String] = []

    func fail(_ message: String) { lock.withLock { failures.append(message) } }

    func workStarted(_ id: Int, queue: Int, limit: Int?) {
        lock.withLock {
            runs[id, default: 0] += 1
            if runs[id]! > 1 { failures.append("operation \(id) ran \(runs[id]!) times") }
            running[queue, default: 0] += 1
            if let limit, running[queue]! > limit {
                failures.append("queue \(queue) ran \(running[queue]!) operations at once (limit \(limit))")
            }
        }
    }

    func workEnded(queue: Int) { lock.withLock { running[queue, default: 0] -= 1 } }

    private var sawCancelled: [Int: Bool] = [:]

    func completed(_ id: Int, sawCancelled cancelled: Bool) {
        lock.withLock {
            sawCancelled[id] = cancelled
            completions[id, default: 0] += 1
            if completions[id]! > 1 { failures.append("completion block of \(id) ran \(completions[id]!) times") }
        }
    }

    func completionCount(_ id: Int) -> Int { lock.withLock { completions[id] ?? 0 } }
    func completionSawCancelled(_ id: Int) -> Bool? { lock.withLock { sawCancelled[id] } }

    /// Every queue's events, in delivery order.
    private var events: [ObjectIdentifier: [OperationEvent]] = [:]
    func record(_ event: OperationEvent) { lock.withLock { events[ObjectIdentifier(event.operation), default: []].append(event) } }
    func events(of operation: Operation) -> [OperationEvent] { lock.withLock { events[ObjectIdentifier(operation)] ?? [] } }
    /// Events hold their operations, which hold the ledger: dropped at the end of a round.
    func clearEvents() { lock.withLock { events = [:] } }
    var allFailures: [String] { lock.withLock { failures } }
}

/// Where the work of a stress operation counts: its number, the index of its queue (-2
/// when started by hand), that queue's limit, and the ledger it reports to.
struct StressPlacement: Sendable {
    let id: Int, queueIndex: Int, limit: Int?
    let ledger: StressLedger

    func workStarted() { ledger.workStarted(id, queue: queueIndex, limit: limit) }
    func workEnded() { ledger.workEnded(queue: queueIndex) }

    /// Records a failure for each dependency of `operation` not finished as its work starts.
    func checkDependenciesFinished(of operation: Operation, _ what: String) {
        for dependency in operation.dependencies where !dependency.isFinished {
            ledger.fail("\(what) \(id) started before a dependency finished")
        }
    }
}

/// An operation that checks its dependencies when its work starts.
final class StressOperation: Operation, @unchecked Sendable {
    let placement: StressPlacement
    let spin: Int
    /// Read in `deinit`: a `deinit` that re-enters the queue must never run under its lock.
    weak var probedQueue: OperationQueue?

    deinit { _ = probedQueue?.operationCount }

    init(_ placement: StressPlacement, spin: Int) {
        self.placement = placement
        self.spin = spin
        super.init()
    }

    override func main() {
        placement.workStarted()
        placement.checkDependenciesFinished(of: self, "operation")
        var x = 0
        for i in 0..<spin { x &+= i }
        if x == -1 { print(x) }
        placement.workEnded()
    }
}

/// An operation with an `async` body: holds its queue slot while suspended, so the
/// ledger's limit check covers it; a cancelled body throws `CancellationError`.
final class StressTaskOperation: TaskOperation<Int>, @unchecked Sendable {
    let placement: StressPlacement
    let suspensions: Int

    init(_ placement: StressPlacement, suspensions: Int) {
        self.placement = placement
        self.suspensions = suspensions
        super.init()
    }

    /// How far the body got, for the report of a round that did not finish.
    let bodyProgress = Shared("not entered")

    override func run() async throws -> Int {
        bodyProgress.update { $0 = "entered" }
        defer { bodyProgress.update { $0 = "returned" } }
        placement.workStarted()
        defer { placement.workEnded() }
        placement.checkDependenciesFinished(of: self, "async operation")
        if OperationQueue.current == nil { placement.ledger.fail("async operation \(placement.id): no current queue in its body") }
        for index in 0..<suspensions {
            bodyProgress.update { $0 = "suspended (\(index + 1) of \(suspensions))" }
            await Task.yield()
        }
        try Task.checkCancellation()
        return placement.id
    }
}

/// The classic asynchronous subclass, finishing on another thread or inside `start()`.
final class StressAsyncOperation: TutorialAsyncOperation, @unchecked Sendable {
    let placement: StressPlacement
    let finishInline: Bool

    init(_ placement: StressPlacement, finishInline: Bool) {
        self.placement = placement
        self.finishInline = finishInline
    }

    private let endLock = NSLock()
    private var workRunning = false
    private var finishAnnounced = false
    private var startCalled = false

    /// A start after the operation was finished by hand does nothing (the tutorial's own
    /// `start()` would move its state back to executing).
    override func start() {
        let proceed = endLock.withLock {
            guard !finishAnnounced else { return false }
            startCalled = true
            return true
        }
        if proceed { super.start() }
    }

    /// The work stops counting as running once, just before the operation announces that
    /// it finished, however it finishes: its work completing, or the tutorial's `cancel()`,
    /// which finishes a running operation at once (freeing its slot) while its work may
    /// still be on its way. The announcement always precedes the engine's bookkeeping.
    private func endWork() {
        endLock.withLock {
            finishAnnounced = true
            if workRunning { placement.workEnded() }
            workRunning = false
        }
    }

    override func willChangeValue(forKey key: String) {
        if key == "isFinished" { endWork() }
        super.willChangeValue(forKey: key)
    }

    /// Finishes the operation by hand unless its work has started (the tutorial state
    /// moves to finished; the engine must notice wherever the operation is).
    func finishIfNotStarted() {
        let claimed = endLock.withLock {
            guard !startCalled, !workRunning, !finishAnnounced else { return false }
            finishAnnounced = true
            return true
        }
        if claimed { finish() }
    }

    override func main() {
        // Cancelling may finish the operation (and free its slot) before its work starts.
        let counted = endLock.withLock {
            guard !finishAnnounced else { return false }
            workRunning = true
            placement.workStarted()
            return true
        }
        guard counted else { return }
        placement.checkDependenciesFinished(of: self, "async operation")
        let finish: @Sendable () -> Void = { [self] in self.finish() }
        if finishInline { finish() } else { onNewThread(finish) }
    }
}

/// An operation whose overridden `isReady` is closed until opened, with KVO announcements.
final class StressGatedOperation: Operation, @unchecked Sendable {
    let id: Int
    let ledger: StressLedger
    private let lock = NSLock()
    private var isOpen = false
    private var wasEverOpen = false

    init(id: Int, ledger: StressLedger) {
        self.id = id
        self.ledger = ledger
    }

    override var isReady: Bool { super.isReady && lock.withLock { isOpen } }

    func setOpen(_ open: Bool) {
        willChangeValue(forKey: "isReady")
        lock.withLock {
            isOpen = open
            wasEverOpen = wasEverOpen || open
        }
        didChangeValue(forKey: "isReady")
    }

    override func main() {
        ledger.workStarted(id, queue: -1, limit: nil)
        // The gate may close again between the queue's last `isReady` check and `main()`
        // (that race is the caller's; the re-check itself is tested deterministically in
        // DependencyTests). What must never happen: running without ever being ready.
        if !lock.withLock({ wasEverOpen }) { ledger.fail("gated operation \(id) ran although its isReady never returned true") }
        ledger.workEnded(queue: -1)
    }
}

struct StressRound {
    let seed: UInt64

    /// An operation's events: enqueued first, started at most once, cancelled at most once,
    /// finished last and once; sequence numbers increasing.
    static func eventOrderFailures(id: Int, _ events: [OperationEvent]) -> [String] {
        let kinds = events.map(\.kind)
        var failures: [String] = []
        if kinds.first != .enqueued { failures.append("operation \(id): first event \(String(describing: kinds.first))") }
        if kinds.filter({ $0 == .started }).count > 1 { failures.append("operation \(id): started twice") }
        if kinds.filter({ $0 == .cancelled }).count > 1 { failures.append("operation \(id): cancelled announced twice") }
        let finishes = kinds.indices.filter { if case .finished = kinds[$0] { true } else { false } }
        if finishes != [kinds.count - 1] { failures.append("operation \(id): events \(kinds) do not end with one finish") }
        if events.map(\.sequence) != events.map(\.sequence).sorted() { failures.append("operation \(id): sequence numbers out of order") }
        return failures
    }

    struct Result {
        var operations: Int
        var failures: [String]
    }

    func run() -> Result {
        var random = SplitMix64(seed: seed)
        let ledger = StressLedger()
        // Queue 0: default limit; 1: serial; 2: limit 2; 3: limit changed while running.
        let queues = (0..<4).map { index in
            let queue = OperationQueue()
            queue.name = "stress-\(index)"
            return queue
        }
        queues[1].maxConcurrentOperationCount = 1
        queues[2].maxConcurrentOperationCount = 2
        queues[3].maxConcurrentOperationCount = 3
        let fixedLimits: [Int?] = [nil, 1, 2, 4]
        let subscriptions = queues.map { queue in queue.addEventHandler { event in ledger.record(event) } }
        defer {
            for subscription in subscriptions { subscription.cancel() }
            ledger.clearEvents()
        }
        let count = Int.random(in: 50...250, using: &random)
        var operations: [Operation] = []
        var placement: [Int] = []
        var gated: [StressGatedOperation] = []
        // Classic asynchronous operations with no dependencies, started by hand on another
        // thread instead of being enqueued (operations in queues may depend on them).
        var startedByHand = Set<Int>()
        for id in 0..<count {
            var queueIndex = Int.random(in: 0..<4, using: &random)
            var limit = fixedLimits[queueIndex]
            let kind = Int.random(in: 0..<10, using: &random)
            func placementOfThisOperation() -> StressPlacement {
                StressPlacement(id: id, queueIndex: queueIndex, limit: limit, ledger: ledger)
            }
            let operation: Operation
            switch kind {
            case 0, 1:
                if Int.random(in: 0..<4, using: &random) == 0 {
                    startedByHand.insert(id)
                    (queueIndex, limit) = (-2, nil)
                }
                operation = StressAsyncOperation(placementOfThisOperation(), finishInline: Bool.random(using: &random))
            case 3:
                operation = StressTaskOperation(placementOfThisOperation(), suspensions: Int.random(in: 0...3, using: &random))
            case 2:
                let gate = StressGatedOperation(id: id, ledger: ledger)
                gated.append(gate)
                operation = gate
            default:
                operation = StressOperation(placementOfThisOperation(), spin: Int.random(in: 0..<2_000, using: &random))
            }
            operation.queuePriority = [.veryLow, .low, .normal, .high, .veryHigh].randomElement(using: &random)!
            operation.qualityOfService = [.background, .utility, .default, .userInitiated].randomElement(using: &random)!
            operation.completionBlock = { [unowned operation] in ledger.completed(id, sawCancelled: operation.isCancelled) }
            (operation as? StressOperation)?.probedQueue = queueIndex >= 0 ? queues[queueIndex] : nil
            // Dependencies only on earlier operations: acyclic, across queues.
            for _ in 0..<Int.random(in: 0...3, using: &random) where id > 0 && !startedByHand.contains(id) {
                operation.addDependency(operations[Int.random(in: max(0, id - 40)..<id, using: &random)])
            }
            if Int.random(in: 0..<30, using: &random) == 0 { operation.cancel() }  // before enqueue
            // addDependency racing removeDependency of the same edge: either outcome is
            // fine, but the count must agree with the list (checked by everything finishing).
            if id > 0, !startedByHand.contains(id), Int.random(in: 0..<8, using: &random) == 0 {
                let dependency = operations[Int.random(in: max(0, id - 40)..<id, using: &random)]
                let both = DispatchGroup()
                onNewThread(group: both) { operation.addDependency(dependency) }
                onNewThread(group: both) { operation.removeDependency(dependency) }
                both.wait()
            }
            operations.append(operation)
            placement.append(queueIndex)
        }
        let handStarts = DispatchGroup()
        // Enqueue in random batches, with actions between them.
        var index = 0
        while index < count {
            let batch = Int.random(in: 1...20, using: &random)
            let end = min(count, index + batch)
            for position in index..<end {
                if startedByHand.contains(position) {
                    let operation = operations[position]
                    onNewThread(group: handStarts) { operation.start() }
                } else {
                    queues[placement[position]].addOperation(operations[position])
                }
            }
            index = end
            switch Int.random(in: 0..<12, using: &random) {
            case 0: queues[Int.random(in: 0..<4, using: &random)].isSuspended = true
            case 1: for queue in queues { queue.isSuspended = false }
            case 2: queues[3].maxConcurrentOperationCount = Int.random(in: 1...4, using: &random)
            case 3: queues[Int.random(in: 0..<4, using: &random)].addBarrierBlock {}
            case 4: operations[Int.random(in: 0..<end, using: &random)].cancel()
            case 5: if let gate = gated.randomElement(using: &random) { gate.setOpen(Bool.random(using: &random)) }
            case 6:
                // A cancel racing whatever the operation is doing (also its finish).
                let target = operations[Int.random(in: 0..<end, using: &random)]
                onNewThread { target.cancel() }
            case 7:
                // A classic asynchronous operation finished by hand from another thread,
                // possibly while it sits in its queue's ready list.
                if let target = operations[0..<end].randomElement(using: &random) as? StressAsyncOperation {
                    onNewThread { target.finishIfNotStarted() }
                }
            case 8:
                // A band changed while the operation may wait in a ready list (moved there).
                operations[Int.random(in: 0..<end, using: &random)].queuePriority =
                    [.veryLow, .low, .normal, .high, .veryHigh].randomElement(using: &random)!
            default: break
            }
        }
        for queue in queues { queue.isSuspended = false }
        for gate in gated { gate.setOpen(true) }
        let handStarted = startedByHand.map { operations[$0] }
        // Everything must finish: wait on another thread, with a timeout.
        let done = BlockingSignal()
        onNewThread {
            for queue in queues { queue.waitUntilAllOperationsAreFinished() }
            handStarts.wait()
            for operation in handStarted { operation.waitUntilFinished() }
            done.open()
        }
        var failures = ledger.allFailures
        // A bound for finding a hang: under a sanitizer, with the whole suite beside it, a
        // round's operations can take a minute to drain.
        let bound: TimeInterval = isSanitized ? 240 : 60
        if !done.wait(timeout: bound) {
            failures.append("waitUntilAllOperationsAreFinished did not return within \(Int(bound)) s")
            for operation in operations where !operation.isFinished {
                let body = (operation as? StressTaskOperation).map { "; its body: \($0.bodyProgress())" } ?? ""
                failures.append("  stuck: " + operation.waitDescription + body)
            }
            return Result(operations: count, failures: failures)
        }
        failures = ledger.allFailures
        for (id, operation) in operations.enumerated() {
            if !operation.isFinished { failures.append("operation \(id) did not finish") }
        }
        // Completion blocks run before the operation leaves its queue, so all ran by now.
        for id in 0..<count where ledger.completionCount(id) != 1 {
            failures.append("completion block of \(id) ran \(ledger.completionCount(id)) times")
        }
        for (id, operation) in operations.enumerated() {
            // A cancel racing the finish: what the completion block saw is what stays.
            if let saw = ledger.completionSawCancelled(id), saw != operation.isCancelled {
                failures.append("operation \(id): completion block saw isCancelled \(saw), now \(operation.isCancelled)")
            }
            if !startedByHand.contains(id) { failures += Self.eventOrderFailures(id: id, ledger.events(of: operation)) }
        }
        return Result(operations: count, failures: failures)
    }
}

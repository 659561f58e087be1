/// What the generator knows about a program while it writes its steps: which operations
/// were added, which may have started, which gates are open. It allows a step only where its
/// outcome is defined on both implementations, and tracks whether the start order is.
public struct ProgramSimulation: Sendable {
    public let queue: QueueSpec
    public let operations: [OperationSpec]
    public private(set) var steps: [Step] = []
    public private(set) var startOrderIsDefined = true
    public private(set) var isSuspended: Bool
    public private(set) var barrierCount = 0
    private var maxConcurrentOperationCount: Int
    private var added: [Bool]
    /// Added while the queue could run, or the queue was resumed since.
    private var mayHaveStarted: [Bool]
    /// Gone from the queue: a `waitUntilAllOperationsAreFinished()` returned after it was added.
    private var removed: [Bool]
    private var cancelled: [Bool]
    /// A barrier was added since the last `waitUntilAllOperationsAreFinished()`.
    private var barrierPending = false
    private var gateOpen: [Bool]
    private var released: [Bool]
    /// The barriers added before each operation was added.
    private var barriersBefore: [[Int]]
    /// The operations added before each barrier (by barrier number).
    private var addedBeforeBarrier: [Int: [Int]] = [:]

    public init(queue: QueueSpec, operations: [OperationSpec]) {
        self.queue = queue
        self.operations = operations
        isSuspended = queue.startsSuspended
        maxConcurrentOperationCount = queue.maxConcurrentOperationCount
        let none = Array(repeating: false, count: operations.count)
        added = none
        mayHaveStarted = none
        removed = none
        cancelled = none
        gateOpen = operations.map { !$0.readyGate }
        released = operations.map { !$0.holdsUntilReleased }
        barriersBefore = Array(repeating: [], count: operations.count)
    }

    // MARK: Static facts

    /// Deliberate (priority escalation, "Using Operations with async/await"): making an
    /// operation of a higher quality of service depend on another raises that one's band
    /// among ready operations, on serial queues too; Linux's Foundation has no escalation.
    /// True when some dependent has a quality of service its dependency does not reach.
    public static func escalationMayReorder(_ operations: [OperationSpec]) -> Bool {
        let rank: [ServiceQuality: Int] = [.background: 0, .utility: 1, .default: 2, .userInitiated: 3, .userInteractive: 4]
        return operations.contains { dependent in
            guard let quality = dependent.qualityOfService else { return false }
            return dependent.dependencies.contains { dependency in
                rank[quality]! > operations[dependency].qualityOfService.map { rank[$0]! } ?? -1
            }
        }
    }

    /// Whether anything may cancel the operation before it starts. Never the held operation
    /// (its work must start), nor one that announces only `"state"` and calls `super.start()`.
    /// Deliberate: Linux's Foundation's `super.start()` of a cancelled operation marks it
    /// finishing and never re-reads an `isFinished` announced only through `"state"`.
    public static func mayBeCancelled(_ operation: OperationSpec) -> Bool {
        if operation.holdsUntilReleased { return false }
        if case .superStart(_, .state) = operation.kind { return false }
        return true
    }

    public static func dependsTransitively(_ operation: Int, on other: Int, in operations: [OperationSpec]) -> Bool {
        var seen = Set<Int>()
        var pending = operations[operation].dependencies
        while let next = pending.popLast() {
            if next == other { return true }
            if seen.insert(next).inserted { pending.append(contentsOf: operations[next].dependencies) }
        }
        return false
    }

    // MARK: What the generator may do now

    /// The operations the program declares (not the blocks it adds with `addOperation { }`).
    public var declaredOperations: [Int] {
        operations.indices.filter { operations[$0].kind != .queueBlock }
    }

    /// Operations a driver `cancel()` may reach now: they cannot have started. One not added
    /// yet only while no barrier is pending: Linux's Foundation may deadlock the queue when an
    /// operation cancelled before it was added is added after a barrier.
    public var cancellable: [Int] {
        declaredOperations.filter {
            Self.mayBeCancelled(operations[$0]) && !cancelled[$0]
                && (added[$0] ? !mayHaveStarted[$0] : !barrierPending)
        }
    }

    /// Nothing in the queue can have started, and nothing in it must not be cancelled; no
    /// barrier is pending (Linux's Foundation cancels a pending barrier too, and then often
    /// crashes).
    public var mayCancelAll: Bool {
        guard !barrierPending else { return false }
        let inQueue = operations.indices.filter { added[$0] && !removed[$0] }
        return !inQueue.isEmpty && inQueue.allSatisfy { !mayHaveStarted[$0] && Self.mayBeCancelled(operations[$0]) }
    }

    /// A barrier waits for every operation added before it, and everything added after it
    /// waits for the barrier: so no operation added before it may depend on one not added yet.
    /// (Nor may an operation that is cancelled, or that the work of another may cancel, be
    /// waiting to be added: see ``cancellable``.)
    public var mayAddBarrier: Bool {
        let cancelledInWork = Set(operations.flatMap(\.cancelsInWork))
        if operations.indices.contains(where: { !added[$0] && (cancelled[$0] || cancelledInWork.contains($0)) }) {
            return false
        }
        return operations.indices.allSatisfy { index in
            !added[index] || removed[index]
                || operations.indices.allSatisfy { added[$0] || !Self.dependsTransitively(index, on: $0, in: operations) }
        }
    }

    /// Some operation is surely in the queue, unfinished: added while suspended and not
    /// resumed since, or held back by a closed gate. Linux's Foundation runs a barrier added
    /// to an empty queue at once (also while suspended), and neither waits for it nor
    /// cancels it; so barriers are added only to a queue that surely is not empty.
    public var holdsUnfinishedOperation: Bool {
        operations.indices.contains { added[$0] && !removed[$0] && (!mayHaveStarted[$0] || !gateOpen[$0]) }
    }

    public var closedGates: [Int] { operations.indices.filter { !gateOpen[$0] } }

    /// Suspended, and nothing in the queue can have started: `operationCount` and
    /// `operations` are defined.
    public var isQuiet: Bool {
        isSuspended && operations.indices.allSatisfy { !added[$0] || removed[$0] || !mayHaveStarted[$0] }
    }

    /// Added operations a `waitUntilFinished()` may wait for now.
    public var awaitable: [Int] {
        declaredOperations.filter { added[$0] && canFinish($0) }
    }

    public var mayWaitForAll: Bool {
        !isSuspended && operations.indices.allSatisfy { !added[$0] || removed[$0] || canFinish($0) }
    }

    /// Whether `addOperations(segment, waitUntilFinished: true)` would return.
    public func mayWaitAfterAdding(_ segment: [Int]) -> Bool {
        var after = self
        after.apply(.addBatch(segment, waitUntilFinished: false))
        return segment.allSatisfy { after.canFinish($0) }
    }

    /// Everything the operation waits for (itself, its dependencies, the operations before
    /// each barrier added before it, and theirs) is added, can become ready, and the queue runs.
    private func canFinish(_ operation: Int) -> Bool {
        guard !isSuspended, maxConcurrentOperationCount != 0 else { return false }
        var seen = Set<Int>()
        var pending = [operation]
        while let next = pending.popLast() {
            guard seen.insert(next).inserted else { continue }
            guard added[next], gateOpen[next], released[next] else { return false }
            pending.append(contentsOf: operations[next].dependencies)
            for barrier in barriersBefore[next] { pending.append(contentsOf: addedBeforeBarrier[barrier] ?? []) }
        }
        return true
    }

    /// Some operation in the queue may have started, or be about to: suspending the queue
    /// does not end this (an operation the queue had committed to start still starts; when a
    /// queue commits differs between the implementations), only a
    /// `waitUntilAllOperationsAreFinished()` does.
    private var mayBeRunning: Bool {
        operations.indices.contains { added[$0] && !removed[$0] && mayHaveStarted[$0] }
    }

    // MARK: Steps

    public mutating func perform(_ step: Step) {
        if step.decidesStartOrder && mayBeRunning { startOrderIsDefined = false }
        apply(step)
        if mayBeRunning && maxConcurrentOperationCount != 1 { startOrderIsDefined = false }
        steps.append(step)
    }

    private mutating func apply(_ step: Step) {
        switch step {
        case .add(let index), .addBlock(let index):
            markAdded(index)
        case .addBatch(let indices, _):
            for index in indices { markAdded(index) }
        case .addBarrier(let number):
            barrierCount = number
            barrierPending = true
            addedBeforeBarrier[number] = operations.indices.filter { added[$0] }
        case .setSuspended(let suspended):
            isSuspended = suspended
            if !suspended {
                for index in operations.indices where added[index] && !removed[index] { mayHaveStarted[index] = true }
            }
        case .setMaxConcurrentOperationCount(let count):
            maxConcurrentOperationCount = count
        case .cancel(let index):
            cancelled[index] = true
        case .cancelAllOperations:
            for index in operations.indices where added[index] && !removed[index] { cancelled[index] = true }
        case .openGate(let index):
            gateOpen[index] = true
        case .cancelWhileRunning(let index):
            released[index] = true
        case .waitUntilAllOperationsAreFinished:
            for index in operations.indices where added[index] { removed[index] = true }
            barrierPending = false
        case .setPriority(let index, _):
            // Deliberate (start order): Linux's Foundation moves an operation whose
            // `queuePriority` changes after it was added to the end of its new band (and on a
            // serial queue may leave it where it was, having taken its old band from its QoS);
            // `Operations` keeps the order added. The start order is not recorded then.
            if added[index] && !removed[index] { startOrderIsDefined = false }
        case .setQualityOfService, .waitUntilFinished, .checkpoint:
            break
        }
    }

    private mutating func markAdded(_ index: Int) {
        added[index] = true
        mayHaveStarted[index] = !isSuspended
        barriersBefore[index] = Array(addedBeforeBarrier.keys).sorted()
    }
}

extension Step {
    /// Steps that change which operation starts next.
    var decidesStartOrder: Bool {
        switch self {
        case .add, .addBatch, .addBlock, .addBarrier, .setMaxConcurrentOperationCount, .cancel, .cancelAllOperations,
            .setPriority, .setQualityOfService, .openGate:
            true
        case .setSuspended, .cancelWhileRunning, .waitUntilFinished, .waitUntilAllOperationsAreFinished, .checkpoint:
            false
        }
    }
}

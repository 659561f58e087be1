// The hidden dependency that evaluates an operation's conditions.

/// Evaluates the conditions of one operation: the operation waits for it through a hidden
/// edge, and it waits for the operation's dependencies and for the operations the
/// conditions contribute. A failing condition cancels the guarded operation before this
/// one finishes, so the guarded operation's `main()` never runs.
///
/// - Note: `@unchecked Sendable`: its state is in a `Locked`.
final class ConditionEvaluator: TaskOperation<Void>, @unchecked Sendable {
    private struct State {
        weak var guarded: Operation?
        var conditions: [any OperationCondition] = []
        var contributed: [Operation] = []
        var isScheduled = false
        /// The categories to acquire once the conditions hold.
        var exclusivity: [String: ExclusivityMode] = [:]
    }

    private let state: Locked<State>

    init(guarding operation: Operation) {
        state = Locked(State(guarded: operation))
        super.init()
        name = "conditions of \(operation._shortName)"
    }

    /// Runs in its guarded operation's queue, unlisted.
    override var _isHiddenMember: Bool { true }

    func _append(_ condition: any OperationCondition, dependency: Operation?) {
        state.withLock { state in
            state.conditions.append(condition)
            if let dependency { state.contributed.append(dependency) }
        }
        if let dependency { addDependency(dependency) }
    }

    func _appendExclusivity(_ category: String, mode: ExclusivityMode) {
        state.withLock { state in
            // Exclusive wins over shared for the same category.
            if state.exclusivity[category] != .exclusive { state.exclusivity[category] = mode }
        }
    }

    /// The contributed operations that are in no queue yet.
    func _idleContributed() -> [Operation] {
        let contributed = state.withLock { $0.contributed }
        var idle: [Operation] = []
        for operation in contributed where !idle.contains(where: { $0 === operation }) {
            let isIdle = operation._update { state in
                if case .idle = state.phase, state.queue == nil { return true }
                return false
            }
            if isIdle { idle.append(operation) }
        }
        return idle
    }

    /// Joins `queue` with the contributed operations that are in no queue yet; once.
    func _schedule(on queue: OperationQueue) {
        let contributed = state.withLock { state -> [Operation]? in
            guard !state.isScheduled else { return nil }
            state.isScheduled = true
            return state.contributed
        }
        guard contributed != nil else { return }
        let joining = _idleContributed()
        // In a group, they joined it as children before the guarded child did (see
        // `GroupOperation.addChild`); one still idle joins now, unless the group has
        // finished its children, the guarded one among them: then nobody needs them.
        if let group = (queue as? GroupChildQueue)?.group {
            for operation in joining where !group._addContributed(operation) { return }
            queue.addOperations([self], waitUntilFinished: false)
        } else {
            queue.addOperations(joining + [self], waitUntilFinished: false)
        }
    }

    /// Conditions are evaluated on lanes of their own, not on Swift's cooperative pool: a
    /// guarded operation must not wait for threads that blocking code (a test waiting on a
    /// semaphore, a `waitUntilFinished()`) may be holding.
    override var _preferredExecutor: (any TaskExecutor)? { CompositionExecutor.shared }

    override func run() async throws {
        let (guarded, conditions, exclusivity) = state.withLock { ($0.guarded, $0.conditions, $0.exclusivity) }
        guard let guarded else { return }
        for condition in conditions {
            if guarded.isCancelled { return }
            do {
                try await condition.evaluate(for: guarded)
            } catch {
                guarded.cancel(with: error)
                return
            }
        }
        Self._acquire(exclusivity, for: guarded)
    }

    /// With no condition to evaluate, the categories are asked for at once, on the thread
    /// that starts the evaluator: requests then come in the order the operations became
    /// ready (a task per request would reach the lanes in a scrambled order).
    override func _finishesWithoutTask() -> Bool {
        let (guarded, hasConditions, exclusivity) = state.withLock { ($0.guarded, !$0.conditions.isEmpty, $0.exclusivity) }
        guard !hasConditions else { return false }
        if let guarded { Self._acquire(exclusivity, for: guarded) }
        _deliver(())
        return true
    }

    /// The categories the guarded operation holds while it runs.
    var _exclusivity: [String: ExclusivityMode] { state.withLock { $0.exclusivity } }

    /// Asks for the categories only now, with the dependencies done and the conditions
    /// held, so that a granted category is never held by an operation that still waits
    /// for another.
    ///
    /// A category that an owner of the operation's queue holds (its group, or its retry,
    /// at any level up) is asked for inside that owner's scope: the owner's children
    /// contend for it among themselves, not with the owner, which holds it until they have
    /// finished. Exclusive access inside an owner that only shares the category could
    /// never be granted: the operation is cancelled with an ``ExclusivityError``.
    private static func _acquire(_ exclusivity: [String: ExclusivityMode], for guarded: Operation) {
        guard !exclusivity.isEmpty, !guarded.isCancelled else { return }
        let holders = _holdingOwners(above: guarded)
        var needs: [(category: String, mode: ExclusivityMode)] = []
        for (category, mode) in exclusivity {
            guard let (owner, held) = holders.lazy.compactMap({ owner, categories in categories[category].map { (owner, $0) } }).first else {
                needs.append((category, mode))
                continue
            }
            if held == .shared, mode == .exclusive {
                guarded.cancel(with: ExclusivityError(category: category, operation: guarded._misuseName, owner: owner._misuseName))
                return
            }
            needs.append(("\(category)\u{1F}\(UInt(bitPattern: ObjectIdentifier(owner).hashValue))", mode))
        }
        needs.sort { $0.category < $1.category }
        // Inside an owner that holds categories, requests waiting in line may be waiting
        // for that owner, which waits for this operation: it does not queue behind them.
        ExclusivityManager.acquire(needs, named: exclusivity.keys.sorted(), insideHolder: !holders.isEmpty, for: guarded)
    }

    /// The owners of the queues above `operation` (its group, the group's group…, or a
    /// retry) that hold categories, nearest first, with their categories.
    private static func _holdingOwners(above operation: Operation) -> [(Operation, [String: ExclusivityMode])] {
        var holders: [(Operation, [String: ExclusivityMode])] = []
        var queue = operation._update { $0.queue }
        while let owned = queue as? OwnedOperationQueue, let owner = owned.owner {
            if let held = owner._conditionEvaluator?._exclusivity, !held.isEmpty { holders.append((owner, held)) }
            queue = owner._update { $0.queue }
        }
        return holders
    }

    /// An evaluator that is cancelled (a queue's `cancelAllOperations()`) never lets its
    /// operation run unchecked: it cancels it too.
    override func cancel() {
        super.cancel()
        let guarded = state.withLock { $0.guarded }
        guarded?.cancel()
    }

    override func _releaseWork() {
        super._releaseWork()
        let released = state.withLock { state in
            defer { state.conditions = []; state.contributed = [] }
            return (state.conditions, state.contributed)
        }
        _ = released
    }
}

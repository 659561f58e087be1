// The gate that evaluates an operation's conditions.

@_spi(Engine) import Operations

/// Evaluates the conditions of one operation, as a gate of the engine: consulted once the
/// operation's dependencies have finished (also ones added later), it adds the operations
/// the conditions contribute to the operation's queue, evaluates each condition as soon as
/// its contributed operation has finished (at once when it has none), and admits the
/// operation when every condition holds. The first condition to fail decides: the
/// operation is cancelled with its error at once, whatever is still being evaluated.
///
/// - Note: `@unchecked Sendable`: its state is in a `Locked`.
final class ConditionGate: ExplainedGate, @unchecked Sendable {
    /// A condition, kept without an existential box when it is a `BlockCondition` (the
    /// common case), and whether it can decide without suspending known when it was added.
    private enum Stored {
        case block(BlockCondition)
        case immediate(any ImmediateCondition)
        case general(any OperationCondition)
    }

    private struct Entry {
        var stored: Stored
        var contributed: Operation?

        var name: String {
            switch stored {
            case .block(let condition): condition.name
            case .immediate(let condition): condition.name
            case .general(let condition): condition.name
            }
        }

        /// The decision, when it needs no suspension.
        func decideWithoutSuspending(for operation: Operation) -> Result<Void, any Error>? {
            switch stored {
            case .block(let condition): condition.decideWithoutSuspending(for: operation)
            case .immediate(let condition): condition.decideWithoutSuspending(for: operation)
            case .general: nil
            }
        }

        func evaluate(for operation: Operation) async throws {
            switch stored {
            case .block(let condition): try await condition.evaluate(for: operation)
            case .immediate(let condition): try await condition.evaluate(for: operation)
            case .general(let condition): try await condition.evaluate(for: operation)
            }
        }
    }

    /// The entries in the order added: the first inline (most operations have one).
    private struct Entries {
        private var first: Entry?
        private var others: [Entry] = []

        var count: Int { first == nil ? 0 : 1 + others.count }

        var all: [Entry] { first.map { [$0] + others } ?? [] }

        mutating func append(_ entry: Entry) {
            if first == nil { first = entry } else { others.append(entry) }
        }

        func forEach(_ body: (Entry) -> Void) {
            guard let first else { return }
            body(first)
            for entry in others { body(entry) }
        }

        var contributed: [Operation] {
            guard let first else { return [] }
            if others.isEmpty { return first.contributed.map { [$0] } ?? [] }
            return ConditionGate._distinct(all.compactMap(\.contributed))
        }
    }

    /// One consultation: what is left to decide and what to stop when it ends.
    private struct Round {
        var round: UInt32
        var remaining: Int
        var isDecided = false
        var tasks: [Task<Void, Never>] = []
        var hooks: [(Operation, UInt64)] = []
    }

    private struct State {
        var entries = Entries()
        var current: Round?
        /// The guarded operation's interest in its contributed operations is counted (at the
        /// first consultation).
        var hasCountedInterest = false
        /// The guarded operation was cancelled or finished: it no longer needs them.
        var hasEnded = false
        /// Rounds released before (or while) they were consulted.
        var releasedRounds: Set<UInt32> = []
    }

    private let state = Locked(State())

    /// Consulted before any other gate: categories are asked for only once the conditions hold.
    var rank: Int { 0 }

    /// The operations the conditions contributed, each once.
    var _contributed: [Operation] { state.withLock { $0.entries.contributed } }

    func append<Condition: OperationCondition>(_ condition: Condition, contributed: Operation?) {
        let stored: Stored
        if let block = condition as? BlockCondition {
            stored = .block(block)
        } else if let immediate = condition as? any ImmediateCondition {
            stored = .immediate(immediate)
        } else {
            stored = .general(condition)
        }
        state.withLock { $0.entries.append(Entry(stored: stored, contributed: contributed)) }
    }

    func consult(_ pass: GatePass) {
        let guarded = pass.operation
        // One section decides the round, and counts the interest in the contributed
        // operations with it, so that a release cannot fall between the two.
        let decided = state.withLock { state -> (entries: Entries, joining: [Operation])? in
            guard !state.hasEnded, !state.releasedRounds.contains(pass.round) else { return nil }
            state.current = Round(round: pass.round, remaining: state.entries.count)
            var joining: [Operation] = []
            if !state.hasCountedInterest {
                state.hasCountedInterest = true
                for operation in state.entries.contributed {
                    let joins = operation._withLayerValue(ConditionInterest.init) { interest, isIdle -> Bool in
                        interest.count += 1
                        // The first guarded operation to find it in no queue makes it join.
                        guard isIdle, !interest.joinedForConditions else { return false }
                        interest.joinedForConditions = true
                        return true
                    }
                    if joins { joining.append(operation) }
                }
            }
            return (state.entries, joining)
        }
        guard let (entries, joining) = decided else { return }
        if !joining.isEmpty { Self._join(joining, for: guarded) }
        if entries.count == 0 {
            pass.admit()
            return
        }
        entries.forEach { entry in
            guard let contributed = entry.contributed else {
                _evaluate(entry, pass)
                return
            }
            let hook = contributed._onFinish(for: .operation(WeakOperationReference(guarded))) { [self] _ in _evaluate(entry, pass) }
            if let hook {
                let kept = state.withLock { state -> Bool in
                    guard state.current?.round == pass.round, state.current?.isDecided == false else { return false }
                    state.current!.hooks.append((contributed, hook))
                    return true
                }
                if !kept { contributed._removeFinishHook(hook) }
            }
        }
    }

    fileprivate static func _distinct(_ operations: [Operation]) -> [Operation] {
        var distinct: [Operation] = []
        for operation in operations where !distinct.contains(where: { $0 === operation }) { distinct.append(operation) }
        return distinct
    }

    /// The contributed operations that were in no queue join the guarded operation's queue
    /// (a group's queue: as children of the group) as its prerequisites: ahead of barriers
    /// added after it, in its place in line.
    private static func _join(_ joining: [Operation], for guarded: Operation) {
        guard let queue = guarded._queue else { return }
        for operation in joining {
            // Run on the guarded operation's behalf: never above it, nor below.
            operation._takeQualityAndPriorityNotSet(from: guarded)
            if let group = (queue as? GroupChildQueue)?.group {
                group._addContributed(operation, for: guarded)
            } else {
                queue._addPrerequisite(operation, of: guarded)
            }
        }
    }

    /// Evaluates one condition for `pass`'s round, on the calling thread when it can be
    /// decided without suspending, else in a task on the composition lanes.
    private func _evaluate(_ entry: Entry, _ pass: GatePass) {
        let guarded = pass.operation
        guard state.withLock({ $0.current?.round == pass.round && $0.current?.isDecided == false }) else { return }
        if let result = entry.decideWithoutSuspending(for: guarded) {
            switch result {
            case .success: _decided(pass, failure: nil)
            case .failure(let error): _decided(pass, failure: error)
            }
            return
        }
        let task = Task(executorPreference: CompositionExecutor.shared) { [self] in
            do {
                try await entry.evaluate(for: guarded)
                _decided(pass, failure: nil)
            } catch {
                _decided(pass, failure: error)
            }
        }
        let kept = state.withLock { state -> Bool in
            guard state.current?.round == pass.round, state.current?.isDecided == false else { return false }
            state.current!.tasks.append(task)
            return true
        }
        if !kept { task.cancel() }
    }

    /// One condition decided: a failure decides the round (the operation is cancelled with
    /// its error); the last success admits the operation.
    private func _decided(_ pass: GatePass, failure: (any Error)?) {
        enum Decision { case none, admit, cancel(any Error) }
        let decision = state.withLock { state -> Decision in
            guard state.current?.round == pass.round, state.current?.isDecided == false else { return .none }
            if let failure {
                state.current!.isDecided = true
                return .cancel(failure)
            }
            state.current!.remaining -= 1
            guard state.current!.remaining == 0 else { return .none }
            state.current!.isDecided = true
            return .admit
        }
        switch decision {
        case .none: return
        case .admit: pass.admit()
        // The cancellation releases this gate: what is still evaluated stops, and what the
        // conditions contributed that nothing else needs is cancelled.
        case .cancel(let error): pass.operation.cancel(with: error)
        }
    }

    func release(_ pass: GatePass, because reason: GateRelease) {
        let (round, unneeded) = state.withLock { state -> (Round?, [Operation]) in
            var round: Round?
            if state.current?.round == pass.round {
                state.current!.isDecided = true
                round = state.current
                state.current!.tasks = []
                state.current!.hooks = []
            } else {
                state.releasedRounds.insert(pass.round)
            }
            guard reason != .dependencyAdded, !state.hasEnded else { return (round, []) }
            state.hasEnded = true
            guard state.hasCountedInterest else { return (round, []) }
            // Counted down in the section that ends, as they were counted in the one that
            // began: no join can fall between.
            var unneeded: [Operation] = []
            for operation in state.entries.contributed {
                let lastInterest = operation._withLayerValue(ConditionInterest.init) { interest -> Bool in
                    interest.count -= 1
                    return interest.count == 0 && interest.joinedForConditions
                }
                if lastInterest { unneeded.append(operation) }
            }
            return (round, unneeded)
        }
        if let round {
            for task in round.tasks { task.cancel() }
            for (operation, hook) in round.hooks { operation._removeFinishHook(hook) }
        }
        // Cancelled when nothing else wants it either (the wait graph: a dependent, another
        // guarded operation, a blocked thread, an awaiting task).
        Operation._cancelNotRunningFirst(unneeded.filter { !$0._isFinishing && !WaitGraph.isWanted($0) }, reason: nil)
    }

    /// The first condition not known to hold, and the contributed operation it waits for.
    func gateWait(for operation: Operation) -> Operation.GateWait {
        let entries = state.withLock { $0.entries.all }
        for entry in entries {
            if let contributed = entry.contributed, !contributed._isFinishing {
                return .condition(entry.name, waitsFor: contributed)
            }
        }
        return .condition(entries.first?.name ?? "?", waitsFor: nil)
    }
}

/// What the conditions of guarded operations know of an operation they contribute, kept
/// with it (under its lock).
/// - Note: `@unchecked Sendable`: reached only through `Operation._withLayerValue`, under
///   the operation's lock.
final class ConditionInterest: @unchecked Sendable {
    /// How many guarded operations wait for it.
    var count = 0
    /// It joined its queue because a condition contributed it.
    var joinedForConditions = false
}

/// A condition that can often decide without suspending: the gate then evaluates it on the
/// thread that consults it, with no task.
protocol ImmediateCondition: OperationCondition {
    /// The decision, or nil when it needs `evaluate(for:)` (which may suspend).
    func decideWithoutSuspending(for operation: Operation) -> Result<Void, any Error>?
}

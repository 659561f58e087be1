// The gate that evaluates an operation's conditions.

/// Evaluates the conditions of one operation, as a gate of the engine: consulted once the
/// operation's dependencies have finished (also ones added later), it adds the operations
/// the conditions contribute to the operation's queue, evaluates each condition as soon as
/// its contributed operation has finished (at once when it has none), and admits the
/// operation when every condition holds. The first condition to fail decides: the
/// operation is cancelled with its error at once, whatever is still being evaluated.
///
/// - Note: `@unchecked Sendable`: its state is in a `Locked`.
import Operations
final class ConditionGate: OperationGate, @unchecked Sendable {
    private struct Entry {
        var condition: any OperationCondition
        var contributed: Operation?
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
        var entries: [Entry] = []
        var current: Round?
        /// The contributed operations joined their queue (at the first consultation).
        var hasJoined = false
        /// The guarded operation was cancelled or finished: it no longer needs them.
        var hasDroppedInterest = false
    }

    private let state = Locked(State())

    /// Consulted before any other gate: categories are asked for only once the conditions hold.
    var rank: Int { 0 }

    func append(_ condition: any OperationCondition, contributed: Operation?) {
        state.withLock { $0.entries.append(Entry(condition: condition, contributed: contributed)) }
    }

    func consult(_ pass: GatePass) {
        let guarded = pass.operation
        let (entries, joins) = state.withLock { state -> ([Entry], Bool) in
            state.current = Round(round: pass.round, remaining: state.entries.count)
            defer { state.hasJoined = true }
            return (state.entries, !state.hasJoined)
        }
        if joins { Self._join(entries.compactMap(\.contributed), for: guarded) }
        if entries.isEmpty {
            pass.admit()
            return
        }
        for entry in entries {
            guard let contributed = entry.contributed else {
                _evaluate(entry.condition, pass)
                continue
            }
            let hook = contributed._onFinish { [self] _ in _evaluate(entry.condition, pass) }
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

    /// The contributed operations join the guarded operation's queue (a group's queue: as
    /// children of the group), unless they are in a queue already; each counts the guarded
    /// operation's interest in it.
    private static func _join(_ contributed: [Operation], for guarded: Operation) {
        var distinct: [Operation] = []
        for operation in contributed where !distinct.contains(where: { $0 === operation }) { distinct.append(operation) }
        guard let queue = guarded._queue else { return }
        for operation in distinct {
            operation._withLayerValue(ConditionInterest.init) { $0.count += 1 }
            guard operation._isIdle else { continue }
            operation._withLayerValue(ConditionInterest.init) { $0.joinedForConditions = true }
            if let group = (queue as? GroupChildQueue)?.group {
                group._addContributed(operation)
            } else {
                queue.addOperation(operation)
            }
        }
    }

    /// Evaluates one condition for `pass`'s round, on the calling thread when it can be
    /// decided without suspending, else in a task on the composition lanes.
    private func _evaluate(_ condition: any OperationCondition, _ pass: GatePass) {
        let guarded = pass.operation
        guard state.withLock({ $0.current?.round == pass.round && $0.current?.isDecided == false }) else { return }
        if let immediate = condition as? any ImmediateCondition, let result = immediate.decideWithoutSuspending(for: guarded) {
            switch result {
            case .success: _decided(pass, failure: nil)
            case .failure(let error): _decided(pass, failure: error)
            }
            return
        }
        let task = Task(executorPreference: CompositionExecutor.shared) { [self] in
            do {
                try await condition.evaluate(for: guarded)
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
        let (round, dropped) = state.withLock { state -> (Round?, [Operation]) in
            var round: Round?
            if state.current?.round == pass.round {
                state.current!.isDecided = true
                round = state.current
                state.current!.tasks = []
                state.current!.hooks = []
            }
            guard reason != .dependencyAdded, !state.hasDroppedInterest, state.hasJoined else { return (round, []) }
            state.hasDroppedInterest = true
            return (round, state.entries.compactMap(\.contributed))
        }
        if let round {
            for task in round.tasks { task.cancel() }
            for (operation, hook) in round.hooks { operation._removeFinishHook(hook) }
        }
        var distinct: [Operation] = []
        for operation in dropped where !distinct.contains(where: { $0 === operation }) { distinct.append(operation) }
        for operation in distinct { Self._dropInterest(in: operation) }
    }

    /// The guarded operation no longer needs `operation`: when no other guarded operation
    /// does, the conditions made it join its queue, and no operation depends on it, it is
    /// cancelled.
    private static func _dropInterest(in operation: Operation) {
        let unneeded = operation._withLayerValue(ConditionInterest.init) { interest -> Bool in
            interest.count -= 1
            return interest.count == 0 && interest.joinedForConditions
        }
        guard unneeded, !operation._isFinishing, operation._liveDependents.allSatisfy({ $0._isFinishing }) else { return }
        operation.cancel()
    }

    /// The first condition not known to hold, and the contributed operation it waits for.
    func waitReason(for operation: Operation) -> Operation.WaitReason {
        let entries = state.withLock { $0.entries }
        for entry in entries {
            if let contributed = entry.contributed, !contributed._isFinishing {
                return .condition(entry.condition.name, waitsFor: contributed)
            }
        }
        return .condition(entries.first?.condition.name ?? "?", waitsFor: nil)
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

// Cancelling many operations as one step: every cancel of several operations (a queue's,
// a group's, a batch's) goes through here.

extension Operation {
    /// Cancels every operation of `operations` with `reason` (nil: a plain `cancel()`), those
    /// not running first (see the form that takes a reason for each).
    package static func _cancelNotRunningFirst(_ operations: [Operation], reason: (any Error)?) {
        _cancelNotRunningFirst(operations.map { ($0, reason) })
    }

    /// Cancels each operation with its reason (nil: a plain `cancel()`): first those waiting
    /// (neither claimed by a worker nor started), then those a worker claimed and has not
    /// started, then the running ones; within each, the later in the dependency order first.
    ///
    /// Cancelling a running operation may end its work (its `cancel()` closes what its body
    /// reads) and free its queue's slot; so may cancelling a claimed one, whose start then
    /// finishes it without its work (decided under its lock). Whatever starts in a freed
    /// slot was waiting, and is cancelled already: its start too finishes it without its
    /// work. Cancelling one that waits frees no slot. Dependents before what they wait for:
    /// a cancelled dependency, passing through its queue, releases no dependent that is not
    /// cancelled yet.
    ///
    /// Where each operation is is read once, before the first cancel: one claimed after
    /// that read (in a slot freed by an operation that finished on its own) is cancelled
    /// with the waiting ones, and runs no work unless its start came before its cancel.
    ///
    /// - Note: Nested groups cancel their children through here, depth first on the
    ///   cancelling thread's stack: this frame is one per level, so it keeps few locals.
    package static func _cancelNotRunningFirst(_ members: [(operation: Operation, reason: (any Error)?)]) {
        for index in _cancellationOrder(members) {
            let (operation, reason) = members[index]
            if let reason { operation.cancel(with: reason) } else { operation.cancel() }
        }
    }

    /// The indices of `members` in the order `_cancelNotRunningFirst` cancels them: by how
    /// far each is towards running, then the highest dependency-order position first.
    private static func _cancellationOrder(_ members: [(operation: Operation, reason: (any Error)?)]) -> [Int] {
        let keys = members.map { member in
            (stage: member.operation._startStage, position: member.operation._position.load(ordering: .relaxed))
        }
        return keys.indices.sorted { a, b in
            keys[a].stage != keys[b].stage ? keys[a].stage < keys[b].stage : keys[a].position > keys[b].position
        }
    }

    /// How far the operation is towards running. A claimed one whose `isExecuting` reads
    /// true is an asynchronous subclass's, started (the getter is read with no lock held).
    private var _startStage: OperationCore.Phase.StartStage {
        let stage = _readState { $0.phase.startStage }
        return stage == .claimed && isExecuting ? .started : stage
    }
}

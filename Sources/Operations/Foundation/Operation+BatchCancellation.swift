// Cancelling many operations as one step: every cancel of several operations (a queue's,
// a group's, a batch's) goes through here.

extension Operation {
    /// Cancels every operation of `operations` with `reason` (nil: a plain `cancel()`), those
    /// not running first (see the form that takes a reason for each).
    package static func _cancelNotRunningFirst(_ operations: [Operation], reason: (any Error)?) {
        _cancelNotRunningFirst(operations.map { ($0, reason) })
    }

    /// Cancels each operation with its reason (nil: a plain `cancel()`): first those that no
    /// worker has claimed and that have not started, then the others, each group the later
    /// in the dependency order first.
    ///
    /// Cancelling a running operation may end its work (its `cancel()` closes what its body
    /// reads) and free its queue's slot; the next operation of that queue to start in it is
    /// then already cancelled, and its start finishes it without running its work (decided
    /// under its lock). Cancelling one that waits frees no slot. Dependents before what they
    /// wait for: a cancelled dependency, passing through its queue, releases no dependent
    /// that is not cancelled yet.
    ///
    /// Where each operation is is read once, before the first cancel: an operation claimed
    /// after that read (in a slot freed by one that finished on its own) is still cancelled
    /// with the waiting ones, and finishes without its work unless its start came first.
    ///
    /// - Note: Nested groups cancel their children through here, depth first on the
    ///   cancelling thread's stack: this frame is one per level, so it keeps few locals.
    package static func _cancelNotRunningFirst(_ members: [(operation: Operation, reason: (any Error)?)]) {
        for index in _cancellationOrder(members) {
            let (operation, reason) = members[index]
            if let reason { operation.cancel(with: reason) } else { operation.cancel() }
        }
    }

    /// The indices of `members` in the order `_cancelNotRunningFirst` cancels them: those
    /// neither claimed nor started, then the others, each the highest dependency-order
    /// position first.
    private static func _cancellationOrder(_ members: [(operation: Operation, reason: (any Error)?)]) -> [Int] {
        let keys = members.map { member in
            (running: member.operation._update { $0.phase.isClaimedOrStarted },
             position: member.operation._position.load(ordering: .relaxed))
        }
        return keys.indices.sorted { a, b in
            keys[a].running != keys[b].running ? !keys[a].running : keys[a].position > keys[b].position
        }
    }
}

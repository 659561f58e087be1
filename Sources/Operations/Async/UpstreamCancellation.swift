// Cancellation that travels up a chain of typed operations, and batches cancelled as one
// step.

/// Cancels the inputs that cancelled stages leave unwanted, level by level, on the
/// cancelling thread: a chain of any length takes a bounded stack (a cancel made while
/// this thread propagates is collected, not followed at once).
enum UpstreamCancellation {
    /// The stages cancelled on this thread whose inputs are still to be looked at.
    /// - Note: `@unchecked Sendable`: only the thread whose thread-local slot points at it
    ///   touches it.
    private final class Pending: @unchecked Sendable {
        var stages: [(stage: Operation, inputs: [Operation])] = []
    }

    private static let current = ThreadLocalPointer()

    /// `stage`, which takes `inputs`, was cancelled.
    static func stageCancelled(_ stage: Operation, inputs: [Operation]) {
        run { $0.stages.append((stage, inputs)) }
    }

    /// Cancels `batch` as one step (see ``Operation/cancel(_:with:)``).
    static func cancel(_ batch: [Operation], with reason: (any Error)?) {
        run { _ in cancelNotRunningFirst(batch.map { ($0, reason) }) }
    }

    /// Cancels each operation with its reason: those not running first, so that a running
    /// one that stops frees its slot only when none of the others can take it.
    private static func cancelNotRunningFirst(_ members: [(Operation, reason: (any Error)?)]) {
        Operation._cancelNotRunningFirst(members)
    }

    /// Runs `body` with this thread's pending stages, then (outermost only) cancels, level by
    /// level, the inputs they left unwanted.
    private static func run(_ body: (Pending) -> Void) {
        if let pointer = current.value {
            body(Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue())
            return
        }
        let pending = Pending()
        current.set(Unmanaged.passUnretained(pending).toOpaque())
        defer {
            current.set(nil)
            withExtendedLifetime(pending) {}
        }
        body(pending)
        while !pending.stages.isEmpty {
            let stages = pending.stages
            pending.stages = []
            var unwanted: [(Operation, reason: (any Error)?)] = []
            var seen = Set<ObjectIdentifier>()
            for (stage, inputs) in stages {
                let reason = stage._cancellationReason
                for input in inputs where seen.insert(ObjectIdentifier(input)).inserted {
                    if input._isUnwanted { unwanted.append((input, reason)) }
                }
            }
            cancelNotRunningFirst(unwanted)
        }
    }
}

extension Operation {
    /// Whether nobody wants this operation any more, so that cancelling it loses nothing: it
    /// has neither finished nor been cancelled, and the wait graph finds nobody waiting for
    /// it (see `WaitGraph.isWanted(_:)`). (Getters read with no lock held.)
    var _isUnwanted: Bool {
        if isFinished || isCancelled { return false }
        return !WaitGraph.isWanted(self)
    }

    /// Cancels every operation of `batch`: those not running first, so that no member starts
    /// in a slot that cancelling a running member frees (cancelling them one by one in the
    /// order added would let the queue start later members; a member that finishes on its
    /// own meanwhile still frees its slot). With a `reason`, as ``cancel(with:)``.
    public static func cancel(_ batch: [Operation], with reason: (any Error)? = nil) {
        UpstreamCancellation.cancel(batch, with: reason)
    }
}

/// A queue's worker on Dispatch's shared pool, as the queue's state keeps it (part of
/// `WorkerPool`, under the queue's lock).
///
/// Operations that start promptly (their `start()` launches work and returns) are started
/// from the shared pool: the thread that finished the previous one, often a task's, takes
/// the start next, without a thread woken or made (see `QueueCore.WorkerStart`). The queue
/// must never wait for that pool, whose threads Swift's tasks share and which grows only
/// slowly while they block. So:
/// - at most one of the queue's workers is there at a time, and while it is (queued or
///   running) it takes the next prompt operation that becomes ready: no worker is woken
///   for that one (others ready at the same time get lanes' workers, so that starts that
///   take a while still overlap);
/// - a check, armed whenever the queue counts on that worker, fires a watchdog tick later.
///   A worker still queued then is replaced (its slot goes to a lane's worker, and it ends
///   at once when it begins); one that has begun but started nothing since while
///   operations wait (a `start()` that blocks) is stuck: the queue stops counting on it,
///   and lanes' workers take the waiting operations.
struct SharedPoolWorker {
    enum State {
        case none
        case queued(slot: Int, token: UInt64)
        /// `claims` counts the operations it claimed; `inStart` while it runs the `start()`
        /// of the last one; `stuck` when the check found it starting nothing while
        /// operations waited.
        case running(slot: Int, token: UInt64, claims: UInt64, inStart: Bool, stuck: Bool)
    }

    private(set) var state = State.none
    private var nextToken: UInt64 = 0
    /// The armed check, with what it saw when armed: the worker (`token`) and its claims.
    private var check: (token: UInt64, claims: UInt64)?
    /// A test turned the check off (see `OperationQueue._keepUnbegunSharedWorkersForTests()`).
    private var checksOff = false

    /// What the check found.
    enum CheckOutcome: Equatable {
        /// The worker had not begun: replaced, its slot (given) is free.
        case replaced(slot: Int)
        /// The worker has begun and started nothing since, while operations wait.
        case stuck
        /// The worker changed since the check was armed: it is armed again.
        case checkAgain
        /// Nothing to check: disarmed.
        case done
    }

    /// Whether a worker is there and the queue may count on it to take the next prompt
    /// operation that becomes ready: queued, or running between two operations (one inside
    /// a `start()` may be there for long: that `start()` may compute or block).
    var takesPromptOperations: Bool {
        switch state {
        case .none: false
        case .queued: true
        case .running(_, _, _, let inStart, let stuck): !inStart && !stuck
        }
    }

    var isPresent: Bool {
        if case .none = state { false } else { true }
    }

    /// A worker holding `slot` was queued on the pool; returns its token.
    mutating func queued(slot: Int) -> UInt64 {
        guard case .none = state else {
            preconditionFailure("Operations: a second worker queued on the shared pool (state \(state))")
        }
        nextToken &+= 1
        state = .queued(slot: slot, token: nextToken)
        return nextToken
    }

    /// The worker named `token` begins; false when it was replaced meanwhile (its slot is
    /// another worker's now: it ends at once, touching nothing).
    mutating func begins(token: UInt64) -> Bool {
        guard case .queued(let slot, token) = state else { return false }
        state = .running(slot: slot, token: token, claims: 0, inStart: false, stuck: false)
        return true
    }

    /// The running worker is back from a `start()`, in its next lock section.
    mutating func betweenOperations() {
        guard case .running(let slot, let token, let claims, _, let stuck) = state else { return }
        state = .running(slot: slot, token: token, claims: claims, inStart: false, stuck: stuck)
    }

    /// The running worker claimed an operation to start (a stuck one is no longer).
    mutating func claimed() {
        guard case .running(let slot, let token, let claims, _, _) = state else {
            preconditionFailure("Operations: a claim by the shared pool's worker in state \(state)")
        }
        state = .running(slot: slot, token: token, claims: claims &+ 1, inStart: true, stuck: false)
    }

    /// The worker of `slot` retired: if it is this one, none is there any more.
    mutating func retired(slot: Int) {
        switch state {
        case .queued(slot, _), .running(slot, _, _, _, _): state = .none
        default: break
        }
    }

    /// The queue counts on the worker: arms the check unless it is armed (or turned off);
    /// true when the caller must schedule it.
    mutating func armCheck() -> Bool {
        guard check == nil, !checksOff, let seen = seen else { return false }
        check = seen
        return true
    }

    /// The check is not armed from now on (for tests).
    mutating func turnChecksOff() {
        checksOff = true
    }

    /// The check fired; `operationsWait`: ready operations wait for a worker.
    mutating func checkFired(operationsWait: Bool) -> CheckOutcome {
        guard let armed = check else { return .done }
        check = nil
        guard let seen else { return .done }
        guard seen == armed else {
            check = seen
            return .checkAgain
        }
        switch state {
        case .none:
            return .done
        case .queued(let slot, _):
            state = .none
            return .replaced(slot: slot)
        case .running(let slot, let token, let claims, let inStart, let stuck):
            guard operationsWait, !stuck else { return .done }
            state = .running(slot: slot, token: token, claims: claims, inStart: inStart, stuck: true)
            return .stuck
        }
    }

    /// What the check compares: the worker there and how many operations it claimed.
    private var seen: (token: UInt64, claims: UInt64)? {
        switch state {
        case .none: nil
        case .queued(_, let token): (token, 0)
        case .running(_, let token, let claims, _, _): (token, claims)
        }
    }
}

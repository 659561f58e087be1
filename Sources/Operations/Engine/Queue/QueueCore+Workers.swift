// The queue's workers: how many run, on which lanes, and the watchdog that adds workers
// when the running ones are blocked.

import Dispatch

extension QueueCore {
    // MARK: Workers

    /// What the queue must do once its lock is released: start workers (each with its
    /// slot and the lane it runs on) and arm the watchdog.
    struct Wakeup {
        var workers: [(slot: Int, lane: DispatchQueue)] = []
        var watchdog: UInt64?
    }

    /// Starts the workers the state allows; arms the watchdog when ready operations wait
    /// for a worker that the limit does not allow yet.
    ///
    /// With an explicit limit, workers start eagerly up to it (the limit is exact). With
    /// the default limit, a worker starts only for ready operations beyond one per worker
    /// that is free to take one (not running an operation): small operations are drained
    /// by few workers that do not contend for the lock, a worker busy with a long
    /// operation does not keep the next one from a free processor, and the watchdog adds
    /// workers beyond the processors when the running ones are blocked.
    mutating func wakeup(force: Bool = false) -> Wakeup {
        var wakeup = Wakeup()
        guard !isSuspended, ready.count > 0 else { return wakeup }
        let freeWorkers = max(workers - executing, 0)
        let backlog = maxConcurrent < 0 && !force ? ready.count - freeWorkers : ready.count
        let wanted = min(workerLimit - workers, backlog, executionLimit - executing)
        for _ in 0..<max(wanted, 0) {
            let slot = (~busySlots).trailingZeroBitCount
            guard slot < Self.maximumWorkers else { break }
            busySlots |= 1 << UInt64(slot)
            workers += 1
            wakeup.workers.append((slot, lane(slot)))
        }
        wakeup.watchdog = armWatchdogIfBlocked()
        return wakeup
    }

    private mutating func lane(_ slot: Int) -> DispatchQueue {
        if isMain { return DispatchQueue.main }
        if let underlyingQueue { return underlyingQueue }
        if lanes.isEmpty { lanes = Array(repeating: nil, count: Self.maximumWorkers) }
        let quality = qualityOfService
        return lanes[slot].madeOnFirstUse {
            DispatchQueue(label: "swift-operations.lane.\(slot)", qos: DispatchQoS(quality))
        }
    }

    /// Whether a worker may start another operation now; when not, it retires
    /// (`retire(slot:)`). The caller pops the next ready operation and claims it under its
    /// own lock (see `OperationQueue._nextOperation(in:retiringSlot:skipped:)`).
    var mayStartAnother: Bool { !isSuspended && executing < executionLimit && workers <= workerLimit }

    /// Whether an operation may be started now on the thread that freed a slot (one whose
    /// `start()` never blocks): not with an underlying queue, whose operations start there
    /// as its owner asked.
    var mayStartInline: Bool { underlyingQueue == nil && !isSuspended && executing < executionLimit }

    /// Takes the first ready operation off the list. Operations popped and skipped (they
    /// finished or were started by hand meanwhile) are appended to `skipped`: the caller
    /// drops them after the lock, since the ready list's reference may be the last one.
    mutating func popReady(dropping skipped: inout [Operation]) -> Operation? {
        ready.pop(dropping: &skipped)
    }

    /// The first ready operation, left in the list (skipped ones as in `popReady`).
    mutating func peekReady(dropping skipped: inout [Operation]) -> Operation? {
        ready.peek(dropping: &skipped)
    }

    /// The popped operation was claimed (its state took `.claim`): it counts as executing.
    /// Returns the stamp to arm the watchdog with, when it must be armed.
    mutating func operationClaimed() -> UInt64? {
        executing += 1
        return armWatchdogIfBlocked()
    }

    /// An operation was claimed to start on the thread that freed a slot: it counts as
    /// executing (no worker waits, so the watchdog is not armed).
    mutating func operationClaimedInline() {
        executing += 1
    }

    /// A worker found nothing it may start: it ends, and its slot is free.
    mutating func retire(slot: Int) {
        workers -= 1
        busySlots &= ~(1 << UInt64(slot))
        if slot < workerProbes.count { workerProbes[slot] = nil }
    }

    /// A claimed operation was found not ready after all (its `isReady` read false) and
    /// was parked until its next readiness announcement: it no longer counts as executing.
    mutating func claimedOperationParked() {
        executing -= 1
    }

    /// With the default limit, operations may block (sleep, wait for I/O). While ready
    /// operations wait and every worker is busy, check again shortly; if no operation
    /// started meanwhile, the workers are blocked and one more is allowed.
    private mutating func armWatchdogIfBlocked() -> UInt64? {
        guard maxConcurrent < 0, !isMain, ready.count > 0, workers < Self.maximumWorkers, !isWatchdogArmed
        else { return nil }
        isWatchdogArmed = true
        return progressStamp
    }

    /// A worker of a queue with the default limit starts on the thread whose clock this is.
    mutating func workerStarted(slot: Int, probe: WorkerThreadProbe) {
        guard maxConcurrent < 0, !isMain else { return }
        if workerProbes.isEmpty { workerProbes = Array(repeating: nil, count: Self.maximumWorkers) }
        workerProbes[slot] = probe
    }

    /// The clocks of the running workers, for the watchdog to sample.
    var runningWorkerProbes: [(slot: Int, probe: WorkerThreadProbe)] {
        workerProbes.indices.compactMap { slot in workerProbes[slot].map { (slot, $0) } }
    }

    /// The watchdog fired. `blockedSlots` holds the slots whose workers the probe found
    /// blocked now (nil where threads cannot be probed).
    ///
    /// Workers are added only for workers blocked at two ticks in a row while no operation
    /// finished: CPU-bound operations run about one per processor, while operations that
    /// sleep or wait overlap as on Darwin. (One sample could catch a busy worker waiting a
    /// moment for a lock.) When every worker is blocked the allowance doubles, so that many
    /// sleeping operations all run within a few ticks.
    mutating func watchdogFired(stamp: UInt64, blockedSlots: UInt64?) -> Wakeup {
        isWatchdogArmed = false
        let confirmed = blockedSlots.map { $0 & blockedAtLastTick }
        blockedAtLastTick = blockedSlots ?? 0
        guard maxConcurrent < 0, !isSuspended, ready.count > 0 else { return Wakeup() }
        let running = max(grownWorkerLimit, workers)
        // Operations finished meanwhile: the workers progress.
        guard stamp == progressStamp else { return wakeup() }
        if let confirmed {
            let blocked = confirmed.nonzeroBitCount
            guard blocked > 0 else { return wakeup() }
            let allowance = blocked >= workers ? running * 2 : max(running, blocked + Self.processorCount)
            grownWorkerLimit = min(allowance, Self.maximumWorkers)
            return wakeup(force: true)
        }
        // No probes: no operation finished since the watchdog was armed means the workers
        // are blocked (this cannot tell them from long CPU-bound operations).
        grownWorkerLimit = min(running * 2, Self.maximumWorkers)
        return wakeup(force: true)
    }
}

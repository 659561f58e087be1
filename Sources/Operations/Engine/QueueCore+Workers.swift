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

    /// A worker asks for its next operation. Returns nil after retiring the worker when
    /// there is none it may start, and whether to arm the watchdog. Operations popped and
    /// skipped (they finished, were started by hand, or gained a dependency meanwhile) are
    /// appended to `skipped`: the caller drops them after the lock, since the ready list's
    /// reference may be the last one.
    /// The claimed operation comes with its own quality of service (nil when never set).
    mutating func nextOperation(
        retiringSlot slot: Int, skipped: inout [Operation]
    ) -> (operation: Operation?, quality: QualityOfService?, watchdog: UInt64?) {
        if !isSuspended && executing < executionLimit && workers <= workerLimit {
            while let operation = ready.pop(dropping: &skipped) {
                let claim = operation._update { state -> QualityOfService?? in
                    state.claimForQueue() ? .some(state.threadQuality) : nil
                }
                guard let quality = claim else {
                    skipped.append(operation)
                    continue
                }
                executing += 1
                return (operation, quality, armWatchdogIfBlocked())
            }
        }
        workers -= 1
        busySlots &= ~(1 << UInt64(slot))
        if slot < workerProbes.count { workerProbes[slot] = nil }
        return (nil, nil, nil)
    }

    /// Claims the next ready operation when it is one whose `start()` never blocks (see
    /// `Operation._startsWithoutBlocking`) and the queue may start one now; nil otherwise
    /// (a worker starts it). Skipped operations go to `skipped`, as in `nextOperation`.
    /// Not with an underlying queue: its operations start there, as its owner asked.
    mutating func nextOperation(startingWithoutBlocking skipped: inout [Operation]) -> Operation? {
        guard underlyingQueue == nil, !isSuspended, executing < executionLimit else { return nil }
        while let operation = ready.peek(dropping: &skipped), operation._startsWithoutBlocking {
            guard ready.pop(dropping: &skipped) === operation else {
                preconditionFailure("Operations: the ready list's front changed between peek and pop")
            }
            guard operation._update({ $0.claimForQueue() }) else {
                skipped.append(operation)
                continue
            }
            executing += 1
            return operation
        }
        return nil
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

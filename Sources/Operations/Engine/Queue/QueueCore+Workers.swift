// The queue's workers: how many run, on which lanes, and the watchdog that adds workers
// when the running ones are blocked.

import Dispatch

extension QueueCore {
    // MARK: Workers

    /// What the queue must do once its lock is released: start workers, arm the watchdog,
    /// and arm the check on the worker on the shared pool (`SharedPoolWorker`).
    struct Wakeup {
        var workers: [WorkerStart] = []
        var watchdog: UInt64?
        var sharedWorkerCheck = false
    }

    /// A worker to start: its slot, and the Dispatch queue it runs on.
    ///
    /// A worker whose first operation starts promptly (an asynchronous one: its `start()`
    /// launches work and returns) runs on Dispatch's shared pool (`sharedToken` set): capped
    /// at the processors, where Swift's tasks run too, so the thread that finished the
    /// previous operation (often a task's) takes the start next, without waking or making
    /// a thread. Every other worker runs on its slot's lane, a serial queue with a thread
    /// of its own, where an operation may block.
    ///
    /// The queue never waits for that pool (see `SharedPoolWorker`), and a worker there
    /// hands an operation that may block to a lane's worker.
    struct WorkerStart {
        var slot: Int
        var queue: DispatchQueue
        /// Set for the worker on the shared pool: it names it when it begins.
        var sharedToken: UInt64?
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
    mutating func wakeup(force: Bool = false, sharedPoolAllowed: Bool = true) -> Wakeup {
        var wakeup = Wakeup()
        guard !isSuspended, ready.count > 0 else { return wakeup }
        let freeWorkers = max(pool.count - executing, 0)
        let backlog = limit.growsWhenBlocked && !force ? ready.count - freeWorkers : ready.count
        let wanted = min(workerLimit - pool.count, backlog, limit.executions - executing)
        guard wanted > 0 else {
            wakeup.watchdog = armWatchdogIfBlocked()
            return wakeup
        }
        // Workers added for blocked ones (`force`) get threads of their own.
        var shared = !force && sharedPoolAllowed && startsOnSharedPool
        var toStart = wanted
        if shared && pool.shared.takesPromptOperations {
            // The worker there has a lock section to come: it takes one operation (the
            // others, if any, get lanes' workers, so that starts that take a while overlap).
            wakeup.sharedWorkerCheck = pool.shared.armCheck()
            toStart -= 1
            guard toStart > 0 else {
                wakeup.watchdog = armWatchdogIfBlocked()
                return wakeup
            }
        }
        shared = shared && !pool.shared.isPresent
        for _ in 0..<toStart {
            guard let slot = pool.takeSlot() else { break }
            guard shared else {
                wakeup.workers.append(WorkerStart(slot: slot, queue: lane(slot)))
                continue
            }
            shared = false
            let token = pool.shared.queued(slot: slot)
            wakeup.workers.append(WorkerStart(slot: slot, queue: sharedPoolQueue, sharedToken: token))
            if pool.shared.armCheck() { wakeup.sharedWorkerCheck = true }
        }
        wakeup.watchdog = armWatchdogIfBlocked()
        return wakeup
    }

    /// Whether the next worker starts on the shared pool (see `WorkerStart`): the first
    /// ready operation starts promptly, and the queue has no Dispatch queue of its own.
    private var startsOnSharedPool: Bool {
        mutating get {
            !isMain && underlyingQueue == nil && ready.peek()?._startsPromptly == true
        }
    }

    /// The shared pool for the queue's quality of service (or the one a test put in its place).
    private var sharedPoolQueue: DispatchQueue {
        mutating get {
            sharedPoolForTests ?? WorkerPool.sharedPool(threadQualityOfService)
        }
    }

    /// The worker on the shared pool named `token` begins: false when it was replaced
    /// meanwhile (its slot is another worker's now: it ends at once, touching nothing).
    mutating func sharedWorkerBegins(token: UInt64) -> Bool {
        pool.shared.begins(token: token)
    }

    /// The check on the shared pool's worker fired (see `SharedPoolWorker`): when that
    /// worker was replaced or is stuck, the workers the state wants start on lanes.
    mutating func sharedWorkerCheckFired() -> Wakeup {
        let outcome = pool.shared.checkFired(operationsWait: !isSuspended && ready.count > 0)
        switch outcome {
        case .replaced(let slot):
            pool.retire(slot: slot)
            return wakeup(sharedPoolAllowed: false)
        case .stuck:
            return wakeup(sharedPoolAllowed: false)
        case .checkAgain:
            var wakeup = Wakeup()
            wakeup.sharedWorkerCheck = true
            return wakeup
        case .done:
            return Wakeup()
        }
    }

    private mutating func lane(_ slot: Int) -> DispatchQueue {
        if isMain { return DispatchQueue.main }
        if let underlyingQueue { return underlyingQueue }
        return pool.lane(slot, quality: threadQualityOfService)
    }

    /// Whether a worker may start another operation now; when not, it retires
    /// (`retire(slot:)`). The caller pops the next ready operation and claims it under its
    /// own lock (see `OperationQueue._nextOperation(in:retiringSlot:skipped:)`).
    var mayStartAnother: Bool { mutating get { !isSuspended && executing < limit.executions && pool.count <= workerLimit } }


    /// Whether an operation may be started now on the thread that freed a slot (one whose
    /// `start()` never blocks): not with an underlying queue, whose operations start there
    /// as its owner asked.
    var mayStartInline: Bool { mutating get { underlyingQueue == nil && !isSuspended && executing < limit.executions } }

    /// A worker found nothing it may start: it ends, and its slot is free.
    mutating func retire(slot: Int) {
        pool.retire(slot: slot)
    }

    /// Whether the watchdog adds workers for blocked ones: the default limit, not the main queue.
    var growsWhenBlocked: Bool { mutating get { limit.growsWhenBlocked && !isMain } }

    /// With the default limit, operations may block (sleep, wait for I/O). While ready
    /// operations wait and every worker is busy, check again shortly; if no operation
    /// started meanwhile, the workers are blocked and one more is allowed.
    mutating func armWatchdogIfBlocked() -> UInt64? {
        guard growsWhenBlocked, ready.count > 0, pool.count < WorkerPool.maximum, pool.armWatchdog()
        else { return nil }
        return progressStamp
    }

    /// A worker of a queue with the default limit starts on the thread `probe` reads.
    mutating func workerStarted(slot: Int, probe: WorkerThreadProbe) {
        guard growsWhenBlocked else { return }
        pool.started(slot: slot, probe: probe)
    }

    /// What the watchdog reads of the running workers under the lock, by slot.
    var workerSamples: [(slot: Int, sample: WorkerThreadProbe.Sample)] { pool.samples }

    /// The watchdog fired. `blockedSlots` holds the slots whose workers it found blocked
    /// now, `waitingForLockSlots` those it found waiting to take a lock (see
    /// `WorkerThreadProbe`).
    ///
    /// Workers are added only for workers blocked at two ticks in a row while no operation
    /// finished: CPU-bound operations run about one per processor, while operations that
    /// sleep or wait overlap as on Darwin. (One sample could catch a busy worker waiting a
    /// moment for a lock.) A worker waiting for a lock does not count while operations
    /// finish: when producers and workers keep the queue's lock busy, more workers would
    /// only make that wait longer. After `WorkerPool.ticksBeforeLockWaitsCount` ticks
    /// without a finish it counts: the lock's holder may wait for an operation that needs
    /// a worker. When every worker is blocked the allowance doubles, so that many sleeping
    /// operations all run within a few ticks.
    mutating func watchdogFired(stamp: UInt64, blockedSlots: UInt64, waitingForLockSlots: UInt64) -> Wakeup {
        let stalled = pool.ticked(progressed: stamp != progressStamp) >= WorkerPool.ticksBeforeLockWaitsCount
        let confirmed = pool.watchdogFired(blockedSlots: stalled ? blockedSlots | waitingForLockSlots : blockedSlots)
        guard growsWhenBlocked, !isSuspended, ready.count > 0 else { return Wakeup() }
        // Operations finished meanwhile: the workers progress.
        guard stamp == progressStamp else { return wakeup() }
        let blocked = confirmed.nonzeroBitCount
        guard blocked > 0 else { return wakeup() }
        let running = max(pool.grownLimit, pool.count)
        pool.grow(to: blocked >= pool.count ? running * 2 : max(running, blocked + WorkerPool.processorCount))
        return wakeup(force: true)
    }
}

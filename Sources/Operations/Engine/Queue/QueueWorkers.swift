// How a queue runs its operations, as the holder of its lock: ready operations go into the
// ready list; workers on Dispatch drain it; finished operations free their slot and leave.

extension OperationQueue {
    /// Called (no lock held) when one of this queue's operations becomes ready.
    final func _operationBecameReady(_ operation: Operation, priority: Operation.QueuePriority) {
        let wakeup = _withQueueLock { state in
            state.deliver(operation, priority: priority)
            return state.wakeup()
        }
        _perform(wakeup)
    }

    /// Whether `operation`'s gates may be consulted now: not while the queue is suspended
    /// (then it is consulted when the queue resumes).
    final func _mayConsultGates(of operation: Operation) -> Bool {
        _withQueueLock { $0.mayConsultGates(of: operation) }
    }

    /// Whether the queue is suspended now; if it is, `action` runs (no lock held) once it
    /// resumes.
    final func _deferUntilResumed(_ action: @escaping @Sendable () -> Void) -> Bool {
        _withQueueLock { $0.deferUntilResumed(action) }
    }

    /// Whether the queue is suspended now.
    final var _isSuspendedNow: Bool { _withQueueLock { $0.isSuspended } }

    /// Called (no lock held) when one of this queue's operations finished. Returns the
    /// waits it ends, for the caller to wake once the operation's observers were told.
    /// `announcing`: the operation's observers are told once it has left (``_finishAnnounced(_:)``
    /// follows), and until then the queue does not count as empty for its waits.
    final func _operationFinished(
        _ operation: Operation, releasesSlot: Bool, leaves: Bool, announcing: Bool = false,
        deferrable: Bool = true
    ) -> [QueueWaiter] {
        // Counted before leaving, so that whoever sees the queue empty sees the progress.
        if leaves { _countProgress() }
        let observed = leaves && _hasObservers
        // An observed operation leaves now: the observers of its `isFinished`, told before
        // its worker's next lock, must find it gone.
        if releasesSlot && leaves && deferrable && !observed && !announcing && !operation._hasObservers,
            WorkerContext.finishedHere(operation, queue: self)
        {
            return []
        }
        if observed { _membershipWillChange() }
        // An operation whose start() never blocks (an async body's task) frees its slot on
        // the thread its body ended on: that thread starts the next such operation itself,
        // instead of a hop to a worker and back.
        let startsInline = releasesSlot && operation._startsWithoutBlocking
        var skipped: [Operation] = []
        let (waiters, wakeup, next) = _withQueueLock { state in
            let waiters = _departed(
                operation, from: &state, releasesSlot: releasesSlot, leaves: leaves, announcing: announcing && leaves)
            let next = startsInline ? _nextOperationStartingWithoutBlocking(in: &state, skipped: &skipped) : nil
            return (waiters, state.wakeup(), next)
        }
        if !skipped.isEmpty { skipped.removeAll() }
        if observed { _membershipDidChange() }
        _perform(wakeup)
        if let next { _startInline(next) }
        return waiters
    }

    /// The observers of an operation that left with `announcing` were told: returns the
    /// waits that end now.
    final func _finishAnnounced() -> [QueueWaiter] {
        _withQueueLock { $0.finishAnnounced() }
    }

    final func _perform(_ wakeup: QueueCore.Wakeup) {
        // Guarded: iterating even an empty array is costly in an unoptimized build.
        if !wakeup.workers.isEmpty {
            for worker in wakeup.workers {
                let (slot, token) = (worker.slot, worker.sharedToken)
                worker.queue.async { self._runWorker(slot: slot, sharedToken: token) }
            }
        }
        if let stamp = wakeup.watchdog { _armWatchdog(stamp: stamp) }
        if wakeup.sharedWorkerCheck { _armSharedWorkerCheck() }
    }

    /// In a watchdog tick, checks that the queue's worker on the shared pool began and
    /// progresses (see `SharedPoolWorker`).
    private func _armSharedWorkerCheck() {
        Self._watchdogTimer.asyncAfter(deadline: .now() + .milliseconds(4)) {
            self._perform(self._withQueueLock { $0.sharedWorkerCheckFired() })
        }
    }

    /// A worker: runs ready operations until there is none it may start (on the shared
    /// pool, `sharedToken` set: none that starts promptly).
    private func _runWorker(slot: Int, sharedToken: UInt64?) {
        let onSharedPool = sharedToken != nil
        var beginning = sharedToken
        let context = WorkerContext(queue: self, slot: slot, onSharedPool: onSharedPool)
        let previous = OperationQueue._current.value
        OperationQueue._current.set(Unmanaged.passUnretained(context).toOpaque())
        defer {
            OperationQueue._current.set(previous)
            context.restoreThreadQualityOfService()
        }
        // Registered in the first lock section, for the watchdog (default limit only).
        var probe: WorkerThreadProbe? = WorkerThreadProbe(worker: context)
        var finished: Operation?
        var skipped: [Operation] = []
        while true {
            let step = _withQueueLock { state -> WorkerStep? in
                // Replaced by a lane's worker while it waited for the shared pool: the slot
                // is not its own any more.
                if let token = beginning, !state.sharedWorkerBegins(token: token) { return nil }
                if onSharedPool { state.pool.shared.betweenOperations() }
                if let probe { state.workerStarted(slot: slot, probe: probe) }
                var waiters: [QueueWaiter] = []
                if let finished { waiters = _departed(finished, from: &state, releasesSlot: true, leaves: true) }
                let (operation, quality, watchdog) = _nextOperation(
                    in: &state, retiringSlot: slot, onSharedPool: onSharedPool, skipped: &skipped)
                // A worker on the shared pool that stops before an operation that may block
                // asks for a lane's worker for it.
                let handsOver = onSharedPool && operation == nil
                return WorkerStep(
                    operation: operation, quality: quality, watchdog: watchdog, waiters: waiters,
                    wakeup: finished == nil && !handsOver ? nil : state.wakeup())
            }
            guard let step else { return }
            beginning = nil
            finished = nil
            probe = nil
            // Dropped after the lock: an operation skipped there may have no other reference.
            if !skipped.isEmpty { skipped.removeAll() }
            if let wakeup = step.wakeup { _perform(wakeup) }
            if !step.waiters.isEmpty { for waiter in step.waiters { waiter.wake() } }
            if let watchdog = step.watchdog { _armWatchdog(stamp: watchdog) }
            guard let operation = step.operation else {
                #if DEBUG
                if WorkerPausePoints.workerEnded.hasActions {
                    WorkerPausePoints.workerEnded.pass(self, _withQueueLock { $0.pool.count })
                }
                #endif
                return
            }
            guard _confirmReady(operation) else { continue }
            if hasEventHandlers.load(ordering: .relaxed) { _recordStart(of: operation, slot: slot) }
            context.runOperation(operation, own: step.quality, queueQuality: _threadQuality)
            if context.finishedHere {
                context.finishedHere = false
                finished = operation
            }
            #if DEBUG
            WorkerPausePoints.betweenOperations.pass(self, ())
            #endif
        }
    }

    /// `operation`, claimed, starts now (in `slot`; nil: on the thread that freed a slot):
    /// its `started` event, unless something finished it meanwhile.
    func _recordStart(of operation: Operation, slot: Int?) {
        operation._update { state in
            if case .dispatched = state.phase { self._starts(operation, slot: slot) }
        }
        _eventsRecorded()
    }

    /// The queue's quality of service, for the threads that run its operations (read
    /// without the lock on every start).
    var _threadQuality: QualityOfService {
        QualityOfService(rawValue: _threadQualityRawValue.load(ordering: .relaxed)) ?? .default
    }

    /// A worker claimed `operation`; its (possibly overridden) `isReady` must still read
    /// true. If it reads false (a condition closed again after announcing it was open),
    /// give the slot back and park the operation until its next `isReady` announcement.
    /// The readiness generation, read before the getter, makes sure an announcement that
    /// arrives meanwhile is not lost. An operation that finished or was cancelled meanwhile
    /// is the worker's to start (its `start()` finishes or ignores it).
    func _confirmReady(_ operation: Operation) -> Bool {
        // The common case, without a lock.
        if operation.isReady { return !operation._isFinishingFlag }
        while true {
            let generation = operation._update { $0.readinessGeneration }
            // An operation that finished meanwhile (say, finished by hand from another
            // thread) is not started: its finish freed the slot.
            if operation.isReady { return !operation._isFinishingFlag }
            let (unclaim, wakeup) = _unclaim(operation, generation: generation)
            if let wakeup { _perform(wakeup) }
            switch unclaim {
            case .start: return true
            case .parked, .skip: return false
            case .readAgain: continue
            }
        }
    }

    private func _armWatchdog(stamp: UInt64) {
        // Holds the queue for a few milliseconds (no weak reference: a weak reference would
        // give the queue a side table and slow every retain of it). The workers are probed
        // on the watchdog's thread, outside the lock (each probe reads a file).
        Self._watchdogTimer.asyncAfter(deadline: .now() + .milliseconds(4)) {
            var blocked: UInt64 = 0, waitingForLock: UInt64 = 0
            for (slot, sample) in self._withQueueLock({ $0.workerSamples }) {
                switch sample.state() {
                case .busy: break
                case .waitingForLock: waitingForLock |= 1 << UInt64(slot)
                case .blocked: blocked |= 1 << UInt64(slot)
                }
            }
            let wakeup = self._withQueueLock {
                $0.watchdogFired(stamp: stamp, blockedSlots: blocked, waitingForLockSlots: waitingForLock)
            }
            #if DEBUG
            WorkerPausePoints.watchdogDecided.pass(self, wakeup.workers.count)
            #endif
            self._perform(wakeup)
        }
    }

    /// The watchdog's own serial queue: it must tick even when the global queues are
    /// saturated (that is when it is needed).
    private static let _watchdogTimer = DispatchQueue(label: "swift-operations.watchdog", qos: .userInteractive)
}

/// What a worker's lock section decided: the operation to start next (nil: the worker
/// ends), its own quality of service, the watchdog's stamp to arm, and the waits and the
/// workers the finish it recorded calls for.
private struct WorkerStep {
    var operation: Operation?
    var quality: QualityOfService?
    var watchdog: UInt64?
    var waiters: [QueueWaiter]
    var wakeup: QueueCore.Wakeup?
}

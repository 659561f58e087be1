// How a queue runs its operations: ready operations go into the ready list; workers on
// Dispatch drain it; finished operations free their slot and leave.

extension OperationQueue {
    /// Called (no lock held) when one of this queue's operations becomes ready.
    final func _operationBecameReady(_ operation: Operation, priority: Operation.QueuePriority) {
        let wakeup = core.withLock { state in
            state.ready.push(operation, priority: priority)
            return state.wakeup()
        }
        _perform(wakeup)
    }

    /// Called (no lock held) when one of this queue's operations finished.
    final func _operationFinished(_ operation: Operation, releasesSlot: Bool, leaves: Bool) {
        // Counted before leaving, so that whoever sees the queue empty sees the progress.
        if leaves { _countProgress() }
        let observed = leaves && _hasObservers
        if observed { _announceWillChange("operationCount"); _announceWillChange("operations") }
        let departure = core.withLock { $0.operationFinished(operation, releasesSlot: releasesSlot, leaves: leaves) }
        if observed { _announceDidChange("operationCount"); _announceDidChange("operations") }
        _perform(departure.wakeup)
        for waiter in departure.waiters { waiter.signal() }
    }

    final func _perform(_ wakeup: QueueCore.Wakeup) {
        for (slot, lane) in wakeup.workers {
            lane.async { self._runWorker(slot: slot) }
        }
        if let stamp = wakeup.watchdog { _armWatchdog(stamp: stamp) }
    }

    /// A worker: runs ready operations until there is none it may start.
    private func _runWorker(slot: Int) {
        let previous = OperationQueue._current.value
        OperationQueue._current.set(Unmanaged.passUnretained(self).toOpaque())
        defer { OperationQueue._current.set(previous) }
        while true {
            let (operation, watchdog) = core.withLock { $0.nextOperation(retiringSlot: slot) }
            if let watchdog { _armWatchdog(stamp: watchdog) }
            guard let operation else { return }
            operation.start()
        }
    }

    private func _armWatchdog(stamp: UInt64) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(4)) { [weak self] in
            guard let self else { return }
            self._perform(self.core.withLock { $0.watchdogFired(stamp: stamp) })
        }
    }

    private func _countProgress() {
        let progress = _progressIfCounting
        guard let progress else { return }
        progressLock.withLock { _ in progress.completedUnitCount += 1 }
    }
}

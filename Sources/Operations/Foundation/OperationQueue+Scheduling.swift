// How a queue runs its operations: ready operations go into the ready list; workers on
// Dispatch drain it; finished operations free their slot and leave.

extension OperationQueue {
    /// Called (no lock held) when one of this queue's operations becomes ready.
    final func _operationBecameReady(_ operation: Operation, priority: Operation.QueuePriority) {
        let start = core.withLock { state in
            state.ready.push(operation, priority: priority)
            return state.workersToStart()
        }
        _startWorkers(start)
    }

    /// Called (no lock held) when one of this queue's operations finished.
    final func _operationFinished(_ operation: Operation, releasesSlot: Bool, leaves: Bool) {
        // Counted before leaving, so that whoever sees the queue empty sees the progress.
        if leaves { _countProgress() }
        let observed = leaves && _hasObservers
        if observed { _announceWillChange("operationCount"); _announceWillChange("operations") }
        let departure = core.withLock { $0.operationFinished(operation, releasesSlot: releasesSlot, leaves: leaves) }
        if observed { _announceDidChange("operationCount"); _announceDidChange("operations") }
        _startWorkers(departure.start)
        for waiter in departure.waiters { waiter.signal() }
    }

    final func _startWorkers(_ workers: [(slot: Int, lane: DispatchQueue)]) {
        for (slot, lane) in workers {
            lane.async { self._runWorker(slot: slot) }
        }
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
            let (start, rearm) = self.core.withLock { $0.watchdogFired(stamp: stamp) }
            self._startWorkers(start)
            if let rearm { self._armWatchdog(stamp: rearm) }
        }
    }

    private func _countProgress() {
        let progress = _progressIfCounting
        guard let progress else { return }
        progressLock.withLock { _ in progress.completedUnitCount += 1 }
    }
}

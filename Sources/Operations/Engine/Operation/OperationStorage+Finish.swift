// The finish as the holder of the operation's lock: the base class's finish, the quiet
// finish of an operation nobody watches (all in one section), and the sections of the full
// finish, whose announcements `Foundation/Operation+Lifecycle.swift` makes.

extension Operation {
    /// The base class is done with the operation (`main()` returned, or it was cancelled):
    /// sets the base state to finished, announcing it. The operation is finished when its
    /// `isFinished` getter reads true: at once unless a subclass overrides it, and then when
    /// the subclass announces it (`didChangeValue(forKey:)`).
    package final func _finish(wasExecuting: Bool) {
        #if !canImport(ObjectiveC)
        if wasExecuting, _isWatchedByNoOne {
            #if DEBUG
            if WorkerPausePoints.quietFinishChosen.hasActions, let queue = WorkerContext.current?.queue {
                WorkerPausePoints.quietFinishChosen.pass(queue, self)
            }
            #endif
            if let quiet = _finishQuietly() {
                return _departQuietly(quiet)
            }
        }
        #endif
        if wasExecuting { _announceWillChange("isExecuting") }
        _announceWillChange("isFinished")
        let changed = _baseFinish()
        #if DEBUG
        if WorkerPausePoints.baseFinishMade.hasActions, let queue = WorkerContext.current?.queue {
            WorkerPausePoints.baseFinishMade.pass(queue, self)
        }
        #endif
        if wasExecuting { _announceDidChange("isExecuting") }
        #if canImport(ObjectiveC)
        // Goes through `didChangeValue(forKey:)`, which processes the finish before KVO
        // tells the observers.
        _announceDidChange("isFinished")
        #else
        // Refused, the base finish only announces (and waits for a finish being processed).
        _processFinishThenAnnounce(.announce("isFinished"), mayFinish: changed)
        #endif
        // The getter read false: the subclass announces its finish itself.
        if changed, !_isFinishingFlag { _update { $0.baseFinishAnnounced() } }
    }

    /// Nobody can see this finish but its queue: a `BlockOperation` itself (whose `isFinished`
    /// is the base one), without observers, attachments or gates. Its finish may take the
    /// quiet path (`OperationCore.finishQuietly()`).
    private var _isWatchedByNoOne: Bool {
        ObjectIdentifier(type(of: self)) == ObjectIdentifier(BlockOperation.self)
            && !_hasObservers && !_hasExtras && !_visibleGated
    }

    /// After a quiet finish: the blocks go, and the operation leaves its queue, freeing its
    /// slot; the waits for the queue that this ends are woken.
    ///
    /// An observer may have registered between the look that found nobody watching and the
    /// finish, reading `isFinished` false: then the operation leaves its queue at once (not
    /// with its worker's next section) and the observers are told, as after a full finish.
    private func _departQuietly(_ quiet: OperationCore.QuietFinish) {
        _releaseWork()
        let lateObservers = _hasObservers
        // With late observers the queue counts the operation for its waits until they were
        // told, as after a full finish: a wait that begins meanwhile returns after them.
        var waiters = quiet.queue?._operationFinished(
            self, releasesSlot: quiet.releasesSlot, leaves: true, announcing: lateObservers,
            deferrable: !lateObservers) ?? []
        if lateObservers {
            _announceWillChange("isExecuting")
            _announceWillChange("isFinished")
            _announceDidChange("isExecuting")
            _announceDidChange("isFinished")
            if let queue = quiet.queue { waiters += queue._finishAnnounced() }
        }
        for waiter in waiters { waiter.wake() }
    }
}

// MARK: The sections of a finish

extension Operation {
    /// The quiet finish (`OperationCore.finishQuietly()`), unless the queue records events
    /// (then the full path records them).
    final func _finishQuietly() -> OperationCore.QuietFinish? {
        _update { core in
            if core.queue?.hasEventHandlers.load(ordering: .relaxed) == true { return nil }
            return core.finishQuietly()
        }
    }

    /// The base class's state becomes finished (`OperationCore.baseFinish()`).
    final func _baseFinish() -> Bool {
        _update { $0.baseFinish() }
    }

    /// The finish, when this is the first time it is seen (`OperationCore.finish()`), with
    /// its events recorded for the queue in the same section. `thread`: the thread that will
    /// announce it to observers (announcements made there meanwhile are made at once).
    final func _finishFinally(announcingOn thread: UInt64?) -> OperationCore.Finish? {
        _update { core in
            guard let finish = core.finish() else { return nil }
            if let thread { core.finishes(on: thread) }
            finish.queue?._finished(
                self, completedCancellation: finish.completedCancellation, wasCancelled: finish.outcome.isCancelled)
            return finish
        }
    }

    /// Hands an announcement to the thread processing or announcing the finish; false when
    /// none does (the caller makes it).
    final func _handOver(_ later: @escaping @Sendable () -> Void, from thread: UInt64) -> Bool {
        _update { $0.handOver(later, from: thread) }
    }

    /// The processed finish completes (`OperationCore.complete(observersToTell:)`).
    final func _complete(observersToTell: Bool) -> OperationCore.Completion {
        _update { $0.complete(observersToTell: observersToTell) }
    }

    /// What came to wait or announce while the finish was told; nil when it is finished for good.
    final func _settle() -> OperationCore.Settling? {
        _update { $0.settle() }
    }

    /// The announcements other threads handed over.
    final func _takeHandedOverAnnouncements() -> [@Sendable () -> Void] {
        _update { $0.takeHandedOverAnnouncements() }
    }
}

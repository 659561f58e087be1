// The queue as the holder of its lock: what `OperationQueue` does with its `QueueCore` and
// its operations' states when one step needs both. Each state machine decides about its
// own object; the steps here take the queue's lock, then an operation's, never the other
// way round, and perform what the two decided.

extension OperationQueue {
    /// Runs `body` under the queue's lock: the one way the engine takes it (a scan of the
    /// sources checks that nothing outside the engine does). Without Thread Sanitizer it
    /// takes the `Locked`'s mutex itself, for the reason given at `Operation._update`.
    @inline(__always)
    final func _withQueueLock<Result>(_ body: (inout sending QueueCore) -> sending Result) -> sending Result {
        guard threadSanitizerState.load(ordering: .relaxed) == ThreadSanitizerAnnotations.absent else {
            return core.withLock(body)
        }
        return core.mutex.withLock(body)
    }

    /// What adding a batch came to.
    enum BatchAdmission {
        /// Added: the barrier the operations wait for, those not delivered to the ready
        /// list (to check their readiness after the lock), and the workers to start.
        case added(barrier: Operation?, undelivered: [Operation], wakeup: QueueCore.Wakeup)
        /// Nothing added: `Operation` was refused.
        case refused(Operation, QueueCore.Refusal)
    }

    /// Adds `operations`, all or none, in one section of the queue's lock (`readings`: what
    /// their getters said before it, or `single` for one operation). `inheritQoS` gives them
    /// the queue's quality of service; `usingReservedPlace`: a producer's place under the
    /// capacity; `guarded`: they are prerequisites of it (see `_addPrerequisite`).
    final func _admitAll(
        _ operations: some Collection<Operation>, single: QueueCore.Reading?, readings: [QueueCore.Reading],
        inheritQoS: Bool, usingReservedPlace: Bool, prerequisiteOf guarded: Operation?
    ) -> BatchAdmission {
        _withQueueLock { state -> BatchAdmission in
            // Validate everything before changing anything: all or nothing. (A single
            // operation is validated by `_admit` itself.)
            if operations.count > 1 {
                for (index, operation) in operations.enumerated() {
                    if let refusal = _refusal(of: operation, reading: readings[index]) {
                        return .refused(operation, refusal)
                    }
                }
            }
            // A prerequisite goes ahead of any barrier: its guarded operation is in the queue
            // already, before any barrier that is pending now.
            let barrier = guarded == nil ? state.pendingBarrier : nil
            let sequence = guarded.map { $0._addSequence }
            var undelivered: [Operation] = []
            var admitted: [(Operation, delivered: Bool)] = []
            for (index, operation) in operations.enumerated() {
                let reading = single ?? readings[index]
                let operationBarrier = barrier === operation ? nil : barrier
                switch _admit(
                    operation, to: &state, waitsFor: operationBarrier, inheritQoS: inheritQoS, reading: reading,
                    sequence: sequence)
                {
                case .refused(let refusal):
                    // Listed twice in one batch (or refused alone): undo, then refuse.
                    for (earlier, delivered) in admitted.reversed() {
                        _unadmit(
                            earlier, from: &state, waitedForBarrier: barrier != nil && earlier !== barrier,
                            wasDelivered: delivered)
                    }
                    return .refused(operation, operations.count > 1 ? .twiceInBatch : refusal)
                case .admitted(let delivered):
                    if operations.count > 1 { admitted.append((operation, delivered)) }
                    if !delivered { undelivered.append(operation) }
                }
            }
            // `enqueue` took a place under the capacity before adding.
            if usingReservedPlace { state.reservedPlaceUsed() }
            return .added(barrier: barrier, undelivered: undelivered, wakeup: state.wakeup())
        }
    }

    /// Adds one operation the queue just made itself (nobody else has seen it, so it is
    /// not refused, and it is ready). Returns the barrier it waits for, whether it was
    /// delivered to the ready list, and the workers to start.
    final func _admitMade(
        _ operation: Operation, usingReservedPlace: Bool
    ) -> (barrier: Operation?, delivered: Bool, wakeup: QueueCore.Wakeup) {
        _withQueueLock { state in
            let barrier = state.pendingBarrier
            let admission = _admit(operation, to: &state, waitsFor: barrier, inheritQoS: true, reading: .fresh)
            guard case .admitted(let delivered) = admission else {
                preconditionFailure("Operations: an operation the queue just made was refused (\(admission))")
            }
            if usingReservedPlace { state.reservedPlaceUsed() }
            return (barrier, delivered, state.wakeup())
        }
    }

    /// Reads an operation's (possibly overridden) getters, before the lock.
    static func _reading(of operation: Operation) -> QueueCore.Reading {
        let generation = operation._readState { $0.readinessGeneration }
        return QueueCore.Reading(
            generation: generation, isReady: operation.isReady, isExecuting: operation.isExecuting,
            isFinished: operation.isFinished, isAsynchronous: operation.isAsynchronous)
    }

    /// Adds `operation` under the queue's lock (`state`): it joins under its own lock
    /// (`OperationCore.join`), then the queue numbers it, lists it and files it when it is
    /// ready. Refused, nothing changes.
    final func _admit(
        _ operation: Operation, to state: inout QueueCore, waitsFor barrier: Operation?, inheritQoS: Bool,
        reading: QueueCore.Reading, held: Bool = false, sequence: UInt64? = nil
    ) -> QueueCore.Admission {
        let terms = state.joinTerms(inheritQoS: inheritQoS)
        let joining = operation._update { state in
            let joining = state.join(self, terms: terms, waitsForBarrier: barrier != nil, held: held, reading: reading)
            // Told under both locks: before anyone can start or cancel it in this queue.
            if case .joined = joining { operation._joined(self) }
            return joining
        }
        switch joining {
        case .refused(let refusal):
            return .refused(refusal)
        case .joined(let priority):
            operation._startsPromptly = reading.isAsynchronous || operation._startsWithoutBlocking
            return .admitted(delivered: state.admitted(operation, readyIn: priority, sequence: sequence))
        }
    }

    /// Why `operation` cannot join this queue, or nil (read only; under the queue's lock, for
    /// a batch validated before anything of it is added).
    final func _refusal(of operation: Operation, reading: QueueCore.Reading) -> QueueCore.Refusal? {
        operation._update {
            $0.refusal(toJoin: self, reportedExecuting: reading.isExecuting, reportedFinished: reading.isFinished)
        }
    }

    /// Undoes `_admit` for an operation of a batch that is being refused.
    final func _unadmit(_ operation: Operation, from state: inout QueueCore, waitedForBarrier: Bool, wasDelivered: Bool) {
        state.unadmitted(operation, wasDelivered: wasDelivered)
        operation._update { $0.unjoin(waitedForBarrier: waitedForBarrier) }
    }

    /// `addBarrierBlock`: admits `barrier`, held until the caller has made it wait for the
    /// members before it (returned), and makes it the barrier that operations added from
    /// now on wait for, in one section of the queue's lock.
    final func _admitBarrier(_ barrier: Operation) -> [Operation] {
        _withQueueLock { state in
            let earlier = state.members.all
            guard case .admitted = _admit(barrier, to: &state, waitsFor: nil, inheritQoS: true, reading: .fresh, held: true)
            else {
                preconditionFailure("Operations: a barrier the queue just made was refused")
            }
            state.barrierAdmitted(barrier)
            return earlier
        }
    }

    /// An operation of this queue finished (`QueueCore.operationFinished`); operations a
    /// finished barrier held back are filed in the bands they have now. Returns the waiters
    /// to wake after the lock.
    final func _departed(
        _ operation: Operation, from state: inout QueueCore, releasesSlot: Bool, leaves: Bool, announcing: Bool = false
    ) -> [QueueWaiter] {
        let departure = state.operationFinished(operation, releasesSlot: releasesSlot, leaves: leaves, announcing: announcing)
        if !departure.released.isEmpty {
            for released in departure.released {
                state.deliver(released, priority: released._update { $0.effectivePriority })
            }
        }
        state.departureHandled()
        return departure.waiters
    }

    /// A worker's next operation: the first ready one that it claims (under the operation's
    /// lock), with the operation's own quality of service (nil when never set) and the stamp
    /// to arm the watchdog with. Nil after retiring the worker when there is none it may
    /// start (`onSharedPool`: none that starts promptly; the caller then asks for the
    /// workers the state wants, on lanes). Operations found not to be claimable go to
    /// `skipped`, for the caller to drop after the lock.
    final func _nextOperation(
        in state: inout QueueCore, retiringSlot slot: Int, onSharedPool: Bool, skipped: inout [Operation]
    ) -> (operation: Operation?, quality: QualityOfService?, watchdog: UInt64?) {
        if state.mayStartAnother {
            while true {
                // A worker on the shared pool leaves an operation that may block to a lane's.
                if onSharedPool, let front = state.peekReady(), !front._startsPromptly { break }
                guard let operation = state.popReady() else { break }
                let claim = operation._update { state -> QualityOfService?? in
                    state.claimForQueue() ? .some(state.threadQuality) : nil
                }
                guard let quality = claim else {
                    skipped.append(operation)
                    continue
                }
                if onSharedPool { state.pool.shared.claimed() }
                return (operation, quality, state.operationClaimed())
            }
        }
        state.retire(slot: slot)
        return (nil, nil, nil)
    }

    /// Claims the next ready operation when its `start()` never blocks (see
    /// `OperationLayerHooks._startsWithoutBlocking`) and the queue may start one now, for
    /// the thread that freed a slot to start it; nil otherwise (a worker starts it).
    /// Skipped operations go to `skipped`, as in `_nextOperation(in:retiringSlot:skipped:)`.
    final func _nextOperationStartingWithoutBlocking(in state: inout QueueCore, skipped: inout [Operation]) -> Operation? {
        guard state.mayStartInline else { return nil }
        while let operation = state.peekReady(), operation._startsWithoutBlocking {
            guard state.popReady() === operation else {
                preconditionFailure("Operations: the ready list's front changed between peek and pop")
            }
            guard operation._update({ $0.claimForQueue() }) else {
                skipped.append(operation)
                continue
            }
            state.operationClaimedInline()
            return operation
        }
        return nil
    }

    /// A claimed operation's `isReady` read false (`generation`: the readiness generation
    /// read before): gives it back until its next readiness announcement, unless something
    /// changed meanwhile (see `OperationCore.Unclaim`). When it was parked, also returns the
    /// workers its freed slot allows, for the caller to start after the lock.
    final func _unclaim(_ operation: Operation, generation: UInt32) -> (OperationCore.Unclaim, QueueCore.Wakeup?) {
        _withQueueLock { state in
            let unclaim = operation._update { $0.unclaim(generation: generation) }
            guard case .parked = unclaim else { return (unclaim, nil) }
            return (unclaim, state.claimedOperationParked())
        }
    }

    /// Moves `operation` to the band it runs in now, if it is in the ready list (an
    /// escalation, or its `queuePriority` set).
    final func _refile(_ operation: Operation) {
        _withQueueLock { state in
            let priority: Operation.QueuePriority? = operation._update { operation in
                operation.phase.kind == .ready ? operation.effectivePriority : nil
            }
            // Held behind a barrier, it is filed in the band it has when the barrier has run;
            // about to be delivered, in the band read when it was found ready.
            guard let priority else { return }
            state.refile(operation, to: priority)
        }
    }
}

// Joining a queue and becoming ready: the decisions an operation makes under its own lock
// when a queue admits it and when its readiness may have changed.

// MARK: - Admission

extension OperationCore {
    /// Why this operation cannot join `queue`, or nil when it can. `reportedExecuting`
    /// and `reportedFinished` are what the (possibly overridden) getters said.
    func refusal(toJoin queue: OperationQueue, reportedExecuting: Bool, reportedFinished: Bool) -> QueueCore.Refusal? {
        if let owner = self.queue { return owner === queue ? .inThisQueue : .inAnotherQueue(owner) }
        switch phase {
        case .idle:
            if reportedFinished { return .finished }
            if reportedExecuting { return .executing }
            return nil
        case .waiting, .checking, .parked, .ready, .dispatched: return .inAnotherQueue(nil)
        case .executing, .announcingBaseFinish, .awaitingFinish: return .executing
        case .finishing, .announcing, .finished: return .finished
        }
    }

    /// What a queue gives an operation joining it (`QueueCore.joinTerms`).
    struct JoinTerms {
        /// The queue's quality of service, when the operation takes it.
        var quality: QualityOfService?
        /// A serial queue: the band is `.normal`, not chosen by the quality of service.
        var serial: Bool
    }

    enum Joining {
        case refused(QueueCore.Refusal)
        /// Joined; `readyIn` is the band to file it in when it is ready now (nil: it waits).
        case joined(readyIn: Operation.QueuePriority?)
    }

    /// Joins `queue`, or says why it cannot, changing nothing. Waits for a barrier
    /// (`waitsForBarrier`: its count raised here, the edge registered by the caller after
    /// the locks) and, when `held`, for a dependency the caller releases itself. Ready now
    /// when it was ready and nothing changed since `reading` was taken.
    ///
    /// The band of an operation whose `queuePriority` is not set is fixed here, as on
    /// Linux's Foundation: from its quality of service now, `.normal` if the queue is
    /// serial now; neither a later change of the queue's limit nor of the operation's
    /// quality of service moves it (setting `queuePriority` does).
    mutating func join(
        _ queue: OperationQueue, terms: JoinTerms, waitsForBarrier: Bool, held: Bool, reading: QueueCore.Reading
    ) -> Joining {
        if let refusal = refusal(toJoin: queue, reportedExecuting: reading.isExecuting, reportedFinished: reading.isFinished) {
            return .refused(refusal)
        }
        mustApply(.enqueue)
        self.queue = queue
        if waitsForBarrier { gainDependency() }
        if held { gainDependency() }
        if let quality = terms.quality { qualityOfService = quality }
        bandWhenAdded = terms.serial ? .normal : Operation.QueuePriority(band: qualityOfService ?? .default)
        guard reading.isReady, reading.generation == readinessGeneration, isInternallyReady else {
            return .joined(readyIn: nil)
        }
        mustApply(.beginCheck)
        mustApply(.confirmReady)
        return .joined(readyIn: effectivePriority)
    }

    /// Undoes `join` for an operation of a batch that is being refused.
    mutating func unjoin(waitedForBarrier: Bool) {
        mustApply(.withdraw)
        queue = nil
        if waitedForBarrier { loseDependency() }
    }
}

// MARK: - Readiness

extension OperationCore {
    /// Something that may make the operation ready happened. Returns the generation to
    /// check `isReady` with, or nil when no check is needed now (not in a queue, not ready
    /// as far as dependencies go, already in the ready list, or a check under way that will
    /// notice the new generation).
    mutating func readinessTrigger() -> UInt32? {
        readinessGeneration &+= 1
        guard isInternallyReady, apply(.beginCheck) else { return nil }
        return readinessGeneration
    }

    enum CheckOutcome {
        case deliver(OperationQueue, Operation.QueuePriority)
        case done
        case retry(UInt32)
    }

    /// The readiness check read `isReady` for `generation`.
    mutating func readinessChecked(generation: UInt32, isReady: Bool) -> CheckOutcome {
        guard case .checking = phase else { return .done }
        if generation != readinessGeneration {
            guard isInternallyReady else {
                mustApply(.loseReadiness)
                return .done
            }
            return .retry(readinessGeneration)
        }
        guard isReady, let queue else {
            mustApply(.denyReady)
            return .done
        }
        mustApply(.confirmReady)
        return .deliver(queue, effectivePriority)
    }

    /// A queue worker popped the operation from the ready list. False when it must be
    /// skipped: it finished or was started by hand meanwhile, or gained a dependency (then
    /// it waits again; the dependency's finish re-checks it).
    mutating func claimForQueue() -> Bool {
        guard isInternallyReady else {
            // It gained a dependency while in the ready list: it waits again (the
            // dependency's finish checks it again). Unless it was started or finished by hand
            // meanwhile, and given the dependency after that: the table refuses the event
            // then, and the operation, no longer the queue's to start, is only skipped.
            if phase.isQueuedNotClaimed { mustApply(.loseReadiness) }
            return false
        }
        return apply(.claim)
    }

    enum Unclaim {
        /// Given back: it waits for its next `isReady` announcement.
        case parked
        /// An announcement arrived since the worker read `isReady`: read it again.
        case readAgain
        /// Cancelled meanwhile: a cancelled operation ignores readiness; start it.
        case start
        /// It finished meanwhile (its finish frees the slot): nothing to start.
        case skip
    }

    /// The claiming worker found `isReady` false: back to waiting for an announcement,
    /// unless something changed since `generation` was read.
    mutating func unclaim(generation: UInt32) -> Unclaim {
        guard case .dispatched = phase else { return .skip }
        if cancellation.isCancelled { return .start }
        guard readinessGeneration == generation else { return .readAgain }
        return apply(.unclaim) ? .parked : .skip
    }
}

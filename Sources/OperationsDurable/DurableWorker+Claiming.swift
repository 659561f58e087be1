// Claiming operations and running their bodies: each attempt, from its claim to its recorded end.
#if Durable

import Foundation
@_spi(Engine) import Operations

extension DurableWorker {
    func claimLoop() async {
        let kindNames = kinds.keys.sorted()
        var failures = 0
        var rotation = 0
        while !Task.isCancelled {
            // Bodies a batch of ends claimed start before the ended ones leave the list.
            let (stopping, free) = state.withLock { ($0.stopping, max(0, concurrency - $0.running.count)) }
            if stopping { return }
            var claimedFully = false
            if free > 0 {
                var wanted = free
                do {
                    for offset in 0..<queues.count where wanted > 0 {
                        let queue = queues[(rotation + offset) % queues.count]
                        // A claim that lands after the deadline is not lost: a heartbeat finds
                        // its operations held but not running, and they are given back.
                        let (store, worker, limit, lease) = (store, id, wanted, configuration.lease)
                        // The leases of what it claims start no earlier than this.
                        let claimBegan = ContinuousClock.now
                        let claim = state.withLock { $0.claims.begin() }
                        defer { state.withLock { $0.claims.end(claim) } }
                        let claims = try await withDeadline(
                            configuration.storeCallTimeout, "claiming from queue \"\(queue)\"", abandonedBy: callsInFlight
                        ) {
                            try await store.claim(queue: queue, kinds: kindNames, worker: worker, limit: limit, lease: lease)
                        }
                        await startOrGiveBack(claims, queue: queue, leaseFrom: claimBegan)
                        wanted -= claims.count
                    }
                    rotation += 1
                    failures = 0
                    claimedFully = wanted == 0
                } catch {
                    failures += 1
                    try? await Task.sleep(for: backoff(failures))
                    continue
                }
            }
            if !claimedFully { await wakeSignal.wait() }
        }
        stop()
    }

    /// Starts the claimed bodies; once the worker is stopping, starts none and gives them back
    /// (a claim's answer can arrive after the stop, when the shutdown no longer looks).
    private func startOrGiveBack(_ claims: [DurableClaim], queue: String, leaseFrom: ContinuousClock.Instant) async {
        let refused = claims.filter { !start($0, queue: queue, leaseFrom: leaseFrom) }
        guard !refused.isEmpty else { return }
        let (store, worker, timeout) = (store, id, configuration.storeCallTimeout)
        let attempts = refused.map { DurableAttemptID(operation: $0.id, attempt: $0.attempt) }
        _ = try? await withDeadline(timeout, "giving back operations claimed as worker \(worker) stopped") {
            try await store.giveBack(attempts, worker: worker, reason: "worker \(worker) stopped before it started the body")
        }
    }

    /// Starts a claimed body, unless the worker is stopping: returns whether it started.
    private func start(_ claim: DurableClaim, queue: String, leaseFrom: ContinuousClock.Instant) -> Bool {
        let flag = DurableCancellationFlag()
        let context = DurableContext(
            id: claim.id, attempt: claim.attempt, dependencies: claim.dependencies, store: store, cancellation: flag)
        // Registered before the task exists, so that a cancel or a lost lease finds it. The
        // attempt's events are recorded under this lock, so that a cancel's event falls
        // between its start and its end. A stopping worker starts nothing: the shutdown's
        // list of what runs is taken after `stopping` is set.
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.running[claim.id] = RunningBody(
                flag: flag, attempt: claim.attempt, claimedAt: .now, renewedAt: leaseFrom, queue: queue, kind: claim.kind)
            broadcaster.record(DurableEvent.Draft(
                kind: .started, operation: claim.id, operationKind: claim.kind, queue: queue, attempt: claim.attempt,
                worker: id, dependencies: claim.dependencies))
            return true
        }
        guard accepted else { return false }
        broadcaster.deliver()
        let task = Task {
            let result = await self.execute(claim, context: context)
            // The entry is this attempt's only while no later attempt of the operation was
            // claimed meanwhile (a retry claimed as soon as this attempt's end was recorded).
            let delivery = self.state.withLock { state -> Delivery in
                let delivery: Delivery
                if let body = state.running[claim.id], body.attempt == claim.attempt {
                    if body.givingBack {
                        // Given back by the shutdown, with the others.
                        delivery = .drop("worker \(self.id) stopped before the body finished")
                    } else if let reason = body.stoppedForLease, case .cancelled = result {
                        // Stopped because its lease may have ended: run again, costing no attempt.
                        delivery = .giveBack(reason)
                    } else {
                        // Also when the lease may have ended: the store ignores a result whose
                        // attempt is no longer this worker's.
                        delivery = .complete
                    }
                    state.running[claim.id]!.ended = true
                } else {
                    delivery = .drop("worker \(self.id) no longer holds the operation")
                }
                // Recorded before the store records the end, so that a dependent's start
                // (which that record releases) comes after it.
                self.broadcaster.record(self.endEvent(of: claim, queue: queue, result: result, delivery: delivery))
                return delivery
            }
            self.broadcaster.deliver()
            switch delivery {
            case .complete:
                await self.completions.complete(DurableCompletion(id: claim.id, attempt: claim.attempt, result: result)) {
                    batch, firstTry in try await self.recordEnds(batch, claiming: firstTry)
                }
            case .giveBack(let reason):
                // Not renewed from now on; if this call fails, a heartbeat names it as held
                // without running, and it is given back then. In a task of its own: this one
                // is cancelled (that stopped the body).
                let (store, worker, timeout) = (self.store, self.id, self.configuration.storeCallTimeout)
                await Task {
                    _ = try? await withDeadline(timeout, "giving back \(claim.id)") {
                        try await store.giveBack(
                            [DurableAttemptID(operation: claim.id, attempt: claim.attempt)], worker: worker, reason: reason)
                    }
                }.value
            case .drop:
                break
            }
            self.state.withLock { state in
                if state.running[claim.id]?.attempt == claim.attempt { state.running[claim.id] = nil }
            }
            self.wakeSignal.wake()
        }
        let cancelledAlready = state.withLock { state -> Bool in
            guard state.running[claim.id]?.attempt == claim.attempt else { return false }
            state.running[claim.id]?.task = task
            return state.running[claim.id]?.flag.reason != nil
        }
        if cancelledAlready { task.cancel() }
        return true
    }

    /// Records a batch of ends and, unless the worker stops (or the batch is being tried
    /// again), claims as many operations in the same call: the slots the ends free are filled
    /// without a claim of their own. The ended bodies still count as running until this
    /// returns, so the new ones never take the worker past its concurrency.
    func recordEnds(_ batch: [DurableCompletion], claiming: Bool) async throws {
        let (store, worker, timeout, lease) = (store, id, configuration.storeCallTimeout, configuration.lease)
        // From the worker's queues in turn, so that no queue of a busy worker waits on another.
        let claim = state.withLock { state -> (queue: String, number: Int)? in
            guard claiming, !state.stopping else { return nil }
            state.claimsWithEnds &+= 1
            return (queues[state.claimsWithEnds % queues.count], state.claims.begin())
        }
        guard let (queue, number) = claim else {
            try await withDeadline(timeout, "recording \(batch.count) finished attempts", abandonedBy: callsInFlight) {
                try await store.complete(batch, worker: worker)
            }
            return
        }
        defer { state.withLock { $0.claims.end(number) } }
        let (kindNames, limit) = (kinds.keys.sorted(), batch.count)
        // The leases of what it claims start no earlier than this.
        let claimBegan = ContinuousClock.now
        // A claim that lands after the deadline is not lost: a heartbeat finds its operations
        // held but not running, and they are given back.
        let claims = try await withDeadline(
            timeout, "recording \(batch.count) finished attempts and claiming", abandonedBy: callsInFlight
        ) {
            try await store.completeAndClaim(batch, worker: worker, queue: queue, kinds: kindNames, limit: limit, lease: lease)
        }
        await startOrGiveBack(claims, queue: queue, leaseFrom: claimBegan)
    }

    /// Whether the store hears of an attempt's result, or why not.
    private enum Delivery: Equatable {
        case complete
        /// The body was stopped for its lease: the operation is given back, with the reason.
        case giveBack(String)
        /// Someone else tells the store (the shutdown), or nobody (no longer this worker's).
        case drop(String)
    }

    /// The event that ends an attempt.
    private func endEvent(
        of claim: DurableClaim, queue: String, result: DurableAttemptResult, delivery: Delivery
    ) -> DurableEvent.Draft {
        var draft = DurableEvent.Draft(
            kind: .retried, operation: claim.id, operationKind: claim.kind, queue: queue, attempt: claim.attempt, worker: id)
        switch delivery {
        case .drop(let why), .giveBack(let why):
            // Given back, or no longer this worker's: the store runs it again.
            draft.error = why
            return draft
        case .complete:
            break
        }
        switch result {
        case .succeeded:
            draft.kind = .finished(.succeeded)
        case .failed(let error):
            draft.error = error
            if let maximum = claim.maximumAttempts, claim.attempt < maximum { return draft }
            draft.kind = .finished(.failed(error))
        case .rejected(let error):
            draft.error = error
            draft.kind = .finished(.failed(error))
        case .cancelled(let reason):
            draft.error = reason
            draft.kind = .finished(.cancelled(reason))
        }
        return draft
    }

    private func execute(_ claim: DurableClaim, context: DurableContext) async -> DurableAttemptResult {
        guard let kind = kinds[claim.kind] else {
            return .rejected(error: "\(claim.id): worker \(id) has no kind \"\(claim.kind)\"")
        }
        return await runBody(kind, claim: claim, context: context)
    }

    private func runBody<K: DurableOperation>(_ kind: K, claim: DurableClaim, context: DurableContext) async -> DurableAttemptResult {
        let input: K.Input
        do {
            input = try JSONDecoder().decode(K.Input.self, from: Data(claim.input.utf8))
        } catch {
            return .rejected(error: "\(claim.id) (\(K.kind)): its input does not decode as \(K.Input.self): \(error)")
        }
        do {
            let output = try await kind.run(input, context: context)
            do {
                return .succeeded(output: String(decoding: try JSONEncoder().encode(output), as: UTF8.self))
            } catch {
                return .rejected(error: "\(claim.id) (\(K.kind)): its output does not encode: \(error)")
            }
        } catch {
            if let reason = context.cancellation.reason { return .cancelled(reason: reason) }
            return .failed(error: "\(error)")
        }
    }

    /// Cancels a running body; `leaseLost` when the store no longer counts it as ours.
    func cancelBody(_ id: DurableOperationID, reason: String, leaseLost: Bool = false) {
        let (task, cancelled) = state.withLock { state -> (Task<Void, Never>?, Bool) in
            guard let body = state.running[id] else { return (nil, false) }
            let first = body.flag.set(reason)
            if leaseLost {
                state.running[id]!.leaseStopped = true
                if first { state.running[id]!.stoppedForLease = reason }
            }
            // A cancel request, first heard while the attempt has not ended.
            let requested = first && !leaseLost && !body.ended
            if requested {
                broadcaster.record(DurableEvent.Draft(
                    kind: .cancelled, operation: id, operationKind: body.kind, queue: body.queue, attempt: body.attempt,
                    worker: self.id, error: reason))
            }
            return (body.task, requested)
        }
        if cancelled { broadcaster.deliver() }
        task?.cancel()
    }

    func backoff(_ failures: Int) -> Duration {
        .milliseconds(min(2_000, 50 << min(failures, 6)))
    }
}
#endif

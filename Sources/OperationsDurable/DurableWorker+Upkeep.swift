// The worker's background duties: heartbeats, rescue, pruning, notifications, shutdown.
#if Durable

import Foundation
@_spi(Engine) import Operations

extension DurableWorker {
    func heartbeatLoop() async {
        let kindNames = kinds.keys.sorted()
        let (store, worker, queues, lease) = (store, id, self.queues, configuration.lease)
        let leases = LeaseKeeping(lease: lease, heartbeatInterval: configuration.heartbeatInterval)
        var unstarted = UnstartedLeases()
        while !Task.isCancelled {
            let started = ContinuousClock.now
            stopBodiesPastTheirLeases(leases, at: started)
            do {
                // What runs here, and what may be a claim's answer still on its way: a lease of
                // an operation this worker will not run must not be renewed for ever.
                let (holding, firstStop) = state.withLock { state in
                    (Array(unstarted.renewing.union(state.running.keys)), self.earliestStop(leases, state))
                }
                // Bounded: a pool waiting for a database that is down would otherwise hold
                // the loop past the time to stop the bodies.
                let heartbeat = try await withDeadline(
                    leases.callDeadline(at: started, earliestStop: firstStop), "renewing the leases of worker \(worker)"
                ) {
                    try await store.heartbeat(worker: worker, queues: queues, kinds: kindNames, holding: holding, lease: lease)
                }
                let (lost, strays) = state.withLock { state in
                    for id in holding where heartbeat.held.contains(id) {
                        if let body = state.running[id], body.renewedAt < started { state.running[id]!.renewedAt = started }
                    }
                    // While stopping, nothing is given back from here: a body the shutdown
                    // stopped has left the list of running ones before the shutdown's own
                    // give-back (which says why) reached the store, and the shutdown gives
                    // back all the worker still holds at its end.
                    return (
                        state.running.filter { $0.value.claimedAt < started && !heartbeat.held.contains($0.key) }.map(\.key),
                        state.stopping
                            ? []
                            : unstarted.heartbeatAnswered(
                                held: heartbeat.held, unnamed: heartbeat.unnamed, running: Set(state.running.keys),
                                claims: state.claims)
                    )
                }
                for operation in lost {
                    cancelBody(operation, reason: "worker \(id) lost its lease", leaseLost: true)
                }
                for (operation, reason) in heartbeat.cancelRequested { cancelBody(operation, reason: reason) }
                // Not awaited: the next heartbeat must not wait for it.
                if !strays.isEmpty { Task { await self.giveBackUnstarted(strays) } }
            } catch {
                stopBodiesPastTheirLeases(leases, at: .now)
            }
            // Also catches operations whose notBefore passed, and missed notifications.
            wakeSignal.wake()
            let earliest = state.withLock { self.earliestStop(leases, $0) }
            try? await Task.sleep(for: leases.pause(at: .now, earliestStop: earliest))
        }
    }

    /// The earliest time a running body not yet stopped must be stopped.
    private func earliestStop(_ leases: LeaseKeeping, _ state: WorkerState) -> ContinuousClock.Instant? {
        state.running.values.filter { !$0.leaseStopped && !$0.ended }
            .map { leases.stopAt(renewedAt: $0.renewedAt) }.min()
    }

    /// Stops the bodies whose leases may end within a heartbeat interval: the store may give
    /// their operations to another worker, and two attempts must not run at once.
    private func stopBodiesPastTheirLeases(_ leases: LeaseKeeping, at now: ContinuousClock.Instant) {
        let due = state.withLock { state in
            state.running.filter {
                !$0.value.leaseStopped && !$0.value.ended && leases.stopAt(renewedAt: $0.value.renewedAt) <= now
            }
                .map(\.key)
        }
        for operation in due {
            cancelBody(operation, reason: "worker \(id) could not renew its lease", leaseLost: true)
        }
    }

    /// Gives back attempts the store says this worker holds but that it does not run: claims
    /// whose answer it gave up on, results it dropped. They run again without costing an attempt.
    private func giveBackUnstarted(_ attempts: [DurableAttemptID]) async {
        let (store, worker) = (store, id)
        let reason = "worker \(worker) held the operation without running it: it never received the claim's answer, or dropped the result"
        _ = try? await withDeadline(configuration.storeCallTimeout, "giving back operations worker \(worker) does not run") {
            try await store.giveBack(attempts, worker: worker, reason: reason)
        }
    }

    /// Takes back expired leases (of any worker) every heartbeat interval, and prunes old
    /// operations every minute: in a loop of its own, so that heartbeats never wait for them.
    func rescueLoop() async {
        var ticks = 0
        let store = self.store
        let deadline = configuration.storeCallTimeout
        while !Task.isCancelled {
            _ = try? await withDeadline(deadline, "rescuing expired leases") { try await store.rescueExpiredLeases() }
            if ticks % 60 == 0, let retention = configuration.retention {
                let cutoff = Date().addingTimeInterval(-Double(retention.components.seconds))
                _ = try? await withDeadline(deadline, "pruning finished operations") {
                    try await store.prune(finishedBefore: cutoff, limit: 1_000)
                }
            }
            ticks += 1
            try? await Task.sleep(for: configuration.heartbeatInterval)
        }
    }

    func notificationLoop() async {
        // The first resynchronization is usually the store's first connection, which the
        // worker's first claim may be waiting on: only later ones say it reconnected.
        var connected = false
        for await notification in store.notifications() {
            switch notification {
            case .workAvailable(let queue):
                if queues.contains(queue) { wakeSignal.wake() }
            case .cancelRequested(let operation):
                guard state.withLock({ $0.running[operation] != nil }) else { continue }
                let store = self.store
                let record = try? await withDeadline(configuration.storeCallTimeout, "reading \(operation)") {
                    try await store.record(of: operation, includingAttempts: false)
                }
                let reason = record?.cancelReason
                cancelBody(operation, reason: reason ?? "cancelled")
            case .resynchronize:
                // The store reconnected: a claim or a record of ends sent before is likely lost
                // with the old connection (a healthy one answers within milliseconds). Both
                // are safe to send again.
                if connected { callsInFlight.abandon(startedBefore: .now - configuration.staleClaimAge) }
                connected = true
                wakeSignal.wake()
            case .finished:
                continue
            }
        }
    }

    /// Lets running bodies finish within the deadline, then stops and gives back the rest;
    /// waits a while longer for results being recorded, and at last gives back whatever the
    /// store still counts as this worker's (claims whose answer never came, results it did
    /// not take), so that none of it waits for its lease to expire and costs an attempt.
    func drain() async {
        let deadline = ContinuousClock.now + configuration.shutdownDeadline
        while !Task.isCancelled, ContinuousClock.now < deadline, state.withLock({ !$0.running.isEmpty && !$0.hurried }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let reason = "worker \(id) stopped before the body finished"
        // An attempt whose body has ended is being recorded: its result is not given back.
        let remaining = state.withLock { state -> [(DurableAttemptID, Task<Void, Never>?)] in
            let unended = state.running.filter { !$0.value.ended }.map(\.key)
            for key in unended {
                state.running[key]!.givingBack = true
                state.running[key]!.flag.set(reason)
            }
            return unended.map { (DurableAttemptID(operation: $0, attempt: state.running[$0]!.attempt), state.running[$0]!.task) }
        }
        for (_, task) in remaining { task?.cancel() }
        let (store, worker) = (store, id)
        let stopped = remaining.map(\.0)
        if !stopped.isEmpty {
            await untilAnswered("giving back operations") { try await store.giveBack(stopped, worker: worker, reason: reason) }
        }
        // Results on their way to the store get one call's time more.
        let recording = ContinuousClock.now + configuration.storeCallTimeout
        while !Task.isCancelled, ContinuousClock.now < recording,
            state.withLock({ $0.running.values.contains { $0.ended && !$0.givingBack } })
        {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let unrecorded = "worker \(worker) stopped holding the operation without running it to a recorded end"
        await untilAnswered("giving back what worker \(worker) holds") {
            try await store.giveBackAll(worker: worker, reason: unrecorded)
        }
        // What was not recorded by now is given back (or will be rescued): no use trying again.
        completions.stop()
    }

    /// Calls the store until it answers (ten tries), in a task of its own: the caller's task
    /// may be cancelled, and the store must still hear of it.
    private func untilAnswered(_ what: String, _ call: @escaping @Sendable () async throws -> Void) async {
        let timeout = configuration.storeCallTimeout
        await Task {
            for failures in 0..<10 {
                do {
                    try await withDeadline(timeout, what) { try await call() }
                    return
                } catch {
                    try? await Task.sleep(for: backoff(failures + 1))
                }
            }
        }.value
    }
}

/// Wakes the claim loop: a body finished, work was announced, or time passed.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Returns at the next wake (at once if one came since the last wait), or on cancellation.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake()
        }
    }
}

/// Records finished attempts in batches: while one batch is written, the next gathers.
final class CompletionBatcher: Sendable {
    /// Writes one batch; `firstTry` is false when the batch is being tried again.
    typealias Send = @Sendable (_ batch: [DurableCompletion], _ firstTry: Bool) async throws -> Void

    private struct State {
        var pending: [(DurableCompletion, CheckedContinuation<Void, Never>)] = []
        var flushing = false
        var stopped = false
    }

    private let state = Locked(State())

    /// Returns once the completion is recorded (or the store refused it for good). The caller
    /// that finds no batch being written writes the batches with `send`.
    func complete(_ completion: DurableCompletion, send: @escaping Send) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let startFlushing = state.withLock { state -> Bool in
                state.pending.append((completion, continuation))
                if state.flushing { return false }
                state.flushing = true
                return true
            }
            if startFlushing { Task { await self.flush(send) } }
        }
    }

    /// Stops trying again: a batch that fails from now on is given up (its waiters return).
    func stop() {
        state.withLock { $0.stopped = true }
    }

    private func flush(_ send: Send) async {
        while true {
            let batch = state.withLock { state in
                let batch = state.pending
                state.pending = []
                if batch.isEmpty { state.flushing = false }
                return batch
            }
            if batch.isEmpty { return }
            var failures = 0
            // Retried until it lands: a lease that expires meanwhile makes the store ignore it,
            // and so does a repeat of a call that landed without answering.
            let completions = batch.map(\.0)
            while true {
                do {
                    try await send(completions, failures == 0)
                    break
                } catch {
                    failures += 1
                    if failures > 600 || state.withLock({ $0.stopped }) { break }
                    try? await Task.sleep(for: .milliseconds(min(2_000, 50 << min(failures, 6))))
                }
            }
            for (_, continuation) in batch { continuation.resume() }
        }
    }
}
#endif

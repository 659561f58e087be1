// A worker that claims an operation again while the previous attempt's task is still
// finishing must keep track of the new attempt.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
import OperationsDurable
import OperationsTestSupport
import Testing

/// A store that, once a failed attempt of `operation` is recorded, holds the worker's
/// completion call until the worker has claimed that operation again: the previous
/// attempt's task then finishes after the next attempt started.
private func reclaimBeforeCompletionReturns(
    _ base: any DurableOperationStore, holding operation: DurableOperationID
) -> InterceptingStore {
    let reclaimed = TestGate()
    var hooks = InterceptingStore.Hooks()
    hooks.afterComplete = { completions in
        if completions.contains(where: { completion in
            guard completion.id == operation, case .failed = completion.result else { return false }
            return true
        }) {
            await reclaimed.waitIgnoringCancellation()
        }
    }
    hooks.afterClaim = { claims in
        if claims.contains(where: { $0.id == operation && $0.attempt > 1 }) { reclaimed.open() }
    }
    return InterceptingStore(base, hooks: hooks)
}

@Suite("A worker's attempts of one operation", .timeLimit(.minutes(2)))
struct WorkerAttemptTrackingTests {
    @Test(
        "an attempt claimed while the previous attempt's task still finishes runs tracked, and its result is recorded",
        arguments: StoreKind.all)
    func reclaimWhilePreviousAttemptFinishes(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let flaky = try await DurableQueue(name: "default", store: store)
                .add(Flaky.self, input: 2, retry: DurableRetry(.immediate, maximumAttempts: 2))
            let gated = reclaimBeforeCompletionReturns(store, holding: flaky.id)
            let handle = DurableQueue(name: "default", store: gated).handle(Flaky.self, id: flaky.id)
            let value = try await valueRunningAWorker(of: handle, on: gated, "the second attempt")
            #expect(value == 2)
            #expect(try await handle.attempts.map(\.number) == [1, 2])
        }
    }

    @Test(
        "a worker whose heartbeat gets no answer, even one that ignores cancellation, stops its bodies once its lease may have passed",
        arguments: StoreKind.all)
    func unansweredHeartbeatStopsTheBodies(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await DurableQueue(name: "default", store: store).add(RunsUntilStopped.self, input: 0)
            // Every heartbeat after the one that registers the worker waits for a gate that opens
            // only when the test ends.
            let unanswered = TestGate()
            var hooks = InterceptingStore.Hooks()
            hooks.holdHeartbeatsAfterTheFirst(until: unanswered)
            let body = RunsUntilStopped()
            var configuration = testWorkerConfiguration()
            configuration.lease = .seconds(2)
            configuration.heartbeatInterval = .milliseconds(200)
            let worker = DurableWorker(
                store: InterceptingStore(store, hooks: hooks), queues: ["default"], kinds: [body], configuration: configuration)
            let run = Task { try await worker.run() }
            defer {
                unanswered.open()
                worker.stop()
            }
            try await within(60, "the body to start") { await body.started.wait() }
            try await within(60, "the body to be stopped") { await body.stopped.wait() }
            unanswered.open()
            worker.stop()
            try await run.value
        }
    }
}

/// Runs until its task is cancelled; says when it started and when it was stopped.
private struct RunsUntilStopped: DurableOperation {
    static let kind = "runs-until-stopped"
    let started = TestGate()
    let stopped = TestGate()

    func run(_ input: Int, context: DurableContext) async throws -> Int {
        started.open()
        do {
            try await Task.sleep(for: .seconds(3600))
        } catch {
            stopped.open()
            throw error
        }
        return input
    }
}
#endif

// What a worker that stops leaves in the store: nothing held.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
@_spi(Engine) import Operations
import OperationsDurable
import OperationsTestSupport
import Testing

@Suite("A worker's shutdown", .timeLimit(.minutes(2)))
struct WorkerShutdownTests {
    @Test(
        "a worker that stops gives back an operation it claimed but never heard of, so that it costs no attempt",
        arguments: StoreKind.all)
    func claimWhoseAnswerWasLostIsGivenBackAtShutdown(_ kind: StoreKind) async throws {
        // The claim is recorded, and its answer never reaches the worker (it gives up on the
        // call). Heartbeats after the one that registers the worker get no answer either, so
        // that no heartbeat finds the claim held without running and gives it back first.
        let record = try await stopAndExpectGivenBack(
            kind, input: 5, configuration: testWorkerConfiguration(), "the claim to be recorded",
            holding: { handle, claimed, unanswered in
                var hooks = InterceptingStore.Hooks()
                hooks.afterClaim = { claims in
                    guard claims.contains(where: { $0.id == handle.id }) else { return }
                    claimed.open()
                    await unanswered.waitIgnoringCancellation()
                }
                hooks.holdHeartbeatsAfterTheFirst(until: unanswered)
                return hooks
            },
            whileHeld: { handle in
                let state = try await handle.state
                #expect(state == .running)
            })
        #expect(record.attempts.first?.error?.contains("stopped") == true, "\(record.attempts)")
    }

    @Test(
        "a worker that stops records why it gave back a running body: its heartbeats meanwhile give back nothing",
        arguments: StoreKind.all)
    func heartbeatsWhileStoppingGiveNothingBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let handle = try await DurableQueue(name: "default", store: store).add(Hold.self, input: 2, retry: .never)
            // The shutdown's give-back of the stopped body waits until two heartbeats were
            // answered after it began: the body has left the worker's list by then, and the
            // store still counts the attempt as the worker's.
            let shutdownGivingBack = TestGate(), twoHeartbeats = TestGate()
            let heartbeatsSince = Shared(0), otherReasons = Shared<[String]>([])
            let stopped = "stopped before the body finished"
            var hooks = InterceptingStore.Hooks()
            hooks.beforeGiveBack = { attempts, reason in
                guard attempts.contains(where: { $0.operation == handle.id }) else { return }
                if reason.contains(stopped) {
                    shutdownGivingBack.open()
                    await twoHeartbeats.waitIgnoringCancellation()
                } else {
                    otherReasons.update { $0.append(reason) }
                }
            }
            hooks.afterHeartbeat = {
                guard shutdownGivingBack.isOpen else { return }
                if heartbeatsSince.update({ $0 += 1; return $0 }) == 2 { twoHeartbeats.open() }
            }
            defer { twoHeartbeats.open() }
            let worker = DurableWorker(
                store: InterceptingStore(store, hooks: hooks), queues: ["default"], kinds: [Hold()],
                configuration: testWorkerConfiguration())
            try await withRunningWorkerRecordingEvents(worker) { recorder in
                try await recorder.wait("the body's start") { events in
                    events.contains { $0.operation == handle.id && $0.kind == .started }
                }
            }
            let record = try #require(try await store.record(of: handle.id, includingAttempts: true))
            #expect(otherReasons.value.isEmpty, "given back meanwhile: \(otherReasons.value)")
            #expect(record.attempts.first?.error?.contains(stopped) == true, "\(record.attempts)")
        }
    }

    @Test(
        "a worker that stops while the store does not take a finished attempt's result gives the operation back",
        arguments: StoreKind.all)
    func resultNotRecordedByShutdownIsGivenBack(_ kind: StoreKind) async throws {
        var configuration = testWorkerConfiguration()
        configuration.shutdownDeadline = .milliseconds(100)
        // Recording the end of an attempt gets no answer (the worker tries again and again).
        _ = try await stopAndExpectGivenBack(
            kind, input: 6, configuration: configuration, "the body's end to be recorded",
            holding: { _, completing, unanswered in
                var hooks = InterceptingStore.Hooks()
                hooks.beforeComplete = { _ in
                    completing.open()
                    await unanswered.waitIgnoringCancellation()
                }
                return hooks
            })
    }

    /// Adds an `Echo` of `input` with one attempt to a fresh store of `kind`, and runs a worker
    /// over the hooks `holding` makes from its handle, a gate that they open when they hold a
    /// call, and a gate that releases the held calls (opened when this returns). Once the
    /// first gate opens (and after `whileHeld`) stops the worker, and checks that the stop
    /// gave the operation back: ready with one attempt, which did not count (another worker
    /// then runs it, although it allows one). Returns the record after the stop.
    /// The store call timeout stays the default: the worker gives up on a held call after it,
    /// and every other call of a loaded machine must fit in it.
    private func stopAndExpectGivenBack(
        _ kind: StoreKind, input: Int, configuration: DurableWorker.Configuration, _ what: String,
        holding makeHooks: (DurableHandle<Echo>, _ reached: TestGate, _ unanswered: TestGate) -> InterceptingStore.Hooks,
        whileHeld: (DurableHandle<Echo>) async throws -> Void = { _ in }
    ) async throws -> DurableRecord {
        try await withStore(kind) { store in
            let handle = try await DurableQueue(name: "default", store: store).add(Echo.self, input: input, retry: .never)
            let reached = TestGate(), unanswered = TestGate()
            defer { unanswered.open() }
            let worker = DurableWorker(
                store: InterceptingStore(store, hooks: makeHooks(handle, reached, unanswered)), queues: ["default"],
                kinds: [Echo()], configuration: configuration)
            let run = Task { try await worker.run() }
            try await within(60, what) { await reached.wait() }
            try await whileHeld(handle)
            worker.stop()
            try await run.value
            let record = try #require(try await store.record(of: handle.id, includingAttempts: true))
            #expect(record.state == .ready, "given back, not left to expire and fail")
            #expect(record.attempts.count == 1)
            let value = try await valueRunningAWorker(of: handle, on: store, "the operation given back")
            #expect(value == input)
            return record
        }
    }
}
#endif

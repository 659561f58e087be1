// How a worker talks to its store at steady state: the ends of a batch of attempts are
// recorded and as many operations claimed in one call.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
import OperationsPostgres
import OperationsTestSupport
import Testing

@Suite("A worker's conversation with its store", .timeLimit(.minutes(2)))
struct WorkerConversationTests {
    @Test("a worker whose ends claim the next operations never runs more attempts at once than its concurrency", arguments: StoreKind.all)
    func endsThatClaimKeepTheConcurrency(_ kind: StoreKind) async throws {
        try await withWorkRunOnThreeSlots(kind, count: 120, milliseconds: 2) { handles, _ in
            var attempts: [DurableAttempt] = []
            for handle in handles {
                #expect(try await handle.outcome == .succeeded)
                attempts += try await handle.attempts
            }
            #expect(attempts.count == 120)
            // An attempt runs from its claim to its recorded end.
            #expect(maximumOverlap(attempts) <= 3)
        }
    }

    @Test("the ends of a batch of attempts claim the next operations in the same call", arguments: StoreKind.all)
    func endsClaimTheNextOperations(_ kind: StoreKind) async throws {
        let count = 120
        try await withWorkRunOnThreeSlots(kind, count: count, milliseconds: 1) { _, store in
            let (alone, withEnds) = (store.calls.claimedAlone.load(ordering: .relaxed), store.calls.claimedWithEnds.load(ordering: .relaxed))
            #expect(alone + withEnds == count)
            // Only the first slots, and slots a batch of ends could not fill, are claimed alone.
            #expect(withEnds >= count * 3 / 4, "\(withEnds) of \(count) claimed with ends, \(alone) alone")
        }
    }

    @Test("a worker that stops while its ends are being recorded starts none of the operations that call claims, and gives them back", arguments: StoreKind.all)
    func claimsWithEndsAfterAStopAreGivenBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            let queue = DurableQueue(name: "default", store: base)
            try await queue.setSuspended(true)
            let first = try await queue.add(Echo.self, input: 1)
            let second = try await queue.add(Echo.self, input: 2, retry: .never)
            // The record of the first operation's end waits until the worker was told to stop.
            let (recording, stopped) = (TestGate(), TestGate())
            var hooks = InterceptingStore.Hooks()
            hooks.beforeComplete = { completions in
                guard completions.contains(where: { $0.id == first.id }) else { return }
                recording.open()
                await stopped.waitIgnoringCancellation()
            }
            var configuration = testWorkerConfiguration(name: "stopping")
            configuration.stopSignals = []
            let worker = DurableWorker(
                store: InterceptingStore(base, hooks: hooks), queues: ["default"], kinds: allTestKinds, concurrency: 1,
                configuration: configuration)
            let run = Task { try await worker.run() }
            try await queue.setSuspended(false)
            try await within(30, "the first end's record") { await recording.wait() }
            worker.stop()
            stopped.open()
            try await within(30, "the worker's return") { try await run.value }
            #expect(try await first.outcome == .succeeded)
            // Claimed with that end, it was given back unstarted, costing nothing.
            #expect(try await second.state == .ready)
            let attempts = try await second.attempts
            #expect(attempts.allSatisfy { $0.error?.contains("stopped before it started the body") == true }, "\(attempts)")
        }
    }

    @Test("a worker of two queues kept busy by one claims from the other too", arguments: StoreKind.all)
    func busyQueueDoesNotStarveTheOther(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let busy = DurableQueue(name: "busy", store: store)
            let other = DurableQueue(name: "other", store: store)
            let many = try await busy.addOperations(Work.self, inputs: Array(repeating: 10, count: 200))
            let late = try await withWorkers(store: store, queues: ["busy", "other"], concurrency: 2) { _ async throws in
                try await pollUntil(30, "the busy queue's first end") { try await busy.operationCounts.succeeded > 0 }
                let late = try await other.add(Echo.self, input: 1)
                _ = try await within(60, "the other queue's operation") { try await late.value }
                // It ran while the busy queue still had work: 200 bodies of 10 ms on 2 slots.
                #expect(try await busy.operationCount > 0)
                try await within(60, "the busy queue") { try await busy.waitUntilFinished(many) }
                return late
            }
            #expect(try await late.outcome == .succeeded)
        }
    }

    /// Adds `count` operations of `Work` (`milliseconds` each) to the suspended queue
    /// "default" of a fresh store of `kind`, then runs a worker with a concurrency of 3 from
    /// the queue's resumption until every operation has finished. The worker talks to the
    /// store through an `InterceptingStore` without hooks, which counts its calls; the body
    /// reads the handles and that store.
    private func withWorkRunOnThreeSlots(
        _ kind: StoreKind, count: Int, milliseconds: Int,
        _ body: ([DurableHandle<Work>], InterceptingStore) async throws -> Void
    ) async throws {
        try await withDefaultQueue(kind) { queue, base in
            let store = InterceptingStore(base, hooks: .init())
            try await queue.setSuspended(true)
            let handles = try await queue.addOperations(Work.self, inputs: Array(repeating: milliseconds, count: count))
            try await withWorkers(store: store, concurrency: 3) { _ async throws in
                try await queue.setSuspended(false)
                try await within(60, "the operations") { try await queue.waitUntilFinished(handles) }
            }
            try await body(handles, store)
        }
    }
}
#endif
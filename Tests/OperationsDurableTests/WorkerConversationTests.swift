// How a worker talks to its store at steady state: the ends of a batch of attempts are
// recorded and as many operations claimed in one call.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
import OperationsPostgres
import Testing

@Suite("A worker's conversation with its store", .timeLimit(.minutes(2)))
struct WorkerConversationTests {
    @Test("a worker whose ends claim the next operations never runs more attempts at once than its concurrency", arguments: StoreKind.all)
    func endsThatClaimKeepTheConcurrency(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let queue = DurableQueue(name: "default", store: store)
            let handles = try await queue.addOperations(Work.self, inputs: Array(repeating: 2, count: 120))
            try await withWorkers(store: store, concurrency: 3) { _ async throws in
                try await within(60, "the operations") { try await queue.waitUntilFinished(handles) }
            }
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
        try await withStore(kind) { base in
            let store = InterceptingStore(base, hooks: .init())
            let queue = DurableQueue(name: "default", store: base)
            try await queue.setSuspended(true)
            let count = 120
            let handles = try await queue.addOperations(Work.self, inputs: Array(repeating: 1, count: count))
            try await withWorkers(store: store, concurrency: 3) { _ async throws in
                try await queue.setSuspended(false)
                try await within(60, "the operations") { try await queue.waitUntilFinished(handles) }
            }
            let (alone, withEnds) = (store.calls.claimedAlone.load(ordering: .relaxed), store.calls.claimedWithEnds.load(ordering: .relaxed))
            #expect(alone + withEnds == count)
            // Only the first slots, and slots a batch of ends could not fill, are claimed alone.
            #expect(withEnds >= count * 3 / 4, "\(withEnds) of \(count) claimed with ends, \(alone) alone")
        }
    }
}
#endif

// Adding many operations at once, counting a queue's operations, and waiting for many:
// what every store must do, written against the store protocol.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Operations
import OperationsDurable
import OperationsPostgres
import Synchronization
import Testing

@Suite("Durable batches, counts and waits on each store", .timeLimit(.minutes(2)))
struct DurableBatchesAndWaitsTests {
    @Test("awaiting many handles at once listens to the store once and reads each record a bounded number of times", arguments: StoreKind.all)
    func awaitingManyHandlesListensOnce(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            // The waiters go through a store that counts; the worker uses the store itself.
            let counted = InterceptingStore(base, hooks: .init())
            let queue = DurableQueue(name: "default", store: counted)
            let count = 60
            let handles = try await queue.addOperations(Echo.self, inputs: Array(0..<count))
            let started = counted.calls.recordReads.load(ordering: .relaxed)
            let waiters = handles.map { handle in Task { try await handle.value } }
            // Every waiter has read its record (and is waiting) before any operation runs.
            try await pollUntil(30, "every waiter's first read") {
                counted.calls.recordReads.load(ordering: .relaxed) - started >= count
            }
            let values = try await withWorkers(store: base, concurrency: 8) { _ async throws in
                try await within(60, "every value") {
                    var sum = 0
                    for waiter in waiters { sum += try await waiter.value }
                    return sum
                }
            }
            #expect(values == (0..<count).reduce(0, +))
            #expect(counted.calls.subscriptions.load(ordering: .relaxed) == 1)
            // A first read, a read of the output; a handful of shared reads of states.
            #expect(counted.calls.recordReads.load(ordering: .relaxed) - started <= 2 * count)
            #expect(counted.calls.notificationsDelivered.load(ordering: .relaxed) <= 4 * count)
            #expect(counted.finishWatch.waiting.holds == 0)
        }
    }

    @Test("a batch is added in one call, its members depending on each other and on stored operations, with an event for each", arguments: StoreKind.all)
    func batchWithDependenciesAmongMembers(_ kind: StoreKind) async throws {
        try await withStore(kind) { base in
            let counted = InterceptingStore(base, hooks: .init())
            let queue = DurableQueue(name: "default", store: counted)
            let events = Shared<[DurableEvent]>([])
            let subscription = queue.addEventHandler { event in events.update { $0.append(event) } }
            defer { subscription.cancel() }
            let stored = try await queue.add(Echo.self, input: 1)
            let callsBefore = counted.calls.enqueueCalls.load(ordering: .relaxed)

            var batch = DurableBatch()
            let top = try batch.add(Work.self, input: 0, dependencies: [stored])
            let left = try batch.add(Work.self, input: 0, dependencies: [top])
            let right = try batch.add(Work.self, input: 0, dependencies: [top])
            let bottom = try batch.add(Work.self, input: 0, dependencies: [left, right])
            let added = try await queue.addOperations(batch)

            #expect(counted.calls.enqueueCalls.load(ordering: .relaxed) - callsBefore == 1)
            #expect(added.results.count == 4 && added.results.allSatisfy { !$0.coalesced })
            #expect(Set(added.ids).count == 4)
            #expect(try await added[top].state == .waiting)
            let enqueued = events.value.filter { $0.kind == .enqueued }.map(\.operation)
            #expect(enqueued == [stored.id] + added.ids)
            let bottomEvent = try #require(events.value.first { $0.kind == .enqueued && $0.operation == added[bottom].id })
            #expect(Set(bottomEvent.dependencies) == [added[left].id, added[right].id])

            try await withWorkers(store: base) { _ async throws in
                try await within(30, "the batch") { try await queue.waitUntilFinished([added[bottom]]) }
            }
            let bottomStart = try #require(try await added[bottom].attempts.first).start
            let topEnd = try #require(try await added[top].attempts.first?.end)
            for side in [added[left], added[right]] {
                let attempt = try #require(try await side.attempts.first)
                #expect(attempt.start >= topEnd)
                #expect(try #require(attempt.end) <= bottomStart)
            }
        }
    }

    @Test("a batch member reads the outputs of the members it depends on through its context, in the order they were added", arguments: StoreKind.all)
    func batchMemberReadsItsDependenciesOutputs(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let stored = try await queue.add(Echo.self, input: 1_000)
            var batch = DurableBatch()
            let echoes = try [3, 1, 2].map { try batch.add(Echo.self, input: $0) }
            let unrelated = try batch.add(Work.self, input: 0)
            let sum = try batch.add(SumOfEchoes.self, input: 100, dependencies: [stored] + echoes + [unrelated])
            let added = try await queue.addOperations(batch)
            let value = try await withWorkers(store: store) { _ async throws in
                try await within(30, "the sum") { try await added[sum].value }
            }
            #expect(value == [1_106, 1_000, 3, 1, 2])
        }
    }

    @Test("a batch member whose key another kind holds refuses the whole batch, naming both kinds", arguments: StoreKind.all)
    func batchIsAllOrNothing(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            _ = try await queue.add(Echo.self, input: 1, key: "shared")
            var batch = DurableBatch()
            let first = try batch.add(Work.self, input: 0)
            try batch.add(Work.self, input: 0, dependencies: [first], key: "shared")
            let error = await #expect(throws: DurableError.self) { try await queue.addOperations(batch) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("echo") == true && error?.message.contains("work") == true)
            // Nothing of the batch was stored.
            #expect(try await queue.operationCount == 1)
        }
    }

    @Test("a batch member whose key coalesces stands for the pending operation in the batch's dependencies", arguments: StoreKind.all)
    func coalescedMemberStandsForThePendingOperation(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            let pending = try await queue.add(Work.self, input: 0, key: "once")
            var batch = DurableBatch()
            let again = try batch.add(Work.self, input: 0, key: "once")
            let after = try batch.add(Work.self, input: 0, dependencies: [again])
            let added = try await queue.addOperations(batch)
            #expect(added.results[0] == DurableEnqueueResult(id: pending.id, coalesced: true))
            #expect(added[again] == pending)
            #expect(try await store.record(of: added[after].id, includingAttempts: false)?.unfinishedDependencies == 1)
            #expect(try await queue.operationCount == 2)
        }
    }

    @Test("a batch member may depend only on members added before it to the same batch")
    func batchMemberDependsOnEarlierMembersOnly() throws {
        var batch = DurableBatch()
        _ = try batch.add(Echo.self, input: 1)
        var other = DurableBatch()
        _ = try other.add(Echo.self, input: 1)
        let later = try other.add(Echo.self, input: 2)
        let error = #expect(throws: DurableError.self) { try batch.add(Echo.self, input: 3, dependencies: [later]) }
        #expect(error?.message.contains("member 1") == true)
        // A member of another batch, even at an earlier position, is refused.
        let first = try other.add(Echo.self, input: 4)
        _ = try batch.add(Echo.self, input: 5)
        _ = try batch.add(Echo.self, input: 7)
        let foreign = #expect(throws: DurableError.self) { try batch.add(Echo.self, input: 6, dependencies: [first]) }
        #expect(foreign?.message.contains("another batch") == true)
        #expect(batch.count == 3)
    }

    @Test("the counts tell each state, and operationCount the unfinished ones", arguments: StoreKind.all)
    func countsByState(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let other = DurableQueue(name: "other", store: store)
            _ = try await other.add(Echo.self, input: 0)
            let done = try await queue.addOperations(Echo.self, inputs: [1, 2, 3])
            let failing = try await queue.add(Flaky.self, input: 5, retry: .never)
            try await withWorkers(store: store) { _ async throws in
                try await within(30, "the first operations") { try await queue.waitUntilFinished(done.map(\.id) + [failing.id]) }
            }
            try await queue.setSuspended(true)
            let ready = try await queue.add(Echo.self, input: 4)
            _ = try await queue.add(Echo.self, input: 5, dependencies: [ready])
            let cancelled = try await queue.add(Echo.self, input: 6)
            try await cancelled.cancel()
            let expected = DurableOperationCounts.counting([\.waiting: 1, \.ready: 1, \.succeeded: 3, \.failed: 1, \.cancelled: 1])
            #expect(try await queue.operationCounts == expected)
            #expect(try await queue.operationCount == 2)
            #expect(try await other.operationCount == 1)
        }
    }

    @Test("waitUntilAllOperationsAreFinished returns once the queue has drained, operations added meanwhile included", arguments: StoreKind.all)
    func waitUntilAllOperationsAreFinished(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            let first = try await queue.addOperations(Echo.self, inputs: Array(0..<20))
            let returned = Shared(false)
            try await withWorkers(store: store, concurrency: 8) { _ async throws in
                try await within(60, "the drain") {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            try await queue.waitUntilAllOperationsAreFinished()
                            returned.set(true)
                        }
                        // The wait has begun; the queue is suspended, so it cannot return.
                        try await pollUntil(30, "the wait's start") { store.finishWatch.waiting.holds == 1 }
                        #expect(!returned.value)
                        let later = try await queue.add(Echo.self, input: 99)
                        try await queue.setSuspended(false)
                        try await group.waitForAll()
                        #expect(try await later.state == .succeeded)
                        for handle in first { #expect(try await handle.state == .succeeded) }
                    }
                }
            }
            #expect(returned.value)
            #expect(try await queue.operationCount == 0)
            #expect(store.finishWatch.waiting.holds == 0)
        }
    }

    @Test("addOperations waiting until finished returns with every member finished, failures included", arguments: StoreKind.all)
    func addOperationsWaitingUntilFinished(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            var batch = DurableBatch()
            let fine = try batch.add(Echo.self, input: 7)
            let broken = try batch.add(Flaky.self, input: 9, retry: .never)
            let dependent = try batch.add(Echo.self, input: 8, dependencies: [broken])
            let complete = batch
            let added = try await withWorkers(store: store) { _ async throws in
                try await within(30, "the batch") { try await queue.addOperations(complete, waitUntilFinished: true) }
            }
            #expect(try await added[fine].outcome == .succeeded)
            #expect(try await added[broken].state == .failed)
            #expect(try await added[dependent].state == .cancelled)
        }
    }

    @Test("waiting for an operation that is not stored throws notFound", arguments: StoreKind.all)
    func waitingForAMissingOperation(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let error = await #expect(throws: DurableError.self) {
                try await queue.waitUntilFinished([DurableOperationID(rawValue: 987_654)])
            }
            #expect(error?.code == .notFound)
            #expect(store.finishWatch.waiting == (0, 0, false))
        }
    }

    @Test("a cancelled wait leaves nothing awaited", arguments: StoreKind.all)
    func cancelledWaitLeavesNothing(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            let handle = try await queue.add(Echo.self, input: 1)
            let waiting = Task { try await handle.value }
            try await pollUntil(30, "the wait") { store.finishWatch.waiting.operations == 1 }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(store.finishWatch.waiting == (0, 0, false))
        }
    }

    @Test("a batch of many operations is one statement on PostgreSQL", .enabled(if: PostgresCluster.isAvailable))
    func postgresBatchIsOneStatement() async throws {
        try await withStore(.named("PostgreSQL")) { store in
            let postgres = try #require(store as? PostgresOperationStore)
            let queue = DurableQueue(name: "default", store: store)
            try await queue.setSuspended(true)
            let before = postgres.statementsSent
            var batch = DurableBatch()
            var previous: DurableBatch.Member<Echo>?
            for index in 0..<500 {
                previous = try batch.add(Echo.self, input: index, dependencies: previous.map { [$0] } ?? [])
            }
            let added = try await queue.addOperations(batch)
            #expect(postgres.statementsSent - before == 1)
            #expect(added.results.count == 500)
            #expect(try await queue.operationCounts.waiting == 499)
        }
    }
}
#endif

// The events durable queues and workers report: on each store, in order.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Operations
import OperationsDurable
import OperationsSQLite
import OperationsTestSupport
import Synchronization
import Testing

@Suite("Events of durable queues and workers", .timeLimit(.minutes(2)))
struct DurableEventTests {
    @Test("a run reports enqueued, started, retried, cancelled and finished in order", arguments: StoreKind.all)
    func eventsOfARun(_ kind: StoreKind) async throws {
        try await withRecordedWorker(kind) { queue, worker, workerEvents in
            let queueEvents = DurableEventRecorder()
            let queueSubscription = queue.addEventHandler(queueEvents.record)
            let echo = try await queue.add(Echo.self, input: 1)
            let flaky = try await queue.add(
                Flaky.self, input: 2, dependencies: [echo], retry: DurableRetry(.immediate, maximumAttempts: 3))
            let hold = try await queue.add(Hold.self, input: 99, retry: .never)

            try await withRunningWorker(worker) {
                try await workerEvents.wait("the hold's start") { events in
                    events.contains { $0.operation == hold.id && $0.kind == .started }
                }
                try await hold.cancel(reason: "not needed")
                try await workerEvents.wait("the ends of all three") { events in
                    [echo.id, flaky.id, hold.id].allSatisfy { id in events.contains { $0.finishes(id) } }
                }
            }
            queueSubscription.cancel()

            // The queue: what was added and cancelled through it, numbered from 0.
            let added = queueEvents.events
            #expect(added.map(\.kind) == [.enqueued, .enqueued, .enqueued, .cancelled])
            #expect(added.map(\.operation) == [echo.id, flaky.id, hold.id, hold.id])
            #expect(added.map(\.operationKind) == ["echo", "flaky", "hold", "hold"])
            #expect(added.map(\.sequence) == [0, 1, 2, 3])
            #expect(added.map(\.dependencies) == [[], [echo.id], [], []])
            #expect(added.allSatisfy { $0.queue == "default" && $0.worker == nil && $0.attempt == nil })
            #expect(added.last?.error == "not needed")

            // The worker: each attempt's start and end, in one numbered order.
            let ran = workerEvents.events
            #expect(ran.map(\.sequence) == Array(0..<UInt64(ran.count)))
            #expect(ran.allSatisfy { $0.worker == worker.id && $0.queue == "default" })
            #expect(zip(ran, ran.dropFirst()).allSatisfy { $0.time <= $1.time })
            func of(_ id: DurableOperationID) -> [DurableEvent] { ran.filter { $0.operation == id } }
            #expect(of(echo.id).map(\.kind) == [.started, .finished(.succeeded)])
            #expect(of(flaky.id).map(\.kind) == [.started, .retried, .started, .finished(.succeeded)])
            #expect(of(flaky.id).map(\.attempt) == [1, 1, 2, 2])
            #expect(of(flaky.id).map(\.error) == [nil, "flaky attempt 1 failed", nil, nil])
            #expect(of(flaky.id).filter { $0.kind == .started }.map(\.dependencies) == [[echo.id], [echo.id]])
            #expect(of(flaky.id).allSatisfy { $0.operationKind == "flaky" })
            #expect(of(hold.id).map(\.kind) == [.started, .cancelled, .finished(.cancelled("not needed"))])
            #expect(of(hold.id).map(\.attempt) == [1, 1, 1])
            // A dependency's end comes before its dependent's start.
            let echoEnd = try #require(ran.firstIndex { $0.finishes(echo.id) })
            let flakyStart = try #require(ran.firstIndex { $0.operation == flaky.id })
            #expect(echoEnd < flakyStart)
            #expect(try await hold.outcome == .cancelled("not needed"))
        }
    }

    @Test("a failure without attempts left finishes as failed", arguments: StoreKind.all)
    func finalFailure(_ kind: StoreKind) async throws {
        try await withRecordedWorker(kind) { queue, worker, recorder in
            let failing = try await queue.add(Flaky.self, input: 5, retry: DurableRetry(.immediate, maximumAttempts: 2))
            try await withRunningWorker(worker) {
                try await recorder.wait("the failure") { events in events.contains { $0.finishes(failing.id) } }
            }
            #expect(recorder.events.map(\.kind) == [.started, .retried, .started, .finished(.failed("flaky attempt 2 failed"))])
            #expect(recorder.events.last?.error == "flaky attempt 2 failed")
        }
    }

    @Test("a handler that does not return holds up no body, claim or heartbeat of the worker", arguments: StoreKind.all)
    func slowHandlerHoldsUpNothing(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let worker = DurableWorker(
                store: store, queues: ["default"], kinds: allTestKinds, configuration: testWorkerConfiguration(name: "slow-handler"))
            // The first event's handler blocks its thread until the test is done with the
            // operations, or for 30 s (a worker that waited for it is then seen to have waited).
            let release = DispatchSemaphore(value: 0), first = Atomic(true), returned = Atomic(false)
            let subscription = worker.addEventHandler { _ in
                guard first.exchange(false, ordering: .acquiringAndReleasing) else { return }
                _ = release.wait(timeout: .now() + 30)
                returned.store(true, ordering: .releasing)
            }
            defer { release.signal() }
            let (values, handlerReturned) = try await withRunningWorker(worker) {
                let first = try await queue.add(Echo.self, input: 1)
                let second = try await queue.add(Echo.self, input: 2)
                let values = try await within(60, "both operations") { [try await first.value, try await second.value] }
                let handlerReturned = returned.load(ordering: .acquiring)
                release.signal()
                return (values, handlerReturned)
            }
            #expect(values == [1, 2])
            #expect(!handlerReturned, "both operations finished only after the handler of the first event returned")
            subscription.cancel()
        }
    }

    @Test("an attempt the worker gives back when it stops is reported as retried, saying why", arguments: StoreKind.all)
    func givenBack(_ kind: StoreKind) async throws {
        // No time for running bodies: stopping gives the attempt back at once.
        var configuration = longLeaseConfiguration(name: "stopping")
        configuration.shutdownDeadline = .zero
        try await withRecordedWorker(kind, configuration: configuration) { queue, worker, recorder in
            let hold = try await queue.add(Hold.self, input: 99, retry: .never)
            try await withRunningWorker(worker) {
                try await recorder.wait("the hold's start") { events in events.contains { $0.kind == .started } }
            }
            try await recorder.wait("the hold's end") { events in events.count == 2 }
            #expect(recorder.events.map(\.kind) == [.started, .retried])
            #expect(recorder.events.last?.error == "worker \(worker.id) stopped before the body finished")
            #expect(recorder.events.last?.attempt == 1)
            #expect(try await hold.state == .ready)
        }
    }

    /// Runs the body with a fresh store of `kind`, its queue "default", and a worker of that
    /// queue (every test kind, `configuration`) whose events the recorder records until the
    /// body has returned.
    private func withRecordedWorker(
        _ kind: StoreKind, configuration: DurableWorker.Configuration = longLeaseConfiguration(name: "events"),
        _ body: (DurableQueue, DurableWorker, DurableEventRecorder) async throws -> Void
    ) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let worker = DurableWorker(store: store, queues: ["default"], kinds: allTestKinds, configuration: configuration)
            let recorder = DurableEventRecorder()
            let subscription = worker.addEventHandler(recorder.record)
            defer { subscription.cancel() }
            try await body(queue, worker, recorder)
        }
    }

    @Test("the event stream yields a queue's events from when its iterator is made, and stops when it is released")
    func eventStream() async throws {
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "streamed", store: store)
        try await queue.add(Echo.self, input: 0)
        let copy = queue
        var iterator: DurableEventStream.Iterator? = queue.events().makeAsyncIterator()
        let first = try await copy.add(Echo.self, input: 1)
        let second = try await queue.add(Echo.self, input: 2, dependencies: [first])
        let element = try #require(await iterator?.next())
        #expect(element.event.operation == first.id && element.event.kind == .enqueued)
        #expect(element.droppedBefore == 0)
        #expect(element.event.sequence == 0, "nobody listened when the first operation was added")
        let next = try #require(await iterator?.next())
        #expect(next.event.operation == second.id && next.event.dependencies == [first.id])
        iterator = nil
        // Released: its handler went with it, so an operation added now is not numbered
        // (nobody listens), and the next listener's first event is the third.
        try await queue.add(Echo.self, input: 3)
        let recorder = DurableEventRecorder()
        let subscription = queue.addEventHandler(recorder.record)
        try await queue.add(Echo.self, input: 4)
        subscription.cancel()
        #expect(recorder.events.map(\.sequence) == [2])
        await store.shutdown()
    }

    @Test("a full stream buffer drops the oldest events and says how many")
    func streamDropsOldest() async throws {
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "streamed", store: store)
        var iterator = queue.events(bufferingNewest: 2).makeAsyncIterator()
        var handles: [DurableHandle<Echo>] = []
        for input in 0..<5 { handles.append(try await queue.add(Echo.self, input: input)) }
        let first = try #require(await iterator.next())
        #expect(first.droppedBefore == 3)
        #expect(first.event.operation == handles[3].id)
        let second = try #require(await iterator.next())
        #expect(second.droppedBefore == 0 && second.event.operation == handles[4].id)
        await store.shutdown()
    }
}
#endif

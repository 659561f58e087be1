// What an operator's tool reads from each store (`DurableStoreInspection`), and its retry:
// each test runs once per store in `StoreKind.all`.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Operations
import OperationsDurable
import OperationsPostgres
import Testing

// Serialized: each PostgreSQL store holds up to nine connections of the cluster the whole
// target shares, and its tests running at once add to the other suites' stores.
@Suite("Inspecting each store", .serialized, .timeLimit(.minutes(2)))
struct StoreInspectionTests {
    @Test("queue summaries count each state, finished ones only within the window", arguments: StoreKind.all)
    func queueSummaries(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let succeeded = [
                try await queue.add(Echo.self, input: 1), try await queue.add(Echo.self, input: 2),
                try await queue.add(Echo.self, input: 3),
            ]
            let failed = try await queue.add(Flaky.self, input: 99, retry: .never)
            let running = try await queue.add(Hold.self, input: 99)
            let claims = try await claimAndEnd(kinds: [Echo.kind, Flaky.kind, Hold.kind], on: store) { id in
                id == failed.id ? .failed(error: "boom") : id == running.id ? nil : .succeeded(output: "0")
            }
            #expect(claims.count == 5)
            try await queue.add(Echo.self, input: 4).cancel(reason: "not wanted")
            try await queue.add(Echo.self, input: 5)
            try await queue.add(Echo.self, input: 6, dependencies: [running])
            // One success finished two hours ago: outside a window of one hour.
            let now = Date()
            try await setFinishedAt(succeeded[2].id, now.addingTimeInterval(-7_200), in: store)

            let limited = DurableQueue(name: "limited", store: store)
            try await limited.setMaxConcurrentOperationCount(2)
            try await DurableQueue(name: "paused", store: store).setSuspended(true)
            let old = DurableQueue(name: "old", store: store)
            let oldOperation = try await old.add(Echo.self, input: 7)
            try await claimAndEnd(queue: "old", kinds: [Echo.kind], on: store) { _ in .succeeded(output: "7") }
            try await setFinishedAt(oldOperation.id, now.addingTimeInterval(-7_200), in: store)
            // A limit set and taken back is no setting.
            let unlimited = DurableQueue(name: "unlimited", store: store)
            try await unlimited.setMaxConcurrentOperationCount(3)
            try await unlimited.setMaxConcurrentOperationCount(nil)

            let summaries = try await inspection.queueSummaries(window: .seconds(3_600), now: now)
            #expect(summaries.map(\.name) == ["default", "limited", "paused"])
            var expected = DurableOperationCounts()
            expected.waiting = 1
            expected.ready = 1
            expected.running = 1
            expected.succeeded = 2
            expected.failed = 1
            expected.cancelled = 1
            let main = try #require(summaries.first { $0.name == "default" })
            #expect(main.counts == expected)
            #expect(main.limit == nil && !main.suspended)
            #expect(summaries.first { $0.name == "limited" } == DurableQueueSummary(
                name: "limited", counts: DurableOperationCounts(), limit: 2, suspended: false))
            #expect(summaries.first { $0.name == "paused" } == DurableQueueSummary(
                name: "paused", counts: DurableOperationCounts(), limit: nil, suspended: true))

            let wider = try await inspection.queueSummaries(window: .seconds(3 * 3_600), now: now)
            #expect(wider.map(\.name) == ["default", "limited", "old", "paused"])
            #expect(wider.first { $0.name == "default" }?.counts.succeeded == 3)
            #expect(wider.first { $0.name == "old" }?.counts.succeeded == 1)
        }
    }

    @Test("finished operations are counted per minute, oldest minute first", arguments: StoreKind.all)
    func finishedPerMinute(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            // Seconds before `now` each operation finished: minutes (from the newest) 0, 0, 1, 1, 3, and one
            // outside the five minutes asked for.
            let ages: [Double] = [10, 20, 70, 75, 200, 400]
            var handles: [DurableHandle<Flaky>] = []
            for _ in ages { handles.append(try await queue.add(Flaky.self, input: 1, retry: .never)) }
            try await claimAndEnd(kinds: [Flaky.kind], on: store) { id in
                id == handles[2].id ? .failed(error: "boom") : .succeeded(output: "1")
            }
            let cancelled = try await queue.add(Echo.self, input: 1)
            try await cancelled.cancel()
            let other = try await DurableQueue(name: "other", store: store).add(Echo.self, input: 1)
            try await claimAndEnd(queue: "other", kinds: [Echo.kind], on: store) { _ in .succeeded(output: "1") }

            let now = Date()
            for (handle, age) in zip(handles, ages) {
                try await setFinishedAt(handle.id, now.addingTimeInterval(-age), in: store)
            }
            try await setFinishedAt(cancelled.id, now.addingTimeInterval(-30), in: store)
            try await setFinishedAt(other.id, now.addingTimeInterval(-30), in: store)

            #expect(try await inspection.finishedPerMinute(queue: "default", minutes: 5, now: now) == [0, 1, 0, 2, 3])
            #expect(try await inspection.finishedPerMinute(queue: "default", minutes: 1, now: now) == [3])
            #expect(try await inspection.finishedPerMinute(queue: "other", minutes: 2, now: now) == [0, 1])
            #expect(try await inspection.finishedPerMinute(queue: "default", minutes: 0, now: now) == [])
        }
    }

    @Test("pages of each state follow one another without duplicates or gaps, in order", arguments: StoreKind.all)
    func paging(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let inspection = try #require(store as? any DurableStoreInspection)
            // Ready operations in several bands of priority: listed by id all the same.
            let readyQueue = DurableQueue(name: "ready", store: store)
            let priorities: [Operations.Operation.QueuePriority] = [.low, .high, .normal, .veryHigh, .low, .high, .normal, .veryLow]
            var ready: [DurableOperationID] = []
            for priority in priorities { ready.append(try await readyQueue.add(Echo.self, input: 0, priority: priority).id) }
            let readyPages = try await allPages(inspection, queue: "ready", state: .ready, limit: 3)
            #expect(readyPages.map(\.count) == [3, 3, 2])
            #expect(readyPages.flatMap { $0 }.map(\.id) == ready.sorted())
            #expect(readyPages.flatMap { $0 }.allSatisfy { $0.state == .ready && $0.queue == "ready" && $0.kind == Echo.kind })

            // Waiting ones, behind an operation of another queue.
            let blocker = try await DurableQueue(name: "blocker", store: store).add(Hold.self, input: 99)
            let waitingQueue = DurableQueue(name: "waiting", store: store)
            var waiting: [DurableOperationID] = []
            for index in 0..<5 { waiting.append(try await waitingQueue.add(Echo.self, input: index, dependencies: [blocker]).id) }
            let waitingPages = try await allPages(inspection, queue: "waiting", state: .waiting, limit: 2)
            #expect(waitingPages.map(\.count) == [2, 2, 1])
            #expect(waitingPages.flatMap { $0 }.map(\.id) == waiting)

            // Running ones.
            let runningQueue = DurableQueue(name: "running", store: store)
            var running: [DurableOperationID] = []
            for _ in 0..<4 { running.append(try await runningQueue.add(Hold.self, input: 99).id) }
            try await claimAndEnd(queue: "running", kinds: [Hold.kind], on: store) { _ in nil }
            let runningPages = try await allPages(inspection, queue: "running", state: .running, limit: 3)
            #expect(runningPages.flatMap { $0 }.map(\.id) == running)

            // Finished ones, most recently finished first; operations finished at one instant by id.
            let doneQueue = DurableQueue(name: "done", store: store)
            var done: [DurableOperationID] = []
            for index in 0..<7 { done.append(try await doneQueue.add(Flaky.self, input: index, retry: .never).id) }
            let failed = try await doneQueue.add(Flaky.self, input: 99, retry: .never)
            try await claimAndEnd(queue: "done", kinds: [Flaky.kind], on: store) { id in
                id == failed.id ? .failed(error: "flaky attempt 1 failed") : .succeeded(output: "0")
            }
            let cancelled = try await doneQueue.add(Echo.self, input: 0)
            try await cancelled.cancel(reason: "not wanted")
            let base = Date().addingTimeInterval(-600)
            let offsets: [Double] = [3, 1, 3, 0, 2, 3, 1]
            for (id, offset) in zip(done, offsets) { try await setFinishedAt(id, base.addingTimeInterval(offset), in: store) }
            let expected = zip(done, offsets).sorted { ($0.1, $0.0) > ($1.1, $1.0) }.map(\.0)
            let donePages = try await allPages(inspection, queue: "done", state: .succeeded, limit: 2)
            #expect(donePages.map(\.count) == [2, 2, 2, 1])
            #expect(donePages.flatMap { $0 }.map(\.id) == expected)
            #expect(donePages.flatMap { $0 }.allSatisfy { $0.finishedAt != nil && $0.error == nil && $0.attempt == 1 })

            let failedPage = try await inspection.operations(queue: "done", state: .failed, after: nil, limit: 10)
            #expect(failedPage.map(\.id) == [failed.id])
            #expect(failedPage.first?.error == "flaky attempt 1 failed")
            let cancelledPage = try await inspection.operations(queue: "done", state: .cancelled, after: nil, limit: 10)
            #expect(cancelledPage.map(\.id) == [cancelled.id])
            #expect(cancelledPage.first?.error == "not wanted")
            #expect(try await inspection.operations(queue: "done", state: .ready, after: nil, limit: 10).isEmpty)
        }
    }

    @Test(
        "pages of a queue among others hold its operations of the state alone, a rare state's too, ties in finish time by id",
        arguments: StoreKind.all)
    func pagingAmongQueues(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let names = ["alpha", "beta", "gamma"]
            // Added in turn, so that each queue's ids interleave with the others'; every third fails.
            var finished: [(queue: String, id: DurableOperationID, state: DurableState)] = []
            for round in 0..<7 {
                for name in names {
                    let handle = try await DurableQueue(name: name, store: store).add(Flaky.self, input: round, retry: .never)
                    finished.append((name, handle.id, finished.count % 3 == 1 ? .failed : .succeeded))
                }
            }
            for name in names {
                try await claimAndEnd(queue: name, kinds: [Flaky.kind], on: store) { id in
                    finished.first { $0.id == id }?.state == .failed ? .failed(error: "flaky attempt 1 failed") : .succeeded(output: "0")
                }
            }
            // The store's only cancelled operations: three of beta's.
            for _ in 0..<3 {
                let handle = try await DurableQueue(name: "beta", store: store).add(Echo.self, input: 0)
                try await handle.cancel(reason: "not wanted")
                finished.append(("beta", handle.id, .cancelled))
            }
            // Two instants of finishing: most pages hold operations finished at the same one.
            let base = Date().addingTimeInterval(-600)
            for (position, operation) in finished.enumerated() {
                try await setFinishedAt(operation.id, base.addingTimeInterval(Double(position % 2)), in: store)
            }
            let finishOffset = Dictionary(uniqueKeysWithValues: finished.enumerated().map { ($0.element.id, $0.offset % 2) })

            // Waiting ones of two queues, interleaved, behind an operation of a third.
            let blocker = try await DurableQueue(name: "blocker", store: store).add(Hold.self, input: 99)
            var waiting: [(queue: String, id: DurableOperationID)] = []
            for index in 0..<10 {
                let name = names[index % 2]
                waiting.append((name, try await DurableQueue(name: name, store: store).add(Echo.self, input: index, dependencies: [blocker]).id))
            }

            for name in names {
                for state in [DurableState.succeeded, .failed, .cancelled] {
                    let expected = finished.filter { $0.queue == name && $0.state == state }.map(\.id)
                        .sorted { (finishOffset[$0]!, $0) > (finishOffset[$1]!, $1) }
                    let pages = try await allPages(inspection, queue: name, state: state, limit: 2)
                    #expect(pages.flatMap { $0 }.map(\.id) == expected, "\(state) operations of \(name)")
                    #expect(pages.flatMap { $0 }.allSatisfy { $0.queue == name && $0.state == state })
                }
                let pages = try await allPages(inspection, queue: name, state: .waiting, limit: 3)
                #expect(pages.flatMap { $0 }.map(\.id) == waiting.filter { $0.queue == name }.map(\.id), "waiting operations of \(name)")
            }
            #expect(finished.filter { $0.state == .cancelled }.count == 3)
        }
    }

    @Test("ready operations of a queue with more priorities than a statement can merge are paged by id all the same", arguments: StoreKind.all)
    func readyPagesAcrossManyPriorities(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let inspection = try #require(store as? any DurableStoreInspection)
            // A priority per operation, as a store's own requests may carry (timestamps, scores):
            // more bands than SQLite merges in one compound statement (500).
            let requests = (0..<700).map { index in
                DurableEnqueueRequest(queue: "scored", kind: Echo.kind, input: "\(index)", priority: (index * 7_919) % 700 - 350)
            }
            let enqueued = try await store.enqueue(requests).map(\.id)
            let pages = try await allPages(inspection, queue: "scored", state: .ready, limit: 250)
            #expect(pages.map(\.count) == [250, 250, 200])
            #expect(pages.flatMap { $0 }.map(\.id) == enqueued.sorted())
        }
    }

    @Test("details show the record, its attempts with their errors, and the operations around it", arguments: StoreKind.all)
    func details(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let top = try await queue.add(Node.self, input: .init(value: 1))
            let left = try await queue.add(Node.self, input: .init(value: 10, parents: [top]), dependencies: [top])
            let right = try await queue.add(Node.self, input: .init(value: 100, parents: [top]), dependencies: [top])
            let bottom = try await queue.add(
                Node.self, input: .init(value: 1000, parents: [left, right]), dependencies: [left, right], priority: .high,
                key: "bottom-key")

            let middle = try #require(try await inspection.details(of: left.id, edgeLimit: 10))
            #expect(middle.dependencies.map(\.id) == [top.id])
            #expect(middle.dependencies.first?.state == .ready)
            #expect(middle.dependents.map(\.id) == [bottom.id])
            #expect(middle.dependents.first?.state == .waiting)
            #expect(middle.dependents.first?.key == "bottom-key")

            let sink = try #require(try await inspection.details(of: bottom.id, edgeLimit: 1))
            #expect(sink.dependencies.map(\.id) == [left.id], "limited to one, the lowest id")
            #expect(sink.dependents.isEmpty)
            #expect(sink.key == "bottom-key")
            #expect(sink.priority == Operations.Operation.QueuePriority.high.rawValue)
            #expect(sink.input.contains("1000"))
            #expect(sink.record.state == .waiting && sink.record.unfinishedDependencies == 2)
            #expect(sink.finishedAt == nil && sink.worker == nil)
            if let enqueuedAt = sink.enqueuedAt { #expect(abs(enqueuedAt.timeIntervalSinceNow) < 600) }
            #expect(try await inspection.details(of: bottom.id, edgeLimit: 0)?.dependencies.isEmpty == true)

            try await claimAndEnd(kinds: [Node.kind], worker: "inspector", on: store) { _ in nil }
            let claimed = try #require(try await inspection.details(of: top.id, edgeLimit: 10))
            #expect(claimed.worker == "inspector")
            #expect(claimed.record.state == .running)
            #expect(claimed.dependents.map(\.id) == [left.id, right.id])

            // Two failed attempts, then a success.
            let flaky = try await queue.add(Flaky.self, input: 3, retry: DurableRetry(.immediate, maximumAttempts: 3))
            #expect(try await valueRunningAWorker(of: flaky, on: store, "the flaky operation's value") == 3)
            let finished = try #require(try await inspection.details(of: flaky.id, edgeLimit: 10))
            #expect(finished.record.state == .succeeded)
            #expect(finished.record.attempts.map(\.number) == [1, 2, 3])
            #expect(finished.record.attempts.map(\.error) == ["flaky attempt 1 failed", "flaky attempt 2 failed", nil])
            #expect(finished.input == "3")
            #expect(finished.worker == nil && finished.key == nil)
            let finishedAt = try #require(finished.finishedAt)
            if let enqueuedAt = finished.enqueuedAt { #expect(enqueuedAt <= finishedAt) }

            #expect(try await inspection.details(of: DurableOperationID(rawValue: 987_654_321), edgeLimit: 10) == nil)
        }
    }

    @Test("failures in the window are grouped by queue, kind and error, largest group first", arguments: StoreKind.all)
    func failureGroups(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let now = Date()
            // (queue, kind, error, minutes before now)
            let plan: [(String, String, String, Double)] = [
                ("default", Flaky.kind, "boom", 50), ("default", Flaky.kind, "boom", 30), ("default", Flaky.kind, "boom", 40),
                ("default", Flaky.kind, "bang", 45), ("default", Flaky.kind, "bang", 20),
                ("other", Flaky.kind, "boom", 10), ("default", Work.kind, "boom", 5),
                ("default", Flaky.kind, "boom", 120),
            ]
            var ids: [DurableOperationID] = []
            for (queueName, kindName, error, minutes) in plan {
                let queue = DurableQueue(name: queueName, store: store)
                let id =
                    kindName == Flaky.kind
                    ? try await queue.add(Flaky.self, input: 99, retry: .never).id
                    : try await queue.add(Work.self, input: 0, retry: .never).id
                try await claimAndEnd(queue: queueName, kinds: [kindName], on: store) { _ in .failed(error: error) }
                try await setFinishedAt(id, now.addingTimeInterval(-60 * minutes), in: store)
                ids.append(id)
            }
            // A success is no failure.
            let succeeded = try await DurableQueue(name: "default", store: store).add(Flaky.self, input: 1)
            try await claimAndEnd(kinds: [Flaky.kind], on: store) { _ in .succeeded(output: "1") }
            try await setFinishedAt(succeeded.id, now.addingTimeInterval(-60), in: store)

            let groups = try await inspection.failureGroups(queue: nil, window: .seconds(3_600), now: now, limit: 10)
            #expect(groups.map { "\($0.queue) \($0.kind) \($0.error) \($0.count)" } == [
                "default flaky boom 3", "default flaky bang 2", "default work boom 1", "other flaky boom 1",
            ])
            #expect(groups.map(\.latest) == [ids[1], ids[4], ids[6], ids[5]])
            if let first = groups.first {
                #expect(abs(first.lastFailedAt.timeIntervalSince(now.addingTimeInterval(-30 * 60))) < 0.01)
            }

            let limited = try await inspection.failureGroups(queue: nil, window: .seconds(3_600), now: now, limit: 2)
            #expect(limited.map(\.count) == [3, 2])
            let other = try await inspection.failureGroups(queue: "other", window: .seconds(3_600), now: now, limit: 10)
            #expect(other.map(\.latest) == [ids[5]])
            let wider = try await inspection.failureGroups(queue: "default", window: .seconds(3 * 3_600), now: now, limit: 10)
            #expect(wider.first?.count == 4 && wider.first?.latest == ids[1])
            #expect(try await inspection.failureGroups(queue: "nowhere", window: .seconds(3_600), now: now, limit: 10).isEmpty)
        }
    }

    @Test("workers are listed from their heartbeats, with the operations each runs", arguments: StoreKind.all)
    func workers(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            for input in 0..<2 { try await queue.add(Echo.self, input: input) }
            try await claimAndEnd(kinds: [Echo.kind], worker: "inspector-a", on: store) { _ in nil }
            _ = try await store.heartbeat(
                worker: "inspector-a", queues: ["default"], kinds: [Echo.kind], holding: [], lease: .seconds(600))
            _ = try await store.heartbeat(
                worker: "inspector-b", queues: ["default", "other"], kinds: [Work.kind], holding: [], lease: .seconds(600))

            let now = Date()
            let listed = try await inspection.workers(window: .seconds(60), now: now)
            #expect(listed.map(\.name) == ["inspector-a", "inspector-b"])
            #expect(listed.map(\.running) == [2, 0])
            #expect(listed.last?.queues == ["default", "other"] && listed.last?.kinds == [Work.kind])
            #expect(listed.allSatisfy { abs($0.lastHeartbeat.timeIntervalSince(now)) < 600 })
            #expect(try await inspection.workers(window: .seconds(60), now: now.addingTimeInterval(3_600)).isEmpty)

            // A worker of the durable layer, running an operation.
            let held = try await queue.add(Hold.self, input: 99)
            let worker = DurableWorker(
                store: store, queues: ["default"], kinds: [Hold()], configuration: testWorkerConfiguration(name: "live"))
            try await withRunningWorkerRecordingEvents(worker) { recorder in
                try await recorder.wait("the held operation's start") { events in
                    events.contains { $0.operation == held.id && $0.kind == .started }
                }
                try await pollUntil(30, "the worker's heartbeat with its operation") {
                    try await inspection.workers(window: .seconds(60), now: Date()).contains {
                        $0.name == worker.id && $0.running == 1 && $0.kinds == [Hold.kind] && $0.queues == ["default"]
                    }
                }
            }
        }
    }

    @Test("search finds operations by id, kind or key, newest first", arguments: StoreKind.all)
    func search(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let keyed = try await queue.add(Echo.self, input: 1, key: "invoice-7")
            let work = try await queue.add(Work.self, input: 0, key: "invoice-8")
            let plain = try await queue.add(Echo.self, input: 2)
            let other = try await DurableQueue(name: "other", store: store).add(Echo.self, input: 3, key: "invoice-7")
            // A finished operation keeps its key for the search (not for coalescing).
            try await claimAndEnd(kinds: [Echo.kind], on: store) { _ in .succeeded(output: "0") }
            #expect(try await keyed.state == .succeeded)

            #expect(try await inspection.search(Echo.kind, limit: 10).map(\.id) == [other.id, plain.id, keyed.id])
            #expect(try await inspection.search(Echo.kind, limit: 2).map(\.id) == [other.id, plain.id])
            #expect(try await inspection.search("invoice-7", limit: 10).map(\.id) == [other.id, keyed.id])
            let byKey = try await inspection.search("invoice-8", limit: 10)
            #expect(byKey.map(\.id) == [work.id])
            #expect(byKey.first?.kind == Work.kind && byKey.first?.key == "invoice-8" && byKey.first?.state == .ready)
            let byID = try await inspection.search("\(plain.id.rawValue)", limit: 10)
            #expect(byID.map(\.id) == [plain.id])
            #expect(byID.first?.state == .succeeded && byID.first?.queue == "default")
            #expect(try await inspection.search("invoice", limit: 10).isEmpty)
            #expect(try await inspection.search("987654321", limit: 10).isEmpty)
            #expect(try await inspection.search(Echo.kind, limit: 0).isEmpty)
        }
    }

    @Test("a retried failure runs again on a worker and succeeds; its cancelled dependents stay cancelled", arguments: StoreKind.all)
    func retryRunsAgain(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let flaky = try await queue.add(Flaky.self, input: 2, retry: .never)
            let dependent = try await queue.add(Echo.self, input: 5, dependencies: [flaky])
            try await withWorkers(store: store) { _ in
                try await pollUntil(30, "the flaky operation's failure") { try await flaky.state == .failed }
                #expect(try await dependent.state == .cancelled)
                #expect(try await inspection.retry(flaky.id))
                let value = try await within(30, "the retried operation's value") { try await flaky.value }
                #expect(value == 2)
            }
            let details = try #require(try await inspection.details(of: flaky.id, edgeLimit: 10))
            #expect(details.record.state == .succeeded && details.record.maximumAttempts == 2)
            #expect(details.record.attempts.map(\.error) == ["flaky attempt 1 failed", nil])
            #expect(details.dependents.map(\.state) == [.cancelled])
            #expect(try await dependent.state == .cancelled)
        }
    }

    @Test("a retry makes the operation ready with one more attempt and tells the workers", arguments: StoreKind.all)
    func retryNotifies(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let failed = try await queue.add(Flaky.self, input: 99, retry: .never)
            try await claimAndEnd(kinds: [Flaky.kind], on: store) { _ in .failed(error: "boom") }
            let stream = store.notifications()
            // Retried once the listener is in place (its first word), so that the notification is seen.
            let told = try await within(30, "the work-available notification of the retry") {
                var retried = false
                for await notification in stream {
                    if !retried, notification == .resynchronize {
                        retried = true
                        guard try await inspection.retry(failed.id) else { return false }
                    } else if retried, notification == .workAvailable(queue: "default") {
                        return true
                    }
                }
                return false
            }
            #expect(told)
            let summary = try #require(try await inspection.search("\(failed.id.rawValue)", limit: 1).first)
            #expect(summary.state == .ready && summary.attempt == 1 && summary.maximumAttempts == 2 && summary.error == nil)
            let record = try #require(try await store.record(of: failed.id, includingAttempts: false))
            #expect(record.error == nil && record.notBefore <= Date())
            #expect(try await inspection.details(of: failed.id, edgeLimit: 0)?.finishedAt == nil)
            #expect(try await inspection.retry(failed.id) == false, "a ready operation is not retried")
            let claims = try await claimAndEnd(kinds: [Flaky.kind], on: store) { _ in .failed(error: "boom again") }
            #expect(claims.map(\.attempt) == [2])
            #expect(try await failed.outcome == .failed("boom again"), "one more attempt, not more")
        }
    }

    @Test("a retry is refused for an operation that is unknown, unfinished or succeeded", arguments: StoreKind.all)
    func retryRefused(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let succeeded = try await queue.add(Echo.self, input: 1)
            let running = try await queue.add(Hold.self, input: 99)
            try await claimAndEnd(kinds: [Echo.kind, Hold.kind], on: store) { id in
                id == succeeded.id ? .succeeded(output: "1") : nil
            }
            let ready = try await queue.add(Echo.self, input: 2)
            let waiting = try await queue.add(Echo.self, input: 3, dependencies: [running])
            for (handle, state) in [(succeeded.id, DurableState.succeeded), (running.id, .running), (ready.id, .ready), (waiting.id, .waiting)] {
                #expect(try await inspection.retry(handle) == false, "\(state)")
                #expect(try await store.record(of: handle, includingAttempts: false)?.state == state)
            }
            #expect(try await inspection.retry(DurableOperationID(rawValue: 987_654_321)) == false)
        }
    }

    @Test("a retried cancelled operation waits for its unfinished dependencies, and keeps its attempts", arguments: StoreKind.all)
    func retryOfCancelled(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let inspection = try #require(store as? any DurableStoreInspection)
            let failing = try await queue.add(Flaky.self, input: 2, retry: .never)
            let blocker = try await queue.add(Hold.self, input: 99)
            let dependent = try await queue.add(Echo.self, input: 1, dependencies: [failing, blocker])
            try await claimAndEnd(kinds: [Flaky.kind, Hold.kind], on: store) { id in id == failing.id ? .failed(error: "boom") : nil }
            #expect(try await dependent.state == .cancelled)

            // A dependency failed: refused, naming it, and nothing changes.
            let refusal = await #expect(throws: DurableError.self) { try await inspection.retry(dependent.id) }
            #expect(refusal?.code == .invalidArgument)
            #expect(refusal?.message.contains("dependency \(failing.id.rawValue) ") == true && refusal?.message.contains("failed") == true)
            #expect(try await dependent.state == .cancelled)

            // The dependency retried and succeeded: accepted, waiting for the unfinished one, then run.
            #expect(try await inspection.retry(failing.id))
            try await withWorkers(store: store) { _ in
                let value = try await within(30, "the retried dependency's value") { try await failing.value }
                #expect(value == 2)
                #expect(try await inspection.retry(dependent.id))
                let record = try #require(try await store.record(of: dependent.id, includingAttempts: false))
                #expect(record.state == .waiting && record.unfinishedDependencies == 1 && record.cancelReason == nil)
                #expect(record.maximumAttempts == 3, "a cancelled operation that never ran keeps its attempts")
                try await store.complete(
                    [DurableCompletion(id: blocker.id, attempt: 1, result: .succeeded(output: "99"))], worker: "inspector")
                let output = try await within(30, "the retried dependent's value") { try await dependent.value }
                #expect(output == 1)
            }

            // Its key taken meanwhile by another operation: refused, naming it.
            let keyed = try await queue.add(Echo.self, input: 4, key: "report")
            try await keyed.cancel()
            let holder = try await queue.add(Echo.self, input: 5, key: "report")
            let error = await #expect(throws: DurableError.self) { try await inspection.retry(keyed.id) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("\"report\"") == true && error?.message.contains("\(holder.id.rawValue)") == true)
            #expect(try await keyed.state == .cancelled)
        }
    }
}

/// Every page of `state` in `queue`, each after the last id of the one before, until an empty one.
private func allPages(
    _ inspection: any DurableStoreInspection, queue: String, state: DurableState, limit: Int
) async throws -> [[DurableOperationSummary]] {
    var pages: [[DurableOperationSummary]] = []
    var after: DurableOperationID?
    for _ in 0..<100 {
        let page = try await inspection.operations(queue: queue, state: state, after: after, limit: limit)
        guard let last = page.last else { return pages }
        #expect(page.count <= limit)
        pages.append(page)
        after = last.id
    }
    Issue.record("the pages of \(state) operations of \(queue) did not end")
    return pages
}

/// Claims the ready operations of `queue` of `kinds` as `worker`, and ends each as `end`
/// says (nil: it stays running).
@discardableResult
private func claimAndEnd(
    queue: String = "default", kinds: [String], worker: String = "inspector", on store: any DurableOperationStore,
    _ end: (DurableOperationID) -> DurableAttemptResult?
) async throws -> [DurableClaim] {
    let claims = try await store.claim(queue: queue, kinds: kinds, worker: worker, limit: 100, lease: .seconds(600))
    let completions = claims.compactMap { claim in
        end(claim.id).map { DurableCompletion(id: claim.id, attempt: claim.attempt, result: $0) }
    }
    try await store.complete(completions, worker: worker)
    return claims
}

/// Sets when an operation finished, straight in the store's database.
private func setFinishedAt(_ id: DurableOperationID, _ date: Date, in store: any DurableOperationStore) async throws {
    let seconds = date.timeIntervalSince1970
    let value = store is PostgresOperationStore ? "to_timestamp(\(seconds))" : "\(seconds)"
    try await executeDirectly("UPDATE durable_operations SET finished_at = \(value) WHERE id = \(id.rawValue)", in: store)
}
#endif

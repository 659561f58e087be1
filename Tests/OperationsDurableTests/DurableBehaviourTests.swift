// What every durable store must do, written against the store protocol: each test runs
// once per store in `StoreKind.all`.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import Operations
import OperationsDurable
import Testing

/// A kind no test worker registers.
struct Unregistered: DurableOperation {
    static let kind = "unregistered"
    func run(_ input: Int, context: DurableContext) async throws -> Int { input }
}

@Suite("Durable operations on each store", .timeLimit(.minutes(2)))
struct DurableBehaviourTests {
    @Test("an added operation runs once and its output is stored", arguments: StoreKind.all)
    func addedOperationRunsOnce(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let handle = try await queue.add(Echo.self, input: 42)
            let value = try await valueRunningAWorker(of: handle, on: store, "the echo's value")
            #expect(value == 42)
            #expect(try await handle.outcome == .succeeded)
            let attempts = try await handle.attempts
            #expect(attempts.count == 1)
            #expect(attempts.first?.end != nil && attempts.first?.error == nil)
        }
    }

    @Test("a diamond runs each operation after its dependencies, with their outputs", arguments: StoreKind.all)
    func diamondRunsInDependencyOrder(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let top = try await queue.add(Node.self, input: .init(value: 1))
            let left = try await queue.add(Node.self, input: .init(value: 10, parents: [top]), dependencies: [top])
            let right = try await queue.add(Node.self, input: .init(value: 100, parents: [top]), dependencies: [top])
            let bottom = try await queue.add(
                Node.self, input: .init(value: 1000, parents: [left, right]), dependencies: [left, right])
            #expect(try await bottom.state == .waiting)
            let value = try await valueRunningAWorker(of: bottom, on: store, "the diamond's bottom")
            #expect(value == 1112)
            let bottomStart = try #require(try await bottom.attempts.first).start
            for parent in [left, right] {
                let end = try #require(try await parent.attempts.first?.end)
                #expect(end <= bottomStart)
            }
        }
    }

    @Test("a failed dependency cancels its dependents with its reason, unless they run anyway", arguments: StoreKind.all)
    func failedDependencyCancelsDependents(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let failing = try await queue.add(Flaky.self, input: 99, retry: .never)
            let dependent = try await queue.add(Echo.self, input: 1, dependencies: [failing])
            let grandchild = try await queue.add(Echo.self, input: 2, dependencies: [dependent])
            let anyway = try await queue.add(Echo.self, input: 3, dependencies: [failing], runsAnyway: true)
            let value = try await valueRunningAWorker(of: anyway, on: store, "the run-anyway dependent")
            #expect(value == 3)
            #expect(try await failing.outcome == .failed("flaky attempt 1 failed"))
            guard case .cancelled(let reason) = try await dependent.outcome else {
                Issue.record("the dependent was not cancelled")
                return
            }
            #expect(reason.contains("dependency \(failing.id.rawValue) (flaky) failed: flaky attempt 1 failed"))
            #expect(try await grandchild.outcome == .cancelled(reason))
            #expect(try await dependent.attempts.isEmpty)
            await #expect(throws: DurableError.self) { try await dependent.value }
        }
    }

    @Test("adding a key that is pending returns the existing operation", arguments: StoreKind.all)
    func keyCoalesces(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let first = try await queue.add(Echo.self, input: 1, key: "thumbnail-7")
            let second = try await queue.add(Echo.self, input: 2, key: "thumbnail-7")
            #expect(first.id == second.id)
            let other = try await queue.add(Echo.self, input: 3, key: "thumbnail-8")
            #expect(other.id != first.id)
            let value = try await valueRunningAWorker(of: second, on: store, "the keyed operation")
            #expect(value == 1)
            let third = try await queue.add(Echo.self, input: 4, key: "thumbnail-7")
            #expect(third.id != first.id, "a finished key is free again")
        }
    }

    @Test(
        "a running operation whose cancel was requested takes no new callers: the key's next add is a fresh operation, and both coexist",
        arguments: StoreKind.all)
    func keyOfDoomedOperationTakesNoCallers(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let doomed = try await queue.add(Echo.self, input: 1, key: "report-3")
            // Claimed by a worker that runs nothing: the operation stays running, its cancel
            // requested, until that worker reports.
            try await claimAlone(doomed, on: store, as: "w", lease: .seconds(600))
            try await doomed.cancel(reason: "superseded")
            let record = try #require(try await store.record(of: doomed.id, includingAttempts: false))
            #expect(record.state == .running && record.cancelReason == "superseded")

            let fresh = try await queue.add(Echo.self, input: 2, key: "report-3")
            #expect(fresh.id != doomed.id, "a doomed operation takes no new callers")
            #expect(try await fresh.state == .ready)
            #expect(try await queue.add(Echo.self, input: 3, key: "report-3").id == fresh.id, "the fresh one holds the key")

            // The doomed one ends; the fresh one keeps the key and runs.
            try await store.complete(
                [DurableCompletion(id: doomed.id, attempt: 1, result: .cancelled(reason: "superseded"))], worker: "w")
            #expect(try await doomed.outcome == .cancelled("superseded"))
            #expect(try await queue.add(Echo.self, input: 4, key: "report-3").id == fresh.id)
            let value = try await valueRunningAWorker(of: fresh, on: store, "the fresh operation")
            #expect(value == 2)
        }
    }

    @Test("adding a key that a pending operation of another kind holds is refused, naming both kinds", arguments: StoreKind.all)
    func keyOfAnotherKindIsRefused(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let held = try await queue.add(Work.self, input: 0, key: "shared")
            let error = await #expect(throws: DurableError.self) {
                try await queue.add(Echo.self, input: 1, key: "shared")
            }
            #expect(error?.code == .invalidArgument)
            let message = error?.message ?? ""
            #expect(message.contains("\"shared\"") && message.contains(Work.kind) && message.contains(Echo.kind)
                && message.contains("\(held.id.rawValue)"), "\(message)")
            #expect(try await queue.add(Work.self, input: 5, key: "shared").id == held.id, "the same kind still coalesces")
        }
    }

    @Test("priority bands start in order, first in first out within a band", arguments: StoreKind.all)
    func priorityBands(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let plan: [(String, Operations.Operation.QueuePriority)] = [
                ("low 1", .low), ("high 1", .high), ("normal 1", .normal), ("high 2", .high), ("low 2", .low),
                ("very high", .veryHigh), ("normal 2", .normal),
            ]
            var handles: [(String, DurableHandle<Work>)] = []
            for (name, priority) in plan {
                handles.append((name, try await queue.add(Work.self, input: 0, priority: priority)))
            }
            let all = handles
            try await withWorkers(store: store, concurrency: 1) { _ async throws in
                for (_, handle) in all { _ = try await within(30, "the work") { try await handle.value } }
            }
            var starts: [(String, Date)] = []
            for (name, handle) in handles { starts.append((name, try #require(try await handle.attempts.first).start)) }
            let order = starts.sorted { $0.1 < $1.1 }.map(\.0)
            #expect(order == ["very high", "high 1", "high 2", "normal 1", "normal 2", "low 1", "low 2"])
        }
    }

    @Test("a failed attempt is retried until the maximum, each attempt recorded", arguments: StoreKind.all)
    func retriesUpToTheMaximum(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let recovers = try await queue.add(Flaky.self, input: 3, retry: DurableRetry(.immediate, maximumAttempts: 3))
            let exhausted = try await queue.add(
                Flaky.self, input: 5, retry: DurableRetry(.constant(.milliseconds(50)), maximumAttempts: 2))
            try await withWorkers(store: store) { _ async throws in
                #expect(try await within(30, "the recovering operation") { try await recovers.value } == 3)
                await #expect(throws: DurableError.self) {
                    try await within(30, "the exhausted operation") { try await exhausted.value }
                }
            }
            let attempts = try await recovers.attempts
            #expect(attempts.map(\.number) == [1, 2, 3])
            #expect(attempts.map(\.error) == ["flaky attempt 1 failed", "flaky attempt 2 failed", nil])
            #expect(try await exhausted.outcome == .failed("flaky attempt 2 failed"))
            #expect(try await exhausted.attempts.count == 2)
        }
    }

    @Test("an operation retried forever (maximumAttempts .max) is added, and a failure waits its strategy's delay", arguments: StoreKind.all)
    func retriesForever(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            // An hour after the first failure, two after the second: told apart without waiting.
            let retry = DurableRetry(.exponential(initial: .seconds(3_600), maximum: .seconds(100_000)), maximumAttempts: .max)
            let operation = try await queue.add(Flaky.self, input: .max, retry: retry)
            #expect(try await store.record(of: operation.id, includingAttempts: false)?.maximumAttempts == .max)
            try await claimAlone(operation, on: store, as: "w", lease: .seconds(600))
            try await store.complete(
                [DurableCompletion(id: operation.id, attempt: 1, result: .failed(error: "first"))], worker: "w")
            let record = try #require(try await store.record(of: operation.id, includingAttempts: false))
            #expect(record.state == .ready, "retried")
            let wait = record.notBefore.timeIntervalSinceNow
            #expect(wait > 1_800 && wait < 5_400, "waits the first delay (3,600 s): \(wait) s")
        }
    }

    @Test(
        "the wait after failure n follows the strategy at any n: it grows, then stays at the maximum, never trapping",
        arguments: StoreKind.all)
    func retryWaitAtAnyFailure(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let retry = DurableRetry(.exponential(initial: .seconds(3_600), maximum: .seconds(100_000)), maximumAttempts: .max)
            let expectations: [(failure: Int, wait: Double)] = [
                (1, 3_600), (2, 7_200), (3, 14_400), (5, 57_600), (6, 100_000), (1_100, 100_000), (2_000_000_000, 100_000),
            ]
            for (failure, expected) in expectations {
                let operation = try await queue.add(Flaky.self, input: .max, retry: retry)
                try await claimAlone(operation, on: store, as: "w", lease: .seconds(600))
                // As if the attempts before had failed: the running attempt is failure number `failure`.
                try await executeDirectly(
                    "UPDATE durable_operations SET attempt = \(failure) WHERE id = \(operation.id.rawValue)", in: store)
                try await store.complete(
                    [DurableCompletion(id: operation.id, attempt: failure, result: .failed(error: "failure \(failure)"))], worker: "w")
                let record = try #require(try await store.record(of: operation.id, includingAttempts: false))
                #expect(record.state == .ready, "failure \(failure) is retried")
                let wait = record.notBefore.timeIntervalSinceNow
                #expect(abs(wait - expected) < 600, "failure \(failure): waits \(wait) s, not \(expected) s")
            }
        }
    }

    @Test("what add stores of a retry does not grow with its maximum")
    func storedRetryDoesNotGrowWithTheMaximum() async throws {
        try await withStore(.named("SQLite")) { store in
            let queue = DurableQueue(name: "default", store: store)
            let few = try queue.request(
                Echo.self, input: 0, retry: DurableRetry(.exponential(initial: .seconds(1), maximum: .seconds(60)), maximumAttempts: 3))
            let many = try queue.request(
                Echo.self, input: 0,
                retry: DurableRetry(.exponential(initial: .seconds(1), maximum: .seconds(60)), maximumAttempts: 2_000_000))
            #expect(many.maximumAttempts == 2_000_000)
            #expect(
                many.retryDelays.count == few.retryDelays.count,
                "stored waits: \(few.retryDelays.count) and \(many.retryDelays.count)")
            #expect(many.retryBackoff == few.retryBackoff)
            #expect(many.retryBackoff == DurableBackoff(initial: 1, multiplier: 2, maximum: 60, jittered: false))
        }
    }

    @Test("a retry strategy given by a closure is listed when added, and refused beyond the listing limit")
    func closureRetryIsListedOrRefused() async throws {
        try await withStore(.named("SQLite")) { store in
            let queue = DurableQueue(name: "default", store: store)
            let limit = DurableRetry.listedRetryLimit
            let listed = try queue.request(
                Echo.self, input: 0, retry: DurableRetry(.init { .seconds($0) }, maximumAttempts: limit + 1))
            #expect(listed.retryDelays.count == limit && listed.retryDelays.last == Double(limit))
            #expect(listed.retryBackoff == .none)
            #expect {
                try queue.request(Echo.self, input: 0, retry: DurableRetry(.init { .seconds($0) }, maximumAttempts: limit + 2))
            } throws: { ($0 as? DurableError)?.code == .invalidArgument }
        }
    }

    @Test("a stored backoff's wait after failure n saturates at any n, and a jittered one is a fraction of it")
    func backoffWaitSaturates() {
        let doubling = DurableBackoff(initial: 1, multiplier: 2, maximum: 60, jittered: false)
        #expect([1, 2, 3, 6, 7].map { doubling.seconds(afterFailure: $0, listed: []) } == [1, 2, 4, 32, 60])
        #expect(doubling.seconds(afterFailure: .max, listed: []) == 60)
        #expect(doubling.seconds(afterFailure: 2, listed: [5, 6]) == 6, "a listed wait first")
        #expect(doubling.seconds(afterFailure: 3, listed: [5, 6]) == 4, "then the formula")
        let unbounded = DurableBackoff(initial: 1, multiplier: 10, maximum: .greatestFiniteMagnitude, jittered: false)
        #expect(unbounded.seconds(afterFailure: .max, listed: []) == DurableBackoff.longestWait)
        let jittered = DurableBackoff(initial: 1, multiplier: 2, maximum: 60, jittered: true)
        #expect(jittered.seconds(afterFailure: 3, listed: [], fraction: { 0.5 }) == 2)
        #expect(jittered.seconds(afterFailure: .max, listed: [], fraction: { 7 }) == 60, "a fraction above 1 counts as 1")
    }

    @Test("cancelling a pending operation is immediate and reaches its dependents", arguments: StoreKind.all)
    func cancelPending(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let pending = try await queue.add(Echo.self, input: 1)
            let dependent = try await queue.add(Echo.self, input: 2, dependencies: [pending])
            try await pending.cancel(reason: "not needed")
            #expect(try await pending.outcome == .cancelled("not needed"))
            guard case .cancelled(let reason) = try await dependent.outcome else {
                Issue.record("the dependent was not cancelled")
                return
            }
            #expect(reason.contains("was cancelled: not needed"))
            let late = try await queue.add(Echo.self, input: 3, dependencies: [pending])
            #expect(try await late.state == .cancelled, "a dependency that was already cancelled cancels at once")
        }
    }

    @Test("a cancel reaches a running body, which ends cancelled with the reason", arguments: StoreKind.all)
    func cancelRunning(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let held = try await queue.add(Hold.self, input: 99)
            try await withWorkers(store: store) { _ async throws in
                try await pollUntil(30, "the body started") { try await held.state == .running }
                let cancelled = ContinuousClock.now
                try await held.cancel(reason: "the user closed the window")
                await #expect(throws: DurableError.self) {
                    try await within(30, "the cancelled body") { try await held.value }
                }
                // How fast is a measurement (printed), not an assertion: this runs on loaded machines.
                print("\(kind.name): a cancel reached a running body and was recorded in \(ContinuousClock.now - cancelled)")
            }
            #expect(try await held.outcome == .cancelled("the user closed the window"))
            #expect(try await held.attempts.count == 1)
        }
    }

    @Test("an input that does not decode fails that operation only", arguments: StoreKind.all)
    func undecodableInput(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let results = try await store.enqueue([
                DurableEnqueueRequest(queue: "default", kind: Echo.kind, input: "\"not a number\"", maximumAttempts: 3)
            ])
            let broken = queue.handle(Echo.self, id: results[0].id)
            let fine = try await queue.add(Echo.self, input: 7)
            try await withWorkers(store: store) { _ async throws in
                #expect(try await within(30, "the fine operation") { try await fine.value } == 7)
                await #expect(throws: DurableError.self) {
                    try await within(30, "the broken operation") { try await broken.value }
                }
            }
            guard case .failed(let error) = try await broken.outcome else {
                Issue.record("the undecodable operation did not fail")
                return
            }
            #expect(error.contains("does not decode as Int"))
            #expect(try await broken.attempts.count == 1, "a decoding failure is not retried")
        }
    }

    @Test("an operation of a kind no worker knows waits, and its wait description says so", arguments: StoreKind.all)
    func unknownKindWaits(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let unknown = try await queue.add(Unregistered.self, input: 1)
            let known = try await queue.add(Echo.self, input: 2)
            try await withWorkers(store: store) { _ async throws in
                #expect(try await within(30, "the known kind") { try await known.value } == 2)
                #expect(try await unknown.state == .ready)
                let description = try await unknown.waitDescription
                #expect(description.contains("no live worker serving this queue is registered for kind \"unregistered\""), "\(description)")
            }
        }
    }

    @Test("an operation scheduled for later is not claimed before its date", arguments: StoreKind.all)
    func notBefore(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            // An hour ahead: still waiting however slowly this machine runs the test.
            let far = try await queue.add(Echo.self, input: 6, notBefore: Date().addingTimeInterval(3600))
            #expect(try await far.waitDescription.contains("scheduled for later"))
            let date = Date().addingTimeInterval(1.5)
            let later = try await queue.add(Echo.self, input: 5, notBefore: date)
            try await withWorkers(store: store) { _ async throws in
                #expect(try await within(30, "the scheduled operation") { try await later.value } == 5)
                #expect(try await far.state == .ready, "not claimed before its date")
            }
            let start = try #require(try await later.attempts.first).start
            #expect(start >= date.addingTimeInterval(-0.05), "started at \(start), scheduled for \(date)")
        }
    }

    @Test("a suspended queue is not claimed from until it is resumed", arguments: StoreKind.all)
    func suspendedQueue(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setSuspended(true)
            #expect(try await queue.isSuspended)
            let handle = try await queue.add(Echo.self, input: 9)
            try await withWorkers(store: store) { _ async throws in
                // A control operation on another queue shows the worker claims meanwhile.
                let control = try await DurableQueue(name: "other", store: store).add(Echo.self, input: 1)
                _ = control
                #expect(try await handle.waitDescription.contains("the queue is suspended"))
                #expect(try await handle.state == .ready)
                try await queue.setSuspended(false)
                #expect(try await within(30, "the resumed operation") { try await handle.value } == 9)
            }
        }
    }

    @Test("the queue's limit holds across workers", arguments: StoreKind.all)
    func limitAcrossWorkers(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            try await queue.setMaxConcurrentOperationCount(2)
            #expect(try await queue.maxConcurrentOperationCount == 2)
            var handles: [DurableHandle<Work>] = []
            for _ in 0..<24 { handles.append(try await queue.add(Work.self, input: 30)) }
            let all = handles
            try await withWorkers(3, store: store, concurrency: 4) { _ async throws in
                for handle in all { _ = try await within(60, "the limited work") { try await handle.value } }
            }
            var attempts: [DurableAttempt] = []
            for handle in handles { attempts += try await handle.attempts }
            #expect(attempts.count == 24)
            #expect(maximumOverlap(attempts) <= 2)
        }
    }

    @Test("an operation with a dependency that is not stored is refused, naming it", arguments: StoreKind.all)
    func missingDependencyIsRefused(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let error = await #expect(throws: DurableError.self) {
                try await queue.add(Echo.self, input: 1, dependencies: [DurableOperationID(rawValue: 987_654)])
            }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("987654") == true, "\(String(describing: error))")
        }
    }

    @Test("a worker stopping gives its running operations back, and another worker finishes them", arguments: StoreKind.all)
    func stoppingWorkerGivesBack(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let held = try await queue.add(Hold.self, input: 2, retry: .never)
            try await withWorkerUntilStarted(held.id, store: store)
            #expect(try await held.state == .ready, "given back, not failed")
            let value = try await withWorkers(store: store) { _ in
                try await within(30, "the operation given back") { try await held.value }
            }
            #expect(value == 2)
            let attempts = try await held.attempts
            #expect(attempts.count == 2)
            #expect(attempts.first?.error?.contains("stopped before the body finished") == true, "\(attempts)")
        }
    }

    @Test(
        "a failure after a given-back attempt waits the first retry delay: the given-back attempt counts for neither attempts nor delays",
        arguments: StoreKind.all)
    func retryDelayAfterGiveBack(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            // An hour after the first failure, two after the second: told apart without waiting.
            let retry = DurableRetry(.exponential(initial: .seconds(3_600), maximum: .seconds(100_000)), maximumAttempts: 3)
            let operation = try await queue.add(HoldsThenFails.self, input: 0, retry: retry)
            try await withWorkerUntilStarted(operation.id, store: store, kinds: [HoldsThenFails()])
            try await withWorkers(store: store, kinds: [HoldsThenFails()]) { _ async throws in
                try await pollUntil(30, "the second attempt failed") {
                    let attempts = try await operation.attempts
                    return attempts.count == 2 && attempts[1].end != nil
                }
            }
            let record = try #require(try await store.record(of: operation.id, includingAttempts: true))
            #expect(record.state == .ready)
            #expect(record.attempts.first?.error?.contains("stopped before the body finished") == true, "\(record.attempts)")
            let wait = record.notBefore.timeIntervalSinceNow
            #expect(wait > 1_800 && wait < 5_400, "waits the first delay (3,600 s), not the second (7,200 s): \(wait) s")
        }
    }

    @Test("a give-back names its attempt: a late one for an earlier attempt leaves a later attempt running", arguments: StoreKind.all)
    func giveBackIsAttemptScoped(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let handle = try await queue.add(Echo.self, input: 1)
            _ = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 1, lease: .seconds(60))
            try await store.giveBack([DurableAttemptID(operation: handle.id, attempt: 1)], worker: "w", reason: "first")
            let again = try await store.claim(queue: "default", kinds: ["echo"], worker: "w", limit: 1, lease: .seconds(60))
            #expect(again.map(\.attempt) == [2])
            // The first give-back again, arriving late: attempt 2 is not touched.
            try await store.giveBack([DurableAttemptID(operation: handle.id, attempt: 1)], worker: "w", reason: "late")
            #expect(try await handle.state == .running)
            try await store.giveBack([DurableAttemptID(operation: handle.id, attempt: 2)], worker: "w", reason: "second")
            #expect(try await handle.state == .ready)
            #expect(try await handle.attempts.map(\.error) == ["first", "second"])
        }
    }

    @Test(
        "a claim whose worker vanished is rescued when its lease expires, and that attempt's late finish is ignored",
        arguments: StoreKind.all)
    func vanishedWorkerIsRescuedAndItsLateFinishIgnored(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            // A worker that claims and then dies (between the claim and the finish) with a short lease.
            let handle = try await addClaimedUntilRescued(
                Work.self, input: 0, to: queue, on: store, as: "vanished", lease: .milliseconds(200))
            // The vanished worker's finish arrives late: the attempt is no longer its to end.
            try await store.complete(
                [DurableCompletion(id: handle.id, attempt: 1, result: .succeeded(output: "1"))], worker: "vanished")
            #expect(try await handle.state == .ready)
            let value = try await valueRunningAWorker(of: handle, on: store, "the rescued operation")
            #expect(value == 2, "the second attempt's output, not the late one")
            let attempts = try await handle.attempts
            #expect(attempts.map(\.number) == [1, 2])
            #expect(attempts[0].error?.contains("worker vanished stopped renewing its lease during attempt 1") == true, "\(attempts)")
            #expect(attempts[1].error == nil && attempts[1].end != nil)
        }
    }

    @Test(
        "a worker's heartbeat renews only the leases of what it runs: a claim it never got the answer to expires and is rescued",
        arguments: StoreKind.all)
    func heartbeatRenewsOnlyWhatRuns(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            // Claimed by "w", which then runs nothing (as if the claim's answer were lost) and
            // keeps heartbeating.
            let handle = try await addClaimedUntilRescued(
                Echo.self, input: 7, to: queue, on: store, as: "w", lease: .milliseconds(300)
            ) {
                let heartbeat = try await store.heartbeat(
                    worker: "w", queues: ["default"], kinds: [Echo.kind], holding: [], lease: .milliseconds(300))
                #expect(heartbeat.held.isEmpty)
            }
            let value = try await valueRunningAWorker(of: handle, on: store, "the rescued operation")
            #expect(value == 7)
        }
    }

    @Test("cancelAll cancels every unfinished operation of the queue", arguments: StoreKind.all)
    func cancelAll(_ kind: StoreKind) async throws {
        try await withDefaultQueue(kind) { queue, store in
            let first = try await queue.add(Echo.self, input: 1)
            let second = try await queue.add(Echo.self, input: 2, dependencies: [first])
            try await queue.cancelAll(reason: "shutting down")
            #expect(try await first.outcome == .cancelled("shutting down"))
            #expect(try await second.state == .cancelled)
        }
    }
}

/// Claims the next operation of "default" as `worker`, which runs nothing, and checks that
/// the claim is `handle`'s alone.
private func claimAlone<K: DurableOperation>(
    _ handle: DurableHandle<K>, on store: any DurableOperationStore, as worker: String, lease: Duration,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let claims = try await store.claim(queue: "default", kinds: [K.kind], worker: worker, limit: 1, lease: lease)
    #expect(claims.map(\.id) == [handle.id], sourceLocation: sourceLocation)
}

/// Adds an operation of kind `K` with three immediate attempts, has `worker` claim it with
/// `lease` and run nothing, and waits until the lease has expired and the store's rescue
/// made the operation ready again; `whileWaiting` runs before each look.
private func addClaimedUntilRescued<K: DurableOperation>(
    _ kind: K.Type, input: K.Input, to queue: DurableQueue, on store: any DurableOperationStore, as worker: String,
    lease: Duration, whileWaiting: @Sendable () async throws -> Void = {},
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> DurableHandle<K> {
    let handle = try await queue.add(K.self, input: input, retry: DurableRetry(.immediate, maximumAttempts: 3))
    try await claimAlone(handle, on: store, as: worker, lease: lease, sourceLocation: sourceLocation)
    try await pollUntil(30, "the claim's lease expired and was rescued") {
        try await whileWaiting()
        return try await store.rescueExpiredLeases() == 1
    }
    #expect(try await handle.state == .ready, sourceLocation: sourceLocation)
    return handle
}

/// Runs until stopped on its first attempt; fails on every later one.
private struct HoldsThenFails: DurableOperation {
    static let kind = "holds-then-fails"
    struct Failure: Error {}
    func run(_ input: Int, context: DurableContext) async throws -> Int {
        if context.attempt == 1 { try await Task.sleep(for: .seconds(3_600)) }
        throw Failure()
    }
}
#endif

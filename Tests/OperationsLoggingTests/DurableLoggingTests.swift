// Log lines of durable attempts, from a worker and a queue on an in-memory SQLite store.
#if SQLite

import DurableTestKinds
import InMemoryLogging
import Logging
import OperationsDurable
import OperationsLogging
import OperationsSQLite
import Testing

@Suite("Durable operations to swift-log", .timeLimit(.minutes(3)))
struct DurableLoggingTests {
    @Test("failures at error, retries at warning, cancellations at info; starts and successes at debug")
    func outcomes() async throws {
        let (memory, logger) = inMemoryLogger(label: "durable-test", level: .debug)
        let (store, queue, worker) = try await jobsInMemory(concurrency: 1)
        let logging = DurableLogging(worker, queue, logger: logger)
        let echo = try await queue.add(Echo.self, input: 1)
        let flaky = try await queue.add(Flaky.self, input: 9, retry: DurableRetry(.immediate, maximumAttempts: 2))
        let hold = try await queue.add(Hold.self, input: 99, retry: .never)
        try await withRunningWorkerRecordingEvents(worker) { recorder in
            try await recorder.wait("the hold's start") { events in events.contains { $0.operation == hold.id && $0.kind == .started } }
            try await hold.cancel(reason: "not needed")
            try await recorder.wait("every end") { events in
                [echo.id, flaky.id, hold.id].allSatisfy { id in events.contains { $0.finishes(id) } }
            }
        }
        logging.cancel()
        await store.shutdown()

        let entries = memory.entries
        func lines(_ name: String) -> [(Logger.Level, String)] {
            entries.filter { $0.metadata["operation"]?.description == name }.map { ($0.level, $0.message.description) }
        }
        let echoName = "echo \(echo.id.rawValue)", flakyName = "flaky \(flaky.id.rawValue)", holdName = "hold \(hold.id.rawValue)"
        #expect(lines(echoName).map(\.0) == [.debug, .debug])
        #expect(lines(echoName).first?.1 == "\"\(echoName)\" attempt 1 started")
        #expect(lines(echoName).last?.1.hasPrefix("\"\(echoName)\" succeeded in ") == true)
        #expect(lines(flakyName).map(\.0) == [.debug, .warning, .debug, .error])
        #expect(lines(flakyName)[1].1.hasPrefix("\"\(flakyName)\" attempt 1 failed after ") == true)
        #expect(lines(flakyName)[1].1.hasSuffix(", to be retried: flaky attempt 1 failed") == true)
        #expect(lines(flakyName).last?.1.hasPrefix("\"\(flakyName)\" failed after ") == true)
        #expect(lines(flakyName).last?.1.hasSuffix(": flaky attempt 2 failed") == true)
        // The queue's cancel request and the worker's end of the attempt, in either order
        // (two sources, each with its own order).
        #expect(lines(holdName).map(\.0) == [.debug, .info, .info])
        #expect(lines(holdName).contains { $0.1 == "\"\(holdName)\" cancel requested: not needed" })
        #expect(lines(holdName).contains { $0.1.hasPrefix("\"\(holdName)\" cancelled after ") && $0.1.hasSuffix(": not needed") })
        let failure = try #require(entries.first { $0.metadata["operation"]?.description == flakyName && $0.level == .error })
        #expect(failure.metadata["operation.queue"]?.description == "jobs")
        #expect(failure.metadata["operation.kind"]?.description == "flaky")
        #expect(failure.metadata["operation.attempt"]?.description == "2")
        #expect(failure.metadata["operation.worker"]?.description == worker.id)
        #expect(failure.metadata["operation.outcome"]?.description == "failed")
        #expect(failure.metadata["operation.error"]?.description == "flaky attempt 2 failed")
    }

    @Test("the logger's level filters: at info, only cancellations, retries and failures")
    func filtered() async throws {
        let (memory, logger) = inMemoryLogger(label: "durable-test", level: .info)
        let (store, queue, worker) = try await jobsInMemory()
        let logging = DurableLogging(worker, logger: logger)
        let echo = try await queue.add(Echo.self, input: 1)
        let failing = try await queue.add(Flaky.self, input: 9, retry: .never)
        try await withRunningWorkerRecordingEvents(worker) { recorder in
            try await recorder.wait("both ends") { events in [echo.id, failing.id].allSatisfy { id in events.contains { $0.finishes(id) } } }
        }
        logging.cancel()
        await store.shutdown()
        #expect(memory.entries.map(\.level) == [.error])
    }
}

/// A migrated in-memory store, its queue "jobs", and a worker of that queue with a long lease.
private func jobsInMemory(
    concurrency: Int = DurableWorker.defaultConcurrency
) async throws -> (SQLiteOperationStore, DurableQueue, DurableWorker) {
    let store = SQLiteOperationStore(path: ":memory:")
    try await store.migrate()
    let worker = DurableWorker(
        store: store, queues: ["jobs"], kinds: allTestKinds, concurrency: concurrency,
        configuration: longLeaseConfiguration(name: "logging"))
    return (store, DurableQueue(name: "jobs", store: store), worker)
}
#endif

// A worker process started the way the README shows (`try await worker.run()`, no
// ServiceGroup) stops gracefully on SIGTERM and SIGINT.
#if PostgreSQL && SQLite

import DurableTestKinds
import Foundation
import OperationsDurable
import Testing

@Suite("Worker signals", .timeLimit(.minutes(2)))
struct WorkerSignalTests {
    @Test(
        "a worker run without a ServiceGroup gives back what it runs on SIGTERM or SIGINT and exits normally; the attempt is not counted",
        arguments: [SIGTERM, SIGINT])
    func signalStopsThePlainWorkerGracefully(_ signal: Int32) async throws {
        let file = SQLiteFile()
        defer { file.remove() }
        let store = try await file.migratedStore()
        let workers = WorkerProcesses()
        defer { workers.stopAll() }
        let queue = DurableQueue(name: "default", store: store)
        // One attempt in all: were the interrupted run counted, the operation would fail.
        let held = try await queue.add(Hold.self, input: 2, retry: .never)
        try workers.startPlain(name: "w0", sqlite: file.path, shutdownDeadlineMilliseconds: 0)
        try await workers.recordingLogsOnFailure { () async throws in
            try await eventually(60, "the held body's start") { try await held.state == .running }
            workers.send(signal, to: "w0")
            let status = try await within(60, "the worker's exit") { await workers.exitStatus("w0") }
            #expect(status == 0, "the worker process ended with status \(String(describing: status)), not by exiting normally\n\(status == 0 ? "" : workers.logs())")
            #expect(try await held.state == .ready)
            let attempts = try await held.attempts
            #expect(attempts.count == 1)
            #expect(attempts.first?.error?.contains("stopped before the body finished") == true)
        }
        // Another worker runs it: its second attempt returns.
        let value = try await withWorkers(store: store) { _ async throws in
            try await within(30, "the held operation's value") { try await held.value }
        }
        #expect(value == 2)
        await store.shutdown()
    }
}
#endif

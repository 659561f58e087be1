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
        try await checkSignalsStopTheWorker(mode: .plain(runs: 1), signal: signal)
    }

    @Test("a second run() in the same process stops on SIGTERM too")
    func signalStopsASecondRun() async throws {
        try await checkSignalsStopTheWorker(mode: .plain(runs: 2), signal: SIGTERM)
    }

    @Test("a worker in a ServiceGroup that handles SIGTERM still stops gracefully on it")
    func signalStopsTheWorkerOfAServiceGroup() async throws {
        try await checkSignalsStopTheWorker(mode: .serviceGroup, signal: SIGTERM)
    }
}

/// Starts a worker process as `mode` says, and for each of its runs: waits for a held body to
/// start, sends `signal`, and checks that the operation was given back without costing its
/// one attempt. Then checks the process exited normally and another worker finishes it.
private func checkSignalsStopTheWorker(mode: WorkerProcesses.RunMode, signal: Int32) async throws {
    try await withWorkerProcessesOnSQLiteFile { file, store, workers in
        let queue = DurableQueue(name: "default", store: store)
        let runs = if case .plain(let runs) = mode { runs } else { 1 }
        // One attempt in all: were an interrupted run counted, the operation would fail.
        let held = try await queue.add(Hold.self, input: runs + 1, retry: .never)
        try workers.start(name: "w0", sqlite: file.path, mode: mode, shutdownDeadlineMilliseconds: 0)
        try await workers.recordingLogsOnFailure { () async throws in
            for run in 1...runs {
                try await pollUntil(60, "run \(run): the held body's start") {
                    let state = try await held.state
                    let attempts = try await held.attempts
                    return state == .running && attempts.count == run
                }
                workers.send(signal, to: "w0")
                // The next run may claim it again at once: the give-back is read in the attempts.
                try await pollUntil(60, "run \(run): the give-back") {
                    let attempts = try await held.attempts
                    return attempts.count >= run && attempts[run - 1].error != nil
                }
            }
            let status = try await within(60, "the worker's exit") { await workers.exitStatus("w0") }
            #expect(try await held.state == .ready)
            #expect(status == 0, "the worker process ended with status \(String(describing: status)), not by exiting normally\n\(status == 0 ? "" : workers.logs())")
            let attempts = try await held.attempts
            #expect(attempts.count == runs)
            #expect(attempts.allSatisfy { $0.error?.contains("stopped before the body finished") == true }, "\(attempts)")
        }
        // Another worker runs it: its next attempt returns.
        let value = try await valueRunningAWorker(of: held, on: store, "the held operation's value")
        #expect(value == runs + 1)
        await store.shutdown()
    }
}
#endif

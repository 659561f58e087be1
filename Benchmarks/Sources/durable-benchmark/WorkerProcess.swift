// Worker processes: the benchmark starts itself again as a process that runs one
// DurableWorker until its queue has no unfinished operation, and child processes in general
// (the pgqueuer workers too).

import Foundation
import OperationsDurable
import OperationsPostgres
import OperationsSQLite

#if canImport(Glibc)
import Glibc
#endif

/// The queue the worker processes drain.
let processQueue = "bench"

/// `durable-benchmark --worker-process PORT DATABASE CONCURRENCY`, CONCURRENCY a number or
/// `default` (the worker made without a concurrency argument); PORT `sqlite` and DATABASE a
/// file's path for the SQLite store, or PORT `sqlite-normal` for it with
/// `synchronous = NORMAL`. Opens a store with the
/// library's default connection settings, runs the worker, counts the queue's unfinished
/// operations every 50 ms and stops the worker once there are none. Returns the exit status.
func runWorkerProcess(_ arguments: [String]) async -> Int32 {
    guard arguments.count == 3, let port = Int(arguments[0]) ?? (arguments[0].hasPrefix("sqlite") ? 0 : nil), arguments[2] == "default" || Int(arguments[2]) != nil else {
        FileHandle.standardError.write(Data("usage: durable-benchmark --worker-process PORT DATABASE CONCURRENCY|default\n".utf8))
        return 2
    }
    let store: any DurableOperationStore
    let shutdown: @Sendable () async -> Void
    if arguments[0].hasPrefix("sqlite") {
        var configuration = SQLiteOperationStore.Configuration()
        configuration.synchronousFull = arguments[0] != "sqlite-normal"
        let sqlite = SQLiteOperationStore(path: arguments[1], configuration: configuration)
        (store, shutdown) = (sqlite, { await sqlite.shutdown() })
    } else {
        let postgres = PostgresOperationStore(configuration: .init(port: port, username: "postgres", database: arguments[1]))
        (store, shutdown) = (postgres, { await postgres.shutdown() })
    }
    let worker =
        if let concurrency = Int(arguments[2]) {
            DurableWorker(store: store, queues: [processQueue], kinds: [Empty()], concurrency: concurrency)
        } else {
            DurableWorker(store: store, queues: [processQueue], kinds: [Empty()])
        }
    var status: Int32 = 0
    do {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await worker.run() }
            group.addTask {
                while try await store.unfinishedCount(queue: processQueue) > 0 {
                    try await Task.sleep(for: .milliseconds(50))
                }
                worker.stop()
            }
            // The first error ends the group (and cancels the other task).
            while try await group.next() != nil {}
        }
    } catch {
        FileHandle.standardError.write(Data("worker process: \(error)\n".utf8))
        status = 1
    }
    await shutdown()
    return status
}

/// The path of this executable, to start it again.
func ownExecutable() -> String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
}

/// A child process, its output (stdout and stderr) going to `log`. Used by one task.
final class ChildProcess {
    let pid: pid_t
    let log: String
    /// Its exit status, once `exitStatus()` saw it end.
    private(set) var status: Int32?

    init(_ arguments: [String], log: String) throws {
        self.log = log
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard result == 0 else { throw BenchmarkError("cannot start \(arguments[0]): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    /// The exit status once the process has ended (reaping it), `nil` while it runs.
    func exitStatus() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        // The exit code when it exited, 128 + the signal when a signal ended it.
        status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        return status
    }

    /// The last lines of its output, for an error message.
    var tail: String {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }
}

/// Waits for the children to end on their own (checking every 10 ms) for up to `timeout`,
/// then kills those still running. Throws when one did not exit with status 0.
func waitForExit(_ children: [ChildProcess], timeout: Duration) async throws {
    let deadline = ContinuousClock.now + timeout
    while children.contains(where: { $0.exitStatus() == nil }) {
        if ContinuousClock.now > deadline {
            for child in children where child.status == nil {
                kill(child.pid, SIGKILL)
                while child.exitStatus() == nil { try? await Task.sleep(for: .milliseconds(10)) }
            }
            throw BenchmarkError("worker processes did not exit within \(timeout) after the queue was empty")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    for child in children where child.status != 0 {
        throw BenchmarkError("worker process \(child.pid) exited with status \(child.status ?? -1):\n\(child.tail)")
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

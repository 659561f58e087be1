// A worker child process: the tour's own executable with its hidden `durable-worker` subcommand.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn and reaped with waitpid.
struct WorkerProcess: Sendable {
    let pid: pid_t
    let name: String

    /// The running executable (the tour's `operations-demo`).
    static var currentExecutable: String {
        #if os(Linux)
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
        #endif
        return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
    }

    /// Starts `executable durable-worker (--store PATH | --postgres-from-environment) --name NAME`,
    /// its output appended to `log`.
    static func start(executable: String, store: DurableStoreLocation, name: String, log: String) throws -> WorkerProcess {
        let arguments = [executable, "durable-worker"] + store.worker.arguments + ["--name", name]
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.merge(store.worker.environment) { $1 }
        let (pid, status) = spawn(arguments, environment: environment, log: log)
        guard status == 0 else {
            throw TourError.durableWorker(reason: "cannot start \(executable) as a worker: \(String(cString: strerror(status)))")
        }
        return WorkerProcess(pid: pid, name: name)
    }

    /// Sends `signal` and waits for the process to end.
    func stop(_ signal: Int32) {
        _ = kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }
}

/// Starts `arguments[0]` with posix_spawn, `environment` as its whole environment: its input
/// /dev/null, its output and errors appended to `log`; `moreActions` adds descriptors of its
/// own. Returns the process and posix_spawn's status (0: started).
func spawn(
    _ arguments: [String], environment: [String: String], log: String,
    moreActions: (inout posix_spawn_file_actions_t) -> Void = { _ in }
) -> (pid: pid_t, status: Int32) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    moreActions(&actions)
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
    return (pid, status)
}

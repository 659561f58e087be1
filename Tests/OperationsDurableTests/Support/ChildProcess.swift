// Child processes started with posix_spawn and reaped with waitpid on a thread of their own:
// Foundation's `Process` waits through a run loop and a Dispatch source, which stalled when
// the test tasks held the cooperative threads.
#if PostgreSQL && SQLite

import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct ChildProcess: Sendable {
    let pid: pid_t

    /// Starts `arguments[0]` with the rest as arguments; its output and errors go to `output`.
    static func spawn(_ arguments: [String], output: String = "/dev/null") throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard status == 0 else {
            throw PostgresCluster.ClusterError(description: "cannot start \(arguments[0]): error \(status)")
        }
        return ChildProcess(pid: pid)
    }

    /// Waits for the process to end; returns its exit status (128 + signal when killed).
    @discardableResult
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    /// Waits on a thread of its own, so that no thread of the concurrency pool is blocked.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: wait()) }.start()
        }
    }

    func signal(_ signal: Int32) {
        _ = kill(pid, signal)
    }
}
#endif

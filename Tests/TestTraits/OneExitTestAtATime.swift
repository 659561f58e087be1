// A trait for the suite's exit tests (`#expect(processExitsWith:)`): they run one at a time.

@_spi(Engine) import Operations
import Testing

/// Runs the tests that have it one at a time, the others in parallel as usual.
///
/// While an exit test's child process runs, Swift Testing's side of it reads the child's
/// reports synchronously on a thread of Swift's cooperative pool. That pool has one thread
/// per processor and does not grow while its threads block: two exit tests at once on a
/// 2-core machine hold all of it, and every async test of the process waits until one
/// child has exited (under Thread Sanitizer, where a child takes seconds, for minutes).
/// One at a time, an exit test holds at most one thread. Waiting for one's turn suspends.
package struct OneExitTestAtATime: TestTrait, TestScoping {
    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await exitTestLine.enter()
        defer { exitTestLine.leave() }
        try await function()
    }
}

extension Trait where Self == OneExitTestAtATime {
    /// The test is an exit test: it runs while no other exit test runs.
    package static var oneExitTestAtATime: Self { Self() }
}

/// The process's one line of exit tests.
private let exitTestLine = TurnLine()

/// A line of tasks that take turns, first come first served. Waiting suspends the task.
private final class TurnLine: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    // The package's lock: Thread Sanitizer sees it (Synchronization's `Mutex` it does not).
    private let state = Locked(State())

    /// Returns when it is the caller's turn.
    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The caller's turn is over: the next in line (if any) goes.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

import Operations
import OperationsComposition
import Testing

/// A count that tasks can await reaching a value.
final class AsyncCounter: Sendable {
    private let state = Shared<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    var value: Int { state().count }

    @discardableResult
    func increment() -> Int {
        let (count, ready) = state.update { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.count += 1
            let ready = state.waiters.filter { $0.0 <= state.count }.map(\.1)
            state.waiters.removeAll { $0.0 <= state.count }
            return (state.count, ready)
        }
        for waiter in ready { waiter.resume() }
        return count
    }

    /// Suspends until the count is at least `target`.
    func wait(for target: Int) async {
        await withCheckedContinuation { continuation in
            let reached = state.update { state in
                if state.count < target { state.waiters.append((target, continuation)) }
                return state.count >= target
            }
            if reached { continuation.resume() }
        }
    }
}

struct TestError: Error, Equatable {
    var code: Int
}

/// Polls `condition` (internal state that announces nothing) from a task without blocking
/// its thread, until it holds or the timeout passes. The pause between checks is a poll
/// interval, not the synchronization: the condition is.
func eventuallyAsync(timeout: TimeInterval = eventTimeout, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

// What the tests of durable events share: a recorder that can be awaited, and a worker run.
#if Durable

import Foundation
@_spi(Engine) import Operations
import OperationsDurable

/// Records the events handed to it and wakes tests waiting for a condition on them.
public final class DurableEventRecorder: Sendable {
    private struct Waiter {
        let id: UInt64
        let condition: @Sendable ([DurableEvent]) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var events: [DurableEvent] = []
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
    }

    private let state = Locked(State())

    public init() {}

    /// The events recorded so far, in the order they were handed over.
    public var events: [DurableEvent] { state.withLock { $0.events } }

    /// Records `event` (use it as an event handler).
    public func record(_ event: DurableEvent) {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.events.append(event)
            let events = state.events
            let satisfied = state.waiters.filter { $0.condition(events) }
            state.waiters.removeAll { waiter in satisfied.contains { $0.id == waiter.id } }
            return satisfied.map(\.continuation)
        }
        for continuation in woken { continuation.resume(returning: true) }
    }

    /// Returns once `condition` holds for the events recorded; throws after `seconds`
    /// without that (a test that would hang fails).
    public func wait(
        _ what: String, seconds: Double = 30, until condition: @escaping @Sendable ([DurableEvent]) -> Bool
    ) async throws {
        let satisfied = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> UInt64? in
                if condition(state.events) { return nil }
                defer { state.nextWaiter += 1 }
                state.waiters.append(Waiter(id: state.nextWaiter, condition: condition, continuation: continuation))
                return state.nextWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                let expired = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index).continuation
                }
                expired?.resume(returning: false)
            }
        }
        if !satisfied {
            throw RecorderTimedOut(description: "\(what): not within \(seconds) s; events: \(events.map(\.summary))")
        }
    }
}

public struct RecorderTimedOut: Error, CustomStringConvertible {
    public let description: String
}

extension DurableEvent {
    /// `kind id attempt (error)`, for messages.
    public var summary: String {
        "\(kind) \(operation.rawValue) \(attempt.map(String.init) ?? "-")" + (error.map { " (\($0))" } ?? "")
    }

    /// Whether it ends `operation`'s attempts for good.
    public func finishes(_ operation: DurableOperationID) -> Bool {
        guard self.operation == operation, case .finished = kind else { return false }
        return true
    }
}

/// A worker's configuration for the tests of events: a lease long enough that a heartbeat
/// delayed by a loaded machine does not take a running attempt back (the worker would end
/// it as `retried`, and the store would rescue it), which is not what those tests are about.
public func longLeaseConfiguration(name: String) -> DurableWorker.Configuration {
    var configuration = DurableWorker.Configuration()
    configuration.name = name
    configuration.lease = .seconds(120)
    return configuration
}

/// Runs `worker` while the body runs, then stops it and waits for it.
public func withRunningWorker<T: Sendable>(_ worker: DurableWorker, _ body: @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await worker.run(); return nil }
        let result: Result<T, any Error>
        do {
            result = .success(try await body())
        } catch {
            result = .failure(error)
        }
        worker.stop()
        while let _ = try await group.next() {}
        return try result.get()
    }
}

/// Runs `worker` while the body runs with a recorder of its events, then cancels the
/// recorder's subscription. The recorder is registered now, after any handler registered
/// before: an event it has seen, those have seen too.
public func withRunningWorkerRecordingEvents(
    _ worker: DurableWorker, _ body: @Sendable (DurableEventRecorder) async throws -> Void
) async throws {
    let recorder = DurableEventRecorder()
    let subscription = worker.addEventHandler(recorder.record)
    try await withRunningWorker(worker) { try await body(recorder) }
    subscription.cancel()
}
#endif

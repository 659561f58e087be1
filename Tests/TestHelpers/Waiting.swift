import Operations

/// How long a test waits for an event before it fails. Generous: the machine is small and
/// may be loaded (sanitizers, parallel tests); a correct run never comes near it.
public let eventTimeout: TimeInterval = 20

/// Whether the suite runs under a sanitizer (CI sets `OPERATIONS_SANITIZED=1`): there, tests
/// whose size only makes them slow use a smaller one. Computed: a global `let` would cost
/// every read a lock under Thread Sanitizer.
public var isSanitized: Bool { ProcessInfo.processInfo.environment["OPERATIONS_SANITIZED"] == "1" }

/// Polls `condition` (for state that announces nothing) until it holds or the timeout
/// passes, blocking the calling thread. True when it held in time.
public func eventually(timeout: TimeInterval = eventTimeout, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        usleep(1_000)
    }
    return true
}

/// Polls `condition` (internal state that announces nothing) from a task without blocking
/// its thread, until it holds or the timeout passes. The pause between checks is a poll
/// interval, not the synchronization: the condition is.
public func eventuallyAsync(timeout: TimeInterval = eventTimeout, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// What a bounded wait throws when its bound passes: a test that would hang fails instead.
public struct TimedOut: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) { self.description = description }
}

/// Reads until `condition` holds (a bounded wait for an event a store records), or throws
/// `TimedOut` after `seconds`.
public func pollUntil(
    _ seconds: Double, _ what: String, _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(25))
    }
    throw TimedOut(description: "\(what): not within \(seconds) s")
}

/// The body's result, or a thrown `TimedOut` after `seconds`.
public func within<T: Sendable>(
    _ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(description: "\(what): not within \(seconds) s")
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

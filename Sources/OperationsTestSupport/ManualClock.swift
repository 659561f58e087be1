@_spi(Engine) import Operations

/// A clock whose time moves only when a test says so: pass it wherever the library takes a
/// `Clock` (`DelayOperation`, timeouts, retry waits) and drive it with
/// ``advance(by:)``.
///
/// ```swift
/// let clock = ManualClock()
/// let delay = DelayOperation(for: .seconds(5), clock: clock)
/// queue.addOperation(delay)
/// await clock.waitForSleepers(1)     // the delay is waiting
/// clock.advance(by: .seconds(5))     // and now it finishes
/// ```
///
/// Sleeping tasks resume in the order of their deadlines (then in the order they slept).
/// A cancelled sleeper throws `CancellationError` at once.
public final class ManualClock: Clock, Sendable {
    /// A point on the manual clock's time line: the time advanced since it was made.
    public struct Instant: InstantProtocol, Sendable {
        /// The time since the clock's start.
        public var offset: Duration

        /// An instant `offset` after the clock's start.
        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var id: Int
        var deadline: Instant
        var continuation: UnsafeContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Sleeper] = []
        /// Tasks waiting for the number of sleepers to reach a count.
        var sleeperWaiters: [(count: Int, continuation: UnsafeContinuation<Void, Never>)] = []
        var totalSleeps = 0

        /// The waiters whose count the sleepers reached, removed.
        mutating func takeSleeperWaiters() -> [UnsafeContinuation<Void, Never>] {
            let count = sleepers.count
            let reached = sleeperWaiters.filter { $0.count <= count }.map(\.continuation)
            sleeperWaiters.removeAll { $0.count <= count }
            return reached
        }
    }

    private let state = Locked(State())

    /// Creates a clock at offset zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }

    /// Zero: the clock has no resolution of its own.
    public var minimumResolution: Duration { .zero }

    /// How many tasks sleep on the clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many sleeps began on the clock, ever (finished ones included).
    public var totalSleepCount: Int { state.withLock { $0.totalSleeps } }

    /// Suspends until `deadline` (at once if it has passed); throws `CancellationError`
    /// when the calling task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                enum Decision { case resume, cancelled, sleeps([UnsafeContinuation<Void, Never>]) }
                let decision = state.withLock { state -> Decision in
                    state.totalSleeps += 1
                    if deadline <= state.now { return .resume }
                    if Task.isCancelled { return .cancelled }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return .sleeps(state.takeSleeperWaiters())
                }
                switch decision {
                case .resume: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .sleeps(let waiters): for waiter in waiters { waiter.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration`, waking the sleepers whose deadlines it reaches.
    public func advance(by duration: Duration = .zero) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due.sorted { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && $0.id < $1.id) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves time forward to `instant` (not backwards).
    public func advance(to instant: Instant) {
        let duration = now.duration(to: instant)
        advance(by: duration > .zero ? duration : .zero)
    }

    /// Suspends until at least `count` tasks sleep on the clock: a timer is armed, a retry
    /// waits. Returns at once when they already do.
    public func waitForSleepers(_ count: Int = 1) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.sleeperWaiters.append((count, continuation))
                return false
            }
            if reached { continuation.resume() }
        }
    }
}

// Notifications without a server: every store polls the events table of the file.
#if SQLite

import Foundation
@_spi(Engine) import Operations
import OperationsDurable
import SQLiteNIO

/// Reads the events that transactions (of any process) appended past the last one it saw,
/// every `interval` or at once after a change of this store, and hands them to subscribers.
///
/// Event ids grow in commit order (one writer at a time), so reading past the last id misses
/// nothing; after a gap (events pruned while this process was stopped) it tells `.resynchronize`.
final class SQLiteNotificationPoller: Sendable {
    /// How long events are kept, in seconds.
    static let eventRetention: Double = 60

    private let fanOut = DurableNotificationFanOut()
    private let access: SQLiteAccess
    private let interval: Duration
    private let wake = PollWake()

    init(access: SQLiteAccess, interval: Duration) {
        self.access = access
        self.interval = interval
    }

    func subscribe() -> AsyncStream<DurableStoreNotification> {
        fanOut.subscribe { Task { await self.poll() } }
    }

    /// This store committed a change: read the events now rather than at the next tick.
    func poke() {
        wake.wake()
    }

    func stop() {
        fanOut.stop()
        wake.wake()
    }

    private func poll() async {
        var last: Int64?
        var pruned: ContinuousClock.Instant?
        while !Task.isCancelled {
            // Events are needed only until every poller has read them: deleted here, every
            // half retention, whether or not finished operations are ever pruned.
            if pruned.map({ ContinuousClock.now - $0 > .seconds(Self.eventRetention / 2) }) ?? true {
                pruned = ContinuousClock.now
                _ = try? await access.write("deleting the store's old events") { transaction in
                    try await transaction.rows(
                        "DELETE FROM durable_events WHERE at < ?", [.date(Date().addingTimeInterval(-Self.eventRetention))])
                }
            }
            do {
                if let seen = last {
                    let rows = try await access.withConnection("reading the store's events") { connection in
                        try await connection.rows(
                            "SELECT id, kind, payload FROM durable_events WHERE id > ? ORDER BY id", [.integer(SQLiteInt64(seen))])
                    }
                    var notifications: [DurableStoreNotification] = []
                    if let first = rows.first, Int64(first.int("id")) != seen + 1 { notifications.append(.resynchronize) }
                    for row in rows {
                        let payload = row.text("payload")
                        switch row.text("kind") {
                        case "w": notifications.append(.workAvailable(queue: payload))
                        case "f": notifications.append(.finished(DurableOperationID(rawValue: Int64(payload) ?? 0)))
                        case "c": notifications.append(.cancelRequested(DurableOperationID(rawValue: Int64(payload) ?? 0)))
                        default: continue
                        }
                    }
                    if let end = rows.last { last = Int64(end.int("id")) }
                    fanOut.broadcast(notifications)
                } else {
                    // The starting point: what came before was read by the subscribers themselves.
                    let start = try await access.withConnection("reading the store's events") { connection in
                        try await connection.rows("SELECT coalesce(max(id), 0) AS id FROM durable_events").first?.int("id") ?? 0
                    }
                    last = Int64(start)
                    fanOut.broadcast([.resynchronize])
                }
            } catch {
                // Not migrated yet, or the file is busy: try again at the next tick.
                if fanOut.isStopped { return }
            }
            await wake.wait(atMost: interval)
        }
    }
}

/// A wait that ends at a poke or after a time, whichever comes first.
final class PollWake: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Counts waits: a timer wakes only the wait that started it.
        var generation = 0
        var timer: Task<Void, Never>?
    }

    private let state = Locked(State())

    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Waits until `wake()` (or one that came since the last wait) or `duration`, whichever
    /// is first. The timer starts once the waiter is in place, so that its wake always finds it.
    func wait(atMost duration: Duration) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let generation = state.withLock { state -> Int? in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return nil
                    }
                    state.generation += 1
                    state.waiter = continuation
                    return state.generation
                }
                guard let generation else { return continuation.resume() }
                let timer = Task {
                    try? await Task.sleep(for: duration)
                    self.wake(generation: generation)
                }
                state.withLock { $0.timer = timer }
            }
        } onCancel: {
            wake()
        }
        state.withLock { $0.timer }?.cancel()
    }

    /// The timer's wake: only for the wait that started it.
    private func wake(generation: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.generation == generation, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
#endif

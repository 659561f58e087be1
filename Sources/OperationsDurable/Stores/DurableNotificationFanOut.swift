// A store's notifications, handed to every subscriber in this process.
#if Durable

@_spi(Engine) import Operations

/// Hands what a store hears (a LISTEN connection, a poller) to every subscriber of its
/// ``DurableOperationStore/notifications()``.
///
/// The store starts its source with the first subscription and stops it with ``stop()``,
/// which ends every subscriber's stream; a subscription after that gets an ended stream.
/// A store of your own can use it the way the PostgreSQL and SQLite stores do.
public final class DurableNotificationFanOut: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<DurableStoreNotification>.Continuation] = [:]
        var nextSubscriber = 0
        var source: Task<Void, Never>?
        var stopped = false
    }

    private let state = Locked(State())

    public init() {}

    /// A stream of what the store hears from now on; `startSource` is called once, with the
    /// first subscription, and the task it returns is cancelled by ``stop()``.
    public func subscribe(startSource: () -> Task<Void, Never>) -> AsyncStream<DurableStoreNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableStoreNotification.self)
        let (subscriber, mustStart, stopped) = state.withLock { state -> (Int, Bool, Bool) in
            if state.stopped { return (0, false, true) }
            let subscriber = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[subscriber] = continuation
            return (subscriber, state.source == nil, false)
        }
        if stopped {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: subscriber) }
        }
        if mustStart {
            let source = startSource()
            let cancelNow = state.withLock { state -> Bool in
                state.source = source
                return state.stopped
            }
            if cancelNow { source.cancel() }
        }
        return stream
    }

    /// Hands the notifications, in order, to every current subscriber.
    public func broadcast(_ notifications: some Sequence<DurableStoreNotification>) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        guard !subscribers.isEmpty else { return }
        for notification in notifications {
            for subscriber in subscribers { subscriber.yield(notification) }
        }
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    /// Cancels the source and ends every subscriber's stream, now and for later subscriptions.
    public func stop() {
        let (source, subscribers) = state.withLock { state in
            state.stopped = true
            let subscribers = Array(state.subscribers.values)
            state.subscribers = [:]
            return (state.source, subscribers)
        }
        source?.cancel()
        for subscriber in subscribers { subscriber.finish() }
    }
}
#endif

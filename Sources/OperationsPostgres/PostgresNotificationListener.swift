// One connection per store that LISTENs and hands notifications to every subscriber.
#if PostgreSQL

import Logging
@_spi(Engine) import Operations
import OperationsDurable
import PostgresNIO

/// Listens on the store's channel over a connection of its own (a pooled connection cannot
/// stay in LISTEN), reconnects with backoff, and tells `.resynchronize` after each connect,
/// since notifications sent while it was away are lost.
final class PostgresNotificationListener: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<DurableStoreNotification>.Continuation] = [:]
        var nextSubscriber = 0
        var task: Task<Void, Never>?
        var connection: PostgresConnection?
        var stopped = false
    }

    private let state = Locked(State())
    private let configuration: PostgresOperationStore.Configuration
    private let logger: Logger

    init(configuration: PostgresOperationStore.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func subscribe() -> AsyncStream<DurableStoreNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: DurableStoreNotification.self)
        let (subscriber, mustStart, stopped) = state.withLock { state -> (Int, Bool, Bool) in
            if state.stopped { return (0, false, true) }
            let subscriber = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[subscriber] = continuation
            return (subscriber, state.task == nil, false)
        }
        if stopped {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: subscriber) }
        }
        if mustStart {
            let task = Task { await self.listen() }
            let cancelNow = state.withLock { state -> Bool in
                state.task = task
                return state.stopped
            }
            if cancelNow { task.cancel() }
        }
        return stream
    }

    func stop() {
        let (task, connection, subscribers) = state.withLock { state in
            state.stopped = true
            let subscribers = Array(state.subscribers.values)
            state.subscribers = [:]
            return (state.task, state.connection, subscribers)
        }
        task?.cancel()
        if let connection { let _: EventLoopFuture<Void> = connection.close() }
        for subscriber in subscribers { subscriber.finish() }
    }

    private func broadcast(_ notification: DurableStoreNotification) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(notification) }
    }

    private func listen() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try configuration.connectionConfiguration(), id: 1, logger: logger)
                let stopped = state.withLock { state -> Bool in
                    state.connection = connection
                    return state.stopped
                }
                if stopped {
                    try? await connection.close()
                    return
                }
                try await connection.listen(on: PostgresSchema.channel) { notifications in
                    failures = 0
                    broadcast(.resynchronize)
                    for try await notification in notifications {
                        if let parsed = Self.parse(notification.payload) { broadcast(parsed) }
                    }
                }
                try? await connection.close()
            } catch {
                logger.debug("listening for durable notifications failed: \(error)")
            }
            failures += 1
            try? await Task.sleep(for: .milliseconds(min(2_000, 25 << min(failures, 7))))
        }
    }

    static func parse(_ payload: String) -> DurableStoreNotification? {
        guard payload.count > 2 else { return nil }
        let body = String(payload.dropFirst(2))
        switch payload.prefix(2) {
        case "w:": return .workAvailable(queue: body)
        case "f:": return Int64(body).map { .finished(DurableOperationID(rawValue: $0)) }
        case "c:": return Int64(body).map { .cancelRequested(DurableOperationID(rawValue: $0)) }
        default: return nil
        }
    }
}
#endif

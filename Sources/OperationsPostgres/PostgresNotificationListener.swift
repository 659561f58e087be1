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
    private let fanOut = DurableNotificationFanOut()
    /// The listening connection, while there is one, so that `stop()` can close it.
    private let connection = Locked<PostgresConnection?>(nil)
    private let configuration: PostgresOperationStore.Configuration
    private let logger: Logger

    init(configuration: PostgresOperationStore.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func subscribe() -> AsyncStream<DurableStoreNotification> {
        fanOut.subscribe { Task { await self.listen() } }
    }

    func stop() {
        fanOut.stop()
        if let connection = connection.withLock({ $0 }) { let _: EventLoopFuture<Void> = connection.close() }
    }

    private func listen() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try configuration.connectionConfiguration(), id: 1, logger: logger)
                self.connection.withLock { $0 = connection }
                if fanOut.isStopped {
                    try? await connection.close()
                    return
                }
                try await connection.listen(on: PostgresSchema.channel) { notifications in
                    failures = 0
                    fanOut.broadcast([.resynchronize])
                    for try await notification in notifications {
                        if let parsed = Self.parse(notification.payload) { fanOut.broadcast([parsed]) }
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

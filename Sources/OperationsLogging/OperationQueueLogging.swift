import Logging
@_spi(Engine) import Operations

/// Logs a queue's operations with swift-log: what a server developer reads when work fails
/// or is cancelled, and, at `debug`, every start and success.
///
/// | outcome | level (default) | message |
/// |---|---|---|
/// | started | `debug` | `"resize 7" started` |
/// | succeeded | `debug` | `"resize 7" succeeded in 12.3 ms` |
/// | cancelled | `info` | `"resize 7" cancelled after 4.0 ms: <reason>`, or `cancelled before it started` |
/// | failed | `error` | `"resize 7" failed after 8.1 ms: <error>` |
///
/// Each line has the metadata `operation` (its name, or its type's), `operation.queue`,
/// and on the last line of an operation `operation.outcome` (`succeeded`, `cancelled`,
/// `failed`), with `operation.error` (the failure, or the cancellation's reason when one
/// was given). The logger's level filters as usual; ``Levels`` chooses each outcome's
/// level, or leaves it out.
///
/// ```swift
/// let logging = OperationQueueLogging(queue, logger: Logger(label: "uploads"))   // keep it
/// ```
/// - Note: Operations added before it began are logged from their next event on.
/// - Note: With the `Durable` trait, `DurableLogging` logs durable workers' attempts at the
///   same levels.
public final class OperationQueueLogging: Sendable {
    /// The level each kind of line is logged at; nil leaves it out.
    public struct Levels: Sendable {
        public var started: Logger.Level? = .debug
        public var succeeded: Logger.Level? = .debug
        public var cancelled: Logger.Level? = .info
        public var failed: Logger.Level? = .error

        public init() {}
    }

    /// What is known of an operation between its events.
    private struct Seen {
        var startedAt: UInt64?
        /// Its cancellation came before the queue started it: its start runs no work.
        var cancelledBeforeStart = false
    }

    private let logger: Logger
    private let levels: Levels
    private let queueName: String
    /// By identity, from an operation's first event to its finish (the queue holds it
    /// meanwhile, so its identity stays unique).
    private let seen = Locked<[ObjectIdentifier: Seen]>([:])
    private let subscription = Locked<OperationEventSubscription?>(nil)

    /// Starts logging the operations of `queue`, until ``cancel()`` or release.
    public init(_ queue: OperationQueue, logger: Logger, levels: Levels = Levels()) {
        self.logger = logger
        self.levels = levels
        queueName = queue.name ?? "queue"
        let events = queue.addEventHandler { [weak self] event in self?.handle(event) }
        subscription.withLock { $0 = events }
    }

    /// Stops logging.
    public func cancel() {
        let stopped = subscription.withLock { subscription in
            defer { subscription = nil }
            return subscription
        }
        stopped?.cancel()
    }

    deinit { cancel() }

    private func handle(_ event: OperationEvent) {
        let identity = ObjectIdentifier(event.operation)
        switch event.kind {
        case .enqueued:
            return
        case .started:
            let runsWork = seen.withLock { seen -> Bool in
                seen[identity, default: Seen()].startedAt = event.time
                return !seen[identity]!.cancelledBeforeStart
            }
            if runsWork, let level = levels.started {
                log(level, event, "started")
            }
        case .cancelled:
            seen.withLock { seen in
                if seen[identity]?.startedAt == nil { seen[identity, default: Seen()].cancelledBeforeStart = true }
            }
        case .finished:
            let record = seen.withLock { $0.removeValue(forKey: identity) } ?? Seen()
            let ran = record.startedAt.flatMap { record.cancelledBeforeStart ? nil : $0 }
            let took = ran.map { Self.milliseconds(event.time &- $0) }
            switch event.operation.outcome {
            case .succeeded, nil:
                guard let level = levels.succeeded else { return }
                log(level, event, "succeeded" + (took.map { " in \($0)" } ?? ""), outcome: "succeeded")
            case .cancelled(let reason):
                guard let level = levels.cancelled else { return }
                let when = took.map { "after \($0)" } ?? "before it started"
                log(level, event, "cancelled \(when)" + (reason.map { ": \($0)" } ?? ""), outcome: "cancelled", error: reason)
            case .failed(let error):
                guard let level = levels.failed else { return }
                let when = took.map { "after \($0)" } ?? "before it started"
                log(level, event, "failed \(when): \(error)", outcome: "failed", error: error)
            }
        }
    }

    private func log(
        _ level: Logger.Level, _ event: OperationEvent, _ text: String, outcome: String? = nil,
        error: (any Error)? = nil
    ) {
        // The name's getter may be user code: read here, with no lock held.
        let name = event.operation.name ?? "\(type(of: event.operation))"
        var metadata: Logger.Metadata = ["operation": "\(name)", "operation.queue": "\(queueName)"]
        if let outcome { metadata["operation.outcome"] = "\(outcome)" }
        if let error { metadata["operation.error"] = "\(error)" }
        logger.log(level: level, "\"\(name)\" \(text)", metadata: metadata)
    }

    /// `nanoseconds` as milliseconds with one decimal ("12.3 ms").
    static func milliseconds(_ nanoseconds: UInt64) -> String {
        let tenths = (nanoseconds + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}

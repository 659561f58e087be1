// Log lines of durable attempts, from durable workers' and queues' events.
#if Durable

import Logging
@_spi(Engine) import Operations
import OperationsDurable

/// Logs durable workers' attempts (and the cancels issued through durable queues) with
/// swift-log, at the levels ``OperationQueueLogging`` uses, plus one for retries.
///
/// | event | level (default) | message |
/// |---|---|---|
/// | started | `debug` | `"resize 7" attempt 2 started` |
/// | succeeded | `debug` | `"resize 7" succeeded in 12.3 ms` |
/// | retried | `warning` | `"resize 7" attempt 1 failed after 8.1 ms, to be retried: <error>` |
/// | cancelled | `info` | `"resize 7" cancelled after 4.0 ms: <reason>` |
/// | failed | `error` | `"resize 7" failed after 8.1 ms: <error>` |
/// | cancel requested (queue) | `info` | `"resize 7" cancel requested: <reason>` |
///
/// An operation is named by its kind and its id. Each line has the metadata `operation`
/// (that name), `operation.id`, `operation.kind` and `operation.queue`, for a worker's lines
/// `operation.attempt` and `operation.worker`, and on an attempt's last line
/// `operation.outcome` (`succeeded`, `retried`, `cancelled`, `failed`) with
/// `operation.error` (the error, or the cancellation's reason).
///
/// ```swift
/// let logging = DurableLogging(worker, logger: Logger(label: "jobs"))   // keep it
/// ```
public final class DurableLogging: Sendable {
    /// The level each kind of line is logged at; nil leaves it out.
    public struct Levels: Sendable {
        public var started: Logger.Level? = .debug
        public var succeeded: Logger.Level? = .debug
        /// An attempt that failed (or was given back) while the operation runs again.
        public var retried: Logger.Level? = .warning
        /// A cancelled operation, and a cancel requested through a queue.
        public var cancelled: Logger.Level? = .info
        public var failed: Logger.Level? = .error

        public init() {}
    }

    private struct Attempt: Hashable {
        let operation: DurableOperationID
        let attempt: Int
    }

    private let logger: Logger
    private let levels: Levels
    /// When each running attempt started.
    private let started = Locked<[Attempt: UInt64]>([:])
    private let subscriptions = Locked<[DurableEventSubscription]>([])

    /// Starts logging the events of `sources` (workers and queues), until ``cancel()`` or
    /// release.
    public init(_ sources: any DurableEventSource..., logger: Logger, levels: Levels = Levels()) {
        self.logger = logger
        self.levels = levels
        let handlers = sources.map { source in source.addEventHandler { [weak self] event in self?.handle(event) } }
        subscriptions.withLock { $0 = handlers }
    }

    /// Stops logging. Safe to call more than once.
    public func cancel() {
        let stopped = subscriptions.withLock { list in
            defer { list = [] }
            return list
        }
        for subscription in stopped { subscription.cancel() }
    }

    deinit { cancel() }

    private func handle(_ event: DurableEvent) {
        let key = event.attempt.map { Attempt(operation: event.operation, attempt: $0) }
        switch event.kind {
        case .enqueued:
            return
        case .started:
            if let key { started.withLock { $0[key] = event.time } }
            if let level = levels.started { log(level, event, "attempt \(event.attempt ?? 0) started") }
        case .cancelled:
            // A worker's cancel is logged when the attempt ends; a queue's has no end here.
            guard event.worker == nil, let level = levels.cancelled else { return }
            log(level, event, "cancel requested" + (event.error.map { ": \($0)" } ?? ""))
        case .retried:
            let took = duration(key, event)
            guard let level = levels.retried else { return }
            let when = took.map { " after \($0)" } ?? ""
            log(
                level, event, "attempt \(event.attempt ?? 0) failed\(when), to be retried: \(event.error ?? "no error given")",
                outcome: "retried", error: event.error)
        case .finished(let outcome):
            let took = duration(key, event)
            switch outcome {
            case .succeeded:
                guard let level = levels.succeeded else { return }
                log(level, event, "succeeded" + (took.map { " in \($0)" } ?? ""), outcome: "succeeded")
            case .cancelled(let reason):
                guard let level = levels.cancelled else { return }
                log(level, event, "cancelled" + (took.map { " after \($0)" } ?? "") + ": \(reason)", outcome: "cancelled", error: reason)
            case .failed(let error):
                guard let level = levels.failed else { return }
                log(level, event, "failed" + (took.map { " after \($0)" } ?? "") + ": \(error)", outcome: "failed", error: error)
            }
        }
    }

    /// How long the attempt ran, if its start was seen.
    private func duration(_ key: Attempt?, _ event: DurableEvent) -> String? {
        guard let key, let start = started.withLock({ $0.removeValue(forKey: key) }) else { return nil }
        return OperationQueueLogging.milliseconds(event.time &- start)
    }

    private func log(_ level: Logger.Level, _ event: DurableEvent, _ text: String, outcome: String? = nil, error: String? = nil) {
        let name = "\(event.operationKind) \(event.operation.rawValue)"
        var metadata: Logger.Metadata = [
            "operation": "\(name)", "operation.id": "\(event.operation.rawValue)",
            "operation.kind": "\(event.operationKind)", "operation.queue": "\(event.queue)",
        ]
        if let attempt = event.attempt { metadata["operation.attempt"] = "\(attempt)" }
        if let worker = event.worker { metadata["operation.worker"] = "\(worker)" }
        if let outcome { metadata["operation.outcome"] = "\(outcome)" }
        if let error { metadata["operation.error"] = "\(error)" }
        logger.log(level: level, "\"\(name)\" \(text)", metadata: metadata)
    }
}
#endif

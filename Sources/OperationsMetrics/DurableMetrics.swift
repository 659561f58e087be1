// Numbers of durable attempts and operations, from durable workers' and queues' events.
#if Durable

import CoreMetrics
@_spi(Engine) import Operations
import OperationsDurable

/// Reports durable workers' and queues' numbers to swift-metrics, from their events: a gauge
/// of executing attempts, a timer of running time (started → retried or finished), counters
/// of finished, cancelled, failed and retried operations (from workers) and of enqueued ones
/// (from queues).
///
/// Labels are `<prefix>.executing`, `.run_time`, `.finished` (every final end), `.cancelled`
/// and `.failed` (the finishes that ended so), `.retried` and `.enqueued`, with the
/// dimensions `queue` and `kind` (the operation's kind of work). The default prefix,
/// `operations.durable`, keeps them apart from ``OperationQueueMetrics``'s, whose dimensions
/// differ.
///
/// ```swift
/// let metrics = DurableMetrics(worker, queue)   // keep it: reporting stops when released
/// ```
/// - Note: Waiting time is not reported: when an operation was added is the store's to know.
///   `executing` counts this process's attempts.
public final class DurableMetrics: Sendable {
    private struct Dimensions: Hashable {
        let queue: String
        let kind: String
    }

    /// The metrics of one queue and kind.
    private struct Series: Sendable {
        let executing: Gauge
        let runTime: CoreMetrics.Timer
        let finished: Counter
        let cancelled: Counter
        let failed: Counter
        let retried: Counter
        let enqueued: Counter

        init(prefix: String, dimensions: [(String, String)], factory: any MetricsFactory) {
            func label(_ name: String) -> String { "\(prefix).\(name)" }
            executing = Gauge(label: label("executing"), dimensions: dimensions, factory: factory)
            runTime = CoreMetrics.Timer(label: label("run_time"), dimensions: dimensions, factory: factory)
            finished = Counter(label: label("finished"), dimensions: dimensions, factory: factory)
            cancelled = Counter(label: label("cancelled"), dimensions: dimensions, factory: factory)
            failed = Counter(label: label("failed"), dimensions: dimensions, factory: factory)
            retried = Counter(label: label("retried"), dimensions: dimensions, factory: factory)
            enqueued = Counter(label: label("enqueued"), dimensions: dimensions, factory: factory)
        }
    }

    private struct Attempt: Hashable {
        let operation: DurableOperationID
        let attempt: Int
    }

    private struct State {
        var series: [Dimensions: Series] = [:]
        var executing: [Dimensions: Int] = [:]
        /// When each running attempt started.
        var started: [Attempt: UInt64] = [:]
    }

    private let labelPrefix: String
    private let factory: any MetricsFactory
    private let state = Locked(State())
    private let subscriptions = Locked<[DurableEventSubscription]>([])

    /// Starts reporting the events of `sources` (workers and queues) to `factory` (the
    /// bootstrapped metrics system by default), until ``cancel()`` or release.
    public init(
        _ sources: any DurableEventSource..., labelPrefix: String = "operations.durable",
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.labelPrefix = labelPrefix
        self.factory = factory
        let handlers = sources.map { source in source.addEventHandler { [weak self] event in self?.handle(event) } }
        subscriptions.withLock { $0 = handlers }
    }

    /// Stops reporting. Safe to call more than once.
    public func cancel() {
        let stopped = subscriptions.withLock { list in
            defer { list = [] }
            return list
        }
        for subscription in stopped { subscription.cancel() }
    }

    deinit { cancel() }

    private func series(_ dimensions: Dimensions) -> Series {
        if let existing = state.withLock({ $0.series[dimensions] }) { return existing }
        // Made after the lock: the factory is user code. A race keeps the first one made.
        let made = Series(
            prefix: labelPrefix, dimensions: [("queue", dimensions.queue), ("kind", dimensions.kind)], factory: factory)
        return state.withLock { state in
            if let existing = state.series[dimensions] { return existing }
            state.series[dimensions] = made
            return made
        }
    }

    private enum Report {
        case none
        case enqueued
        case started(executing: Int)
        case ended(executing: Int, ran: UInt64?)
    }

    private func handle(_ event: DurableEvent) {
        let dimensions = Dimensions(queue: event.queue, kind: event.operationKind)
        let key = event.attempt.map { Attempt(operation: event.operation, attempt: $0) }
        // Decided under the lock; reported after it (a metrics backend is user code).
        let report = state.withLock { state -> Report in
            switch event.kind {
            case .enqueued:
                return .enqueued
            case .cancelled:
                return .none
            case .started:
                guard let key else { return .none }
                state.started[key] = event.time
                state.executing[dimensions, default: 0] += 1
                return .started(executing: state.executing[dimensions]!)
            case .retried, .finished:
                guard let key, let started = state.started.removeValue(forKey: key) else { return .none }
                state.executing[dimensions, default: 1] -= 1
                return .ended(executing: state.executing[dimensions]!, ran: event.time &- started)
            }
        }
        if case .none = report { return }
        let series = series(dimensions)
        switch report {
        case .none:
            return
        case .enqueued:
            series.enqueued.increment()
        case .started(let executing):
            series.executing.record(executing)
        case .ended(let executing, let ran):
            series.executing.record(executing)
            if let ran { series.runTime.recordNanoseconds(Int64(clamping: ran)) }
            switch event.kind {
            case .retried:
                series.retried.increment()
            case .finished(let outcome):
                series.finished.increment()
                switch outcome {
                case .cancelled: series.cancelled.increment()
                case .failed: series.failed.increment()
                case .succeeded: break
                }
            default:
                break
            }
        }
    }
}
#endif

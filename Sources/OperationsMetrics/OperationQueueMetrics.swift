import CoreMetrics
@_spi(Engine) import Operations

/// Reports a queue's numbers to swift-metrics, from the queue's events: gauges of pending
/// and executing operations, timers of waiting (added → started) and running (started →
/// finished) time, counters of finished, cancelled and failed operations.
///
/// Labels are `<prefix>.pending`, `.executing`, `.wait_time`, `.run_time`, `.finished`
/// (every finish), `.cancelled` and `.failed` (the finishes that ended so), with the
/// dimension `queue` = the queue's name. Operations added before it began are not counted;
/// one cancelled before it started has a waiting time and no running time.
///
/// ```swift
/// let metrics = OperationQueueMetrics(queue)   // keep it: reporting stops when released
/// ```
/// - Note: With the `Durable` trait, `DurableMetrics` reports durable workers and queues.
public final class OperationQueueMetrics: Sendable {
    private struct Counts {
        var pending = 0
        var executing = 0
        /// When each operation counted here was added (and started), by identity: an
        /// operation stays alive, so its identity stays unique, until its finished event.
        var enqueued: [ObjectIdentifier: UInt64] = [:]
        var started: [ObjectIdentifier: UInt64] = [:]
        /// Cancelled before they started: they pass through `start()` without running,
        /// so they get no running time.
        var cancelledBeforeStart: Set<ObjectIdentifier> = []
    }

    private let pending: Gauge
    private let executing: Gauge
    private let waitTime: CoreMetrics.Timer
    private let runTime: CoreMetrics.Timer
    private let finished: Counter
    private let cancelled: Counter
    private let failed: Counter
    private let counts = Locked(Counts())
    private let subscription = Locked<OperationEventSubscription?>(nil)

    /// Starts reporting the events of `queue` to `factory` (the bootstrapped metrics
    /// system by default), until ``cancel()`` or release.
    public init(
        _ queue: OperationQueue, labelPrefix: String = "operations", dimensions: [(String, String)]? = nil,
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        let dimensions = dimensions ?? [("queue", queue.name ?? "queue")]
        func label(_ name: String) -> String { "\(labelPrefix).\(name)" }
        pending = Gauge(label: label("pending"), dimensions: dimensions, factory: factory)
        executing = Gauge(label: label("executing"), dimensions: dimensions, factory: factory)
        waitTime = CoreMetrics.Timer(label: label("wait_time"), dimensions: dimensions, factory: factory)
        runTime = CoreMetrics.Timer(label: label("run_time"), dimensions: dimensions, factory: factory)
        finished = Counter(label: label("finished"), dimensions: dimensions, factory: factory)
        cancelled = Counter(label: label("cancelled"), dimensions: dimensions, factory: factory)
        failed = Counter(label: label("failed"), dimensions: dimensions, factory: factory)
        let handler = queue.addEventHandler { [weak self] event in self?.handle(event) }
        subscription.withLock { $0 = handler }
    }

    /// Stops reporting. Safe to call more than once.
    public func cancel() {
        subscription.withLock { $0 }?.cancel()
    }

    deinit { cancel() }

    private enum Report {
        case none
        case counts(pending: Int, executing: Int)
        case started(pending: Int, executing: Int, waited: UInt64)
        case finished(pending: Int, executing: Int, waited: UInt64?, ran: UInt64?)
    }

    private func handle(_ event: OperationEvent) {
        let identity = ObjectIdentifier(event.operation)
        // Decided under the lock; reported after it (a metrics backend is user code).
        let report = counts.withLock { counts -> Report in
            switch event.kind {
            case .enqueued:
                counts.pending += 1
                counts.enqueued[identity] = event.time
                return .counts(pending: counts.pending, executing: counts.executing)
            case .started:
                guard let enqueued = counts.enqueued[identity] else { return .none }
                counts.pending -= 1
                counts.executing += 1
                counts.started[identity] = event.time
                return .started(pending: counts.pending, executing: counts.executing, waited: event.time &- enqueued)
            case .cancelled:
                if counts.started[identity] == nil, counts.enqueued[identity] != nil { counts.cancelledBeforeStart.insert(identity) }
                return .none
            case .finished:
                guard let enqueued = counts.enqueued.removeValue(forKey: identity) else { return .none }
                let early = counts.cancelledBeforeStart.remove(identity) != nil
                if let started = counts.started.removeValue(forKey: identity) {
                    counts.executing -= 1
                    return .finished(pending: counts.pending, executing: counts.executing, waited: nil, ran: early ? nil : event.time &- started)
                }
                counts.pending -= 1
                return .finished(pending: counts.pending, executing: counts.executing, waited: event.time &- enqueued, ran: nil)
            }
        }
        switch report {
        case .none:
            return
        case .counts(let pendingCount, let executingCount):
            pending.record(pendingCount)
            executing.record(executingCount)
        case .started(let pendingCount, let executingCount, let waited):
            pending.record(pendingCount)
            executing.record(executingCount)
            waitTime.recordNanoseconds(Int64(clamping: waited))
        case .finished(let pendingCount, let executingCount, let waited, let ran):
            pending.record(pendingCount)
            executing.record(executingCount)
            if let waited { waitTime.recordNanoseconds(Int64(clamping: waited)) }
            if let ran { runTime.recordNanoseconds(Int64(clamping: ran)) }
            finished.increment()
            switch event.operation.outcome {
            case .cancelled: cancelled.increment()
            case .failed: failed.increment()
            default: break
            }
        }
    }
}

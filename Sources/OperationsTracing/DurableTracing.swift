// Spans of durable attempts, from a durable worker's events.
#if Durable

import Dispatch
@_spi(Engine) import Operations
import OperationsDurable
import Tracing

/// Traces the attempts of durable workers with swift-distributed-tracing: a span per
/// attempt, from its `started` event until it is retried or finished.
///
/// - The span is named after the operation's kind, with the attributes `operation.id`,
///   `operation.kind`, `operation.attempt`, `operation.worker` and `operation.queue`.
/// - It links to the spans of its dependencies that this tracer saw (their last attempt,
///   among the latest `rememberedOperations` operations traced).
/// - It has an event `cancelled` when a cancel reaches the worker while it runs.
/// - Its status is the attempt's end: `ok` when the operation succeeded; `error` with the
///   error when it failed (also recorded) or will be retried, or with `cancelled: <reason>`.
///   The attribute `operation.outcome` says which (`succeeded`, `failed`, `cancelled`,
///   `retried`).
///
/// ```swift
/// let tracing = DurableTracing(worker)   // keep it: tracing stops when released
/// ```
/// - Note: Attempts are top-level spans: the context where the operation was added is not
///   stored with it. ``context(of:attempt:)`` gives a running attempt's context to its body.
public final class DurableTracing: Sendable {
    private struct Attempt: Hashable {
        let operation: DurableOperationID
        let attempt: Int
    }

    private struct State {
        var open: [Attempt: any Span] = [:]
        /// The context of each operation's last ended span, for its dependents' links; the
        /// oldest entries are forgotten beyond the limit.
        var ended: [DurableOperationID: ServiceContext] = [:]
        var endedOrder: [DurableOperationID] = []
        var endedOrderHead = 0
        /// Callers waiting for an attempt's span to start.
        var waiters: [Attempt: [CheckedContinuation<(any Span)?, Never>]] = [:]
        var cancelled = false
    }

    private let tracer: any Tracer
    private let rememberedOperations: Int
    private let state = Locked(State())
    private let subscriptions = Locked<[DurableEventSubscription]>([])
    /// Wall-clock nanoseconds minus monotonic nanoseconds: event times are monotonic.
    private let epochOffset: UInt64

    /// Starts tracing the attempts that `sources` (workers; queues report no attempts) run
    /// from now on, with `tracer` (the bootstrapped one by default), until ``cancel()`` or
    /// release.
    public init(
        _ sources: any DurableEventSource..., tracer: any Tracer = InstrumentationSystem.tracer,
        rememberedOperations: Int = 10_000
    ) {
        self.tracer = tracer
        self.rememberedOperations = max(rememberedOperations, 0)
        epochOffset = DefaultTracerClock.now.nanosecondsSinceEpoch &- DispatchTime.now().uptimeNanoseconds
        let handlers = sources.map { source in source.addEventHandler { [weak self] event in self?.handle(event) } }
        subscriptions.withLock { $0 = handlers }
    }

    /// Stops tracing; spans of attempts still running are ended now, with no status.
    public func cancel() {
        let stopped = subscriptions.withLock { list in
            defer { list = [] }
            return list
        }
        for subscription in stopped { subscription.cancel() }
        let (open, waiting) = state.withLock { state in
            defer {
                state.cancelled = true
                state.waiters = [:]
                state.open = [:]
                state.ended = [:]
                state.endedOrder = []
                state.endedOrderHead = 0
            }
            return (Array(state.open.values), state.waiters.values.flatMap { $0 })
        }
        for waiter in waiting { waiter.resume(returning: nil) }
        for span in open { span.end() }
    }

    deinit { cancel() }

    /// The context of the span of `operation`'s running attempt, once this tracer has seen it
    /// start. A worker delivers events on a queue of their own, so at the very start of a body
    /// it may still be nil there: a body uses ``context(of:attempt:)``.
    public func context(of operation: DurableOperationID) -> ServiceContext? {
        // The span's getter is the tracer's code: read after the lock.
        state.withLock { state in state.open.first { $0.key.operation == operation }?.value }?.context
    }

    /// The context of the span of attempt `attempt` of `operation`, waiting until this tracer
    /// has seen it start: for the attempt's body (`context.id`, `context.attempt`), while it
    /// runs. Nil when the attempt ended without a span (tracing began after its start), or
    /// tracing stopped.
    public func context(of operation: DurableOperationID, attempt: Int) async -> ServiceContext? {
        let key = Attempt(operation: operation, attempt: attempt)
        let span = await withCheckedContinuation { (continuation: CheckedContinuation<(any Span)?, Never>) in
            let found = state.withLock { state -> (any Span)?? in
                if let span = state.open[key] { return .some(span) }
                if state.cancelled { return .some(nil) }
                state.waiters[key, default: []].append(continuation)
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
        // The span's getter is the tracer's code: read after the lock.
        return span?.context
    }

    private func instant(_ monotonic: UInt64) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: monotonic &+ epochOffset)
    }

    private func handle(_ event: DurableEvent) {
        guard let attempt = event.attempt else { return }
        let key = Attempt(operation: event.operation, attempt: attempt)
        switch event.kind {
        case .enqueued:
            return
        case .started:
            start(event, key: key)
        case .cancelled:
            let span = state.withLock { $0.open[key] }
            span?.addEvent(SpanEvent(name: "cancelled", at: instant(event.time)))
        case .retried:
            guard let span = end(key) else { return }
            remember(span, of: key.operation)
            span.attributes["operation.outcome"] = "retried"
            span.setStatus(SpanStatus(code: .error, message: event.error ?? "retried"))
            span.end(at: instant(event.time))
        case .finished(let outcome):
            guard let span = end(key) else { return }
            remember(span, of: key.operation)
            switch outcome {
            case .succeeded:
                span.attributes["operation.outcome"] = "succeeded"
                span.setStatus(SpanStatus(code: .ok))
            case .cancelled(let reason):
                span.attributes["operation.outcome"] = "cancelled"
                span.setStatus(SpanStatus(code: .error, message: "cancelled: \(reason)"))
            case .failed(let error):
                span.attributes["operation.outcome"] = "failed"
                span.recordError(DurableAttemptError(description: error), attributes: [:], at: instant(event.time))
                span.setStatus(SpanStatus(code: .error, message: error))
            }
            span.end(at: instant(event.time))
        }
    }

    private func start(_ event: DurableEvent, key: Attempt) {
        let span = tracer.startSpan(event.operationKind, context: .topLevel, ofKind: .consumer, at: instant(event.time))
        span.attributes["operation.id"] = event.operation.rawValue
        span.attributes["operation.kind"] = event.operationKind
        span.attributes["operation.attempt"] = event.attempt ?? 0
        span.attributes["operation.queue"] = event.queue
        if let worker = event.worker { span.attributes["operation.worker"] = worker }
        let (linked, waiting) = state.withLock { state in
            state.open[key] = span
            return (event.dependencies.compactMap { state.ended[$0] }, state.waiters.removeValue(forKey: key) ?? [])
        }
        for dependency in linked { span.addLink(SpanLink(context: dependency, attributes: [:])) }
        for waiter in waiting { waiter.resume(returning: span) }
    }

    /// Takes the attempt's open span; whoever still waits for it to start learns it never will.
    private func end(_ key: Attempt) -> (any Span)? {
        let (span, waiting) = state.withLock { state in
            (state.open.removeValue(forKey: key), state.waiters.removeValue(forKey: key) ?? [])
        }
        for waiter in waiting { waiter.resume(returning: nil) }
        return span
    }

    /// Keeps the context of `span` as `operation`'s last, for its dependents' links.
    private func remember(_ span: any Span, of operation: DurableOperationID) {
        guard rememberedOperations > 0 else { return }
        // The span's getter is the tracer's code: read before the lock.
        let context = span.context
        state.withLock { state in
            if state.ended.updateValue(context, forKey: operation) == nil {
                state.endedOrder.append(operation)
                if state.endedOrder.count - state.endedOrderHead > rememberedOperations {
                    state.ended[state.endedOrder[state.endedOrderHead]] = nil
                    state.endedOrderHead += 1
                    // Reclaim the forgotten slots once they are the larger part.
                    if state.endedOrderHead * 2 >= state.endedOrder.count {
                        state.endedOrder.removeFirst(state.endedOrderHead)
                        state.endedOrderHead = 0
                    }
                }
            }
        }
    }
}

/// A durable attempt's error, as recorded on its span.
struct DurableAttemptError: Error, CustomStringConvertible {
    let description: String
}
#endif

@_spi(Engine) import Operations
import Tracing

/// Traces a queue's operations with swift-distributed-tracing: a span per operation from
/// the moment it is added until it finishes.
///
/// - The span is a child of the `ServiceContext` that was current where the operation was
///   added (captured on the adding thread, through `OperationQueue.addEnqueueHook(_:)`).
/// - It has an event `started` when the queue starts its work, and `cancelled` when
///   cancelled. An operation cancelled before it started has no `started` event: the queue
///   passes it through `start()`, but no work runs.
/// - It links to the spans of its dependencies that are traced (by this or another
///   ``OperationQueueTracing``), read when it is added.
/// - Its status is the outcome: `ok` when it succeeded, `error` with the message
///   `cancelled` (and the reason) when cancelled, `error` with the error (also recorded)
///   when it failed. The attribute `operation.outcome` says which.
///
/// ```swift
/// let tracing = OperationQueueTracing(queue)   // keep it: tracing stops when released
/// ```
/// - The `async` body of a `TaskOperation` (`AsyncBlockOperation`) runs with the span's
///   context current (`ServiceContext.current`), so spans it starts are children of it.
/// - Note: Operations added before it began are not traced. A synchronous `main()` does not
///   run with the span's context current; ``context(of:)`` gives it to code that wants it.
/// - Note: With the `Durable` trait, `DurableTracing` traces durable workers the same way,
///   a span per attempt.
public final class OperationQueueTracing: Sendable {
    private struct Traced {
        let operation: Operation
        let span: any Span
        /// Its `cancelled` event came before any `started`: its start runs no work.
        var cancelledBeforeStart = false
        var started = false
    }

    private let tracer: any Tracer
    private let queueName: String
    /// The spans of operations added and not finished, by identity (the operation is kept
    /// alive here, so its identity stays unique).
    private let spans = Locked<[ObjectIdentifier: Traced]>([:])
    private let subscriptions = Locked<[OperationEventSubscription]>([])
    /// Wall-clock nanoseconds minus monotonic nanoseconds: event times are monotonic.
    private let epochOffset: UInt64

    /// Starts tracing the operations added to `queue` from now on, with `tracer` (the
    /// bootstrapped one by default), until ``cancel()`` or release.
    public init(_ queue: OperationQueue, tracer: any Tracer = InstrumentationSystem.tracer) {
        self.tracer = tracer
        queueName = queue.name ?? "queue"
        epochOffset = DefaultTracerClock.now.nanosecondsSinceEpoch &- DispatchTime.now().uptimeNanoseconds
        let hook = queue.addEnqueueHook { [weak self] operation in self?.begin(operation) }
        let events = queue.addEventHandler { [weak self] event in self?.handle(event) }
        let scope = queue.addTaskScope { [weak self] operation, body in
            guard let context = self?.context(of: operation) else { return await body() }
            await ServiceContext.withValue(context) { await body() }
        }
        subscriptions.withLock { $0 = [hook, events, scope] }
    }

    /// Stops tracing; spans not finished yet are ended now, with no status.
    public func cancel() {
        let stopped = subscriptions.withLock { list in
            defer { list = [] }
            return list
        }
        for subscription in stopped { subscription.cancel() }
        let open = spans.withLock { spans in
            defer { spans = [:] }
            return spans
        }
        for traced in open.values { traced.span.end() }
    }

    deinit { cancel() }

    /// The context of `operation`'s span (a child of the context where it was added), while
    /// it is traced and not finished.
    public func context(of operation: Operation) -> ServiceContext? {
        // The span's getter is the tracer's code: read after the lock.
        spans.withLock { $0[ObjectIdentifier(operation)]?.span }?.context
    }

    /// On the adding thread: starts the span, as a child of the context current here.
    private func begin(_ operation: Operation) {
        let parent = ServiceContext.current ?? .topLevel
        // Read before any lock: the getters may be user code.
        let name = operation.name ?? "\(type(of: operation))"
        let dependencies = operation.dependencies.map(ObjectIdentifier.init)
        let span = tracer.startSpan(name, context: parent, ofKind: .internal)
        span.attributes["operation.queue"] = queueName
        let linked = spans.withLock { spans in
            let linked = dependencies.compactMap { spans[$0]?.span }
            spans[ObjectIdentifier(operation)] = Traced(operation: operation, span: span)
            return linked
        }
        // The spans' getters are the tracer's code: read after the lock.
        for dependency in linked { span.addLink(SpanLink(context: dependency.context, attributes: [:])) }
    }

    private func instant(_ monotonic: UInt64) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: monotonic &+ epochOffset)
    }

    private func handle(_ event: OperationEvent) {
        let identity = ObjectIdentifier(event.operation)
        switch event.kind {
        case .enqueued:
            return
        case .started:
            let span = spans.withLock { spans -> (any Span)? in
                spans[identity]?.started = true
                guard let traced = spans[identity], !traced.cancelledBeforeStart else { return nil }
                return traced.span
            }
            span?.addEvent(SpanEvent(name: "started", at: instant(event.time)))
        case .cancelled:
            let span = spans.withLock { spans -> (any Span)? in
                guard let traced = spans[identity] else { return nil }
                if !traced.started { spans[identity]?.cancelledBeforeStart = true }
                return traced.span
            }
            span?.addEvent(SpanEvent(name: "cancelled", at: instant(event.time)))
        case .finished:
            guard let traced = spans.withLock({ $0.removeValue(forKey: identity) }) else { return }
            let span = traced.span
            switch event.operation.outcome {
            case .succeeded, nil:
                span.attributes["operation.outcome"] = "succeeded"
                span.setStatus(SpanStatus(code: .ok))
            case .cancelled(let reason):
                span.attributes["operation.outcome"] = "cancelled"
                span.setStatus(SpanStatus(code: .error, message: "cancelled" + (reason.map { ": \($0)" } ?? "")))
            case .failed(let error):
                span.attributes["operation.outcome"] = "failed"
                span.recordError(error, attributes: [:], at: instant(event.time))
                span.setStatus(SpanStatus(code: .error, message: "\(error)"))
            }
            span.end(at: instant(event.time))
        }
    }
}

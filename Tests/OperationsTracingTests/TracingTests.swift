import InMemoryTracing
import Operations
import OperationsTracing
import Testing
import Tracing

@Suite("Spans with swift-distributed-tracing")
struct TracingTests {
    @Test("a span per operation, child of the context where it was added, with started, links and status")
    func spans() throws {
        let tracer = InMemoryTracer()
        let queue = OperationQueue()
        queue.name = "traced"
        queue.isSuspended = true
        let tracing = OperationQueueTracing(queue, tracer: tracer)
        let parent = tracer.startSpan("request")
        let load = BlockOperation {}, filter = BlockOperation {}, skipped = BlockOperation {}
        load.name = "load"
        filter.name = "filter"
        skipped.name = "skipped"
        filter.addDependency(load)
        ServiceContext.withValue(parent.context) {
            queue.addOperations([load, filter], waitUntilFinished: false)
        }
        queue.addOperation(skipped)
        #expect(tracing.context(of: load) != nil)
        skipped.cancel(with: Reason.notNeeded)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        parent.end()
        tracing.cancel()

        let finished = tracer.finishedSpans
        let byName = Dictionary(uniqueKeysWithValues: finished.map { ($0.operationName, $0) })
        let loadSpan = try #require(byName["load"]), filterSpan = try #require(byName["filter"])
        let skippedSpan = try #require(byName["skipped"]), request = try #require(byName["request"])
        #expect(loadSpan.parentSpanID == request.spanID && filterSpan.parentSpanID == request.spanID)
        #expect(loadSpan.traceID == request.traceID)
        #expect(skippedSpan.parentSpanID == nil)
        #expect(loadSpan.events.map(\.name) == ["started"])
        #expect(filterSpan.links.count == 1)
        #expect(filterSpan.links.first.map { InMemorySpanContext.from($0.context)?.spanID } == loadSpan.spanID)
        #expect(loadSpan.status == SpanStatus(code: .ok))
        #expect(skippedSpan.status?.code == .error)
        #expect(skippedSpan.status?.message == "cancelled: notNeeded")
        // Cancelled before it started: the queue passed it through start(), but no work ran.
        #expect(skippedSpan.events.map(\.name) == ["cancelled"])
        #expect(loadSpan.attributes["operation.queue"]?.toSpanAttribute() == "traced".toSpanAttribute())
        // From added to finished: the span starts before the started event.
        #expect(loadSpan.startInstant.nanosecondsSinceEpoch <= loadSpan.events[0].nanosecondsSinceEpoch)
        #expect(loadSpan.events[0].nanosecondsSinceEpoch <= loadSpan.endInstant.nanosecondsSinceEpoch)
        #expect(tracer.activeSpans.isEmpty)
    }

    @Test("an async body runs with its span's context: spans it starts are children; a thrown error is the status")
    func asyncBodies() async throws {
        let tracer = InMemoryTracer()
        let queue = OperationQueue()
        queue.name = "traced"
        let tracing = OperationQueueTracing(queue, tracer: tracer)
        let fetch = AsyncBlockOperation { () async -> Int in
            let span = tracer.startSpan("inner", context: ServiceContext.current ?? .topLevel)
            await Task.yield()
            span.end()
            return 1
        }
        fetch.name = "fetch"
        let failing = AsyncBlockOperation<Int> { throw Reason.notNeeded }
        failing.name = "failing"
        queue.addOperations([fetch, failing], waitUntilFinished: false)
        await queue.waitUntilAllOperationsAreFinished()
        tracing.cancel()
        let byName = Dictionary(uniqueKeysWithValues: tracer.finishedSpans.map { ($0.operationName, $0) })
        let fetchSpan = try #require(byName["fetch"]), inner = try #require(byName["inner"])
        #expect(inner.parentSpanID == fetchSpan.spanID)
        #expect(inner.traceID == fetchSpan.traceID)
        let failingSpan = try #require(byName["failing"])
        #expect(failingSpan.status?.code == .error)
    }

    enum Reason: Error { case notNeeded }
}

extension InMemorySpanContext {
    /// The in-memory span context stored in a service context.
    static func from(_ context: ServiceContext) -> InMemorySpanContext? {
        context.inMemorySpanContext
    }
}

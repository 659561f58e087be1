// Spans of durable attempts, traced from a worker running on an in-memory SQLite store.
#if SQLite

import DurableTestKinds
import InMemoryTracing
import OperationsDurable
import OperationsSQLite
import OperationsTracing
import Testing
import Tracing

@Suite("Spans of durable attempts with swift-distributed-tracing", .timeLimit(.minutes(3)))
struct DurableTracingTests {
    @Test("a span per attempt, with its attributes, its status, and links to its dependencies' spans")
    func spanPerAttempt() async throws {
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "traced", store: store)
        let left = try await queue.add(Echo.self, input: 1)
        let right = try await queue.add(Echo.self, input: 2)
        let flaky = try await queue.add(
            Flaky.self, input: 2, dependencies: [left, right], retry: DurableRetry(.immediate, maximumAttempts: 2))
        let hold = try await queue.add(Hold.self, input: 99, retry: .never)
        let worker = DurableWorker(
            store: store, queues: ["traced"], kinds: allTestKinds, configuration: longLeaseConfiguration(name: "tracer"))
        let tracer = InMemoryTracer()
        let tracing = DurableTracing(worker, tracer: tracer)
        // Registered after the tracing's: an event seen here has been traced.
        try await withRunningWorkerRecordingEvents(worker) { recorder in
            // Waits for the attempt's span, as a body does at its start.
            #expect(await tracing.context(of: hold.id, attempt: 1) != nil)
            try await recorder.wait("the hold's start") { events in events.contains { $0.operation == hold.id && $0.kind == .started } }
            #expect(tracing.context(of: hold.id) != nil)
            try await hold.cancel(reason: "not needed")
            try await recorder.wait("every end") { events in
                [left.id, right.id, flaky.id, hold.id].allSatisfy { id in events.contains { $0.finishes(id) } }
            }
        }
        tracing.cancel()
        await store.shutdown()

        let finished = tracer.finishedSpans
        #expect(tracer.activeSpans.isEmpty)
        func spans(of id: DurableOperationID) -> [FinishedInMemorySpan] {
            finished.filter { $0.attributes["operation.id"]?.toSpanAttribute() == id.rawValue.toSpanAttribute() }
        }
        let leftSpan = try #require(spans(of: left.id).first), rightSpan = try #require(spans(of: right.id).first)
        #expect(spans(of: left.id).count == 1 && spans(of: right.id).count == 1)
        #expect(leftSpan.operationName == "echo")
        #expect(leftSpan.status == SpanStatus(code: .ok))
        #expect(leftSpan.attributes["operation.queue"]?.toSpanAttribute() == "traced".toSpanAttribute())
        #expect(leftSpan.attributes["operation.kind"]?.toSpanAttribute() == "echo".toSpanAttribute())
        #expect(leftSpan.attributes["operation.worker"]?.toSpanAttribute() == worker.id.toSpanAttribute())
        #expect(leftSpan.attributes["operation.outcome"]?.toSpanAttribute() == "succeeded".toSpanAttribute())

        let attempts = spans(of: flaky.id).sorted { $0.startInstant.nanosecondsSinceEpoch < $1.startInstant.nanosecondsSinceEpoch }
        #expect(attempts.count == 2)
        #expect(attempts.map { $0.attributes["operation.attempt"]?.toSpanAttribute() } == [1.toSpanAttribute(), 2.toSpanAttribute()])
        #expect(attempts.map { $0.attributes["operation.outcome"]?.toSpanAttribute() } == ["retried".toSpanAttribute(), "succeeded".toSpanAttribute()])
        #expect(attempts.first?.status == SpanStatus(code: .error, message: "flaky attempt 1 failed"))
        #expect(attempts.last?.status == SpanStatus(code: .ok))
        // Each attempt links to the spans of both dependencies.
        for attempt in attempts {
            let linked = Set(attempt.links.compactMap { $0.context.inMemorySpanContext?.spanID })
            #expect(linked == [leftSpan.spanID, rightSpan.spanID])
        }
        #expect(leftSpan.links.isEmpty)

        let holdSpan = try #require(spans(of: hold.id).first)
        #expect(holdSpan.events.map(\.name) == ["cancelled"])
        #expect(holdSpan.status == SpanStatus(code: .error, message: "cancelled: not needed"))
        #expect(holdSpan.startInstant.nanosecondsSinceEpoch <= holdSpan.endInstant.nanosecondsSinceEpoch)
    }

    @Test("a failed operation's last span records its error")
    func failure() async throws {
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "traced", store: store)
        let failing = try await queue.add(Flaky.self, input: 9, retry: .never)
        let worker = DurableWorker(
            store: store, queues: ["traced"], kinds: allTestKinds, configuration: longLeaseConfiguration(name: "tracer"))
        let tracer = InMemoryTracer()
        let tracing = DurableTracing(worker, tracer: tracer)
        try await withRunningWorkerRecordingEvents(worker) { recorder in
            try await recorder.wait("the failure") { events in events.contains { $0.finishes(failing.id) } }
        }
        tracing.cancel()
        await store.shutdown()
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.status == SpanStatus(code: .error, message: "flaky attempt 1 failed"))
        #expect(span.errors.count == 1)
        #expect(span.attributes["operation.outcome"]?.toSpanAttribute() == "failed".toSpanAttribute())
    }
}
#endif

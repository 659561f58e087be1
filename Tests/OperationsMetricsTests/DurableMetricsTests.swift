// Numbers of durable attempts, from a worker and a queue on an in-memory SQLite store.
#if SQLite

import DurableTestKinds
import MetricsTestKit
import OperationsDurable
import OperationsMetrics
import OperationsSQLite
import Testing

@Suite("Numbers of durable operations with swift-metrics", .timeLimit(.minutes(3)))
struct DurableMetricsTests {
    @Test("gauges, timers and counters by queue and kind, from a worker and a queue")
    func durableMetrics() async throws {
        let metrics = TestMetrics()
        let store = SQLiteOperationStore(path: ":memory:")
        try await store.migrate()
        let queue = DurableQueue(name: "measured", store: store)
        let worker = DurableWorker(
            store: store, queues: ["measured"], kinds: allTestKinds, concurrency: 1,
            configuration: longLeaseConfiguration(name: "metrics"))
        let reporter = DurableMetrics(worker, queue, factory: metrics)
        let echoes = [try await queue.add(Echo.self, input: 1), try await queue.add(Echo.self, input: 2)]
        let flaky = try await queue.add(Flaky.self, input: 2, retry: DurableRetry(.immediate, maximumAttempts: 2))
        let failing = try await queue.add(Flaky.self, input: 9, retry: .never)
        let hold = try await queue.add(Hold.self, input: 99, retry: .never)
        try await withRunningWorkerRecordingEvents(worker) { recorder in
            try await recorder.wait("the hold's start") { events in events.contains { $0.operation == hold.id && $0.kind == .started } }
            try await hold.cancel(reason: "not needed")
            try await recorder.wait("every end") { events in
                (echoes.map(\.id) + [flaky.id, failing.id, hold.id]).allSatisfy { id in events.contains { $0.finishes(id) } }
            }
        }
        reporter.cancel()
        await store.shutdown()

        let echo = [("queue", "measured"), ("kind", "echo")]
        let flakyKind = [("queue", "measured"), ("kind", "flaky")]
        let holdKind = [("queue", "measured"), ("kind", "hold")]
        #expect(try metrics.expectCounter("operations.durable.enqueued", echo).totalValue == 2)
        #expect(try metrics.expectCounter("operations.durable.enqueued", flakyKind).totalValue == 2)
        #expect(try metrics.expectCounter("operations.durable.finished", echo).totalValue == 2)
        #expect(try metrics.expectTimer("operations.durable.run_time", echo).values.count == 2)
        #expect(try metrics.expectGauge("operations.durable.executing", echo).values == [1, 0, 1, 0])
        // Flaky: one retried attempt, one success, one final failure.
        #expect(try metrics.expectCounter("operations.durable.retried", flakyKind).totalValue == 1)
        #expect(try metrics.expectCounter("operations.durable.finished", flakyKind).totalValue == 2)
        #expect(try metrics.expectCounter("operations.durable.failed", flakyKind).totalValue == 1)
        #expect(try metrics.expectTimer("operations.durable.run_time", flakyKind).values.count == 3)
        #expect(try metrics.expectCounter("operations.durable.cancelled", holdKind).totalValue == 1)
        #expect(try metrics.expectCounter("operations.durable.finished", holdKind).totalValue == 1)
        #expect(try metrics.expectGauge("operations.durable.executing", holdKind).lastValue == 0)
    }
}
#endif

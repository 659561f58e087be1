import MetricsTestKit
import Operations
import OperationsMetrics
import Testing

@Suite("Numbers with swift-metrics")
struct MetricsTests {
    @Test("gauges, timers and counters of one queue")
    func queueMetrics() throws {
        let metrics = TestMetrics()
        let queue = OperationQueue()
        queue.name = "measured"
        queue.maxConcurrentOperationCount = 1
        queue.isSuspended = true
        let reporter = OperationQueueMetrics(queue, factory: metrics)
        let operations = (0..<4).map { _ in BlockOperation {} }
        queue.addOperations(operations, waitUntilFinished: false)
        let dimensions = [("queue", "measured")]
        #expect(try metrics.expectGauge("operations.pending", dimensions).lastValue == 4)
        operations[3].cancel()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        reporter.cancel()

        #expect(try metrics.expectGauge("operations.pending", dimensions).lastValue == 0)
        #expect(try metrics.expectGauge("operations.executing", dimensions).lastValue == 0)
        let executing = try metrics.expectGauge("operations.executing", dimensions).values
        #expect(executing.max() == 1)
        #expect(try metrics.expectTimer("operations.wait_time", dimensions).values.count == 4)
        #expect(try metrics.expectTimer("operations.run_time", dimensions).values.count == 3)
        #expect(try metrics.expectCounter("operations.finished", dimensions).totalValue == 4)
        #expect(try metrics.expectCounter("operations.cancelled", dimensions).totalValue == 1)
        #expect(try metrics.expectCounter("operations.failed", dimensions).totalValue == 0)
    }

    @Test("released, it stops reporting")
    func stops() throws {
        let metrics = TestMetrics()
        let queue = OperationQueue()
        queue.name = "released"
        do {
            let reporter = OperationQueueMetrics(queue, labelPrefix: "q", factory: metrics)
            queue.addOperations([BlockOperation {}], waitUntilFinished: true)
            _ = reporter
        }
        queue.addOperations([BlockOperation {}], waitUntilFinished: true)
        #expect(try metrics.expectCounter("q.finished", [("queue", "released")]).totalValue == 1)
    }
}

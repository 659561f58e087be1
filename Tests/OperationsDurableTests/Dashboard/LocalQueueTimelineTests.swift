// The in-process timeline: one entry per operation enqueued, whatever addresses they had.
#if Dashboard

@testable import Operations
@testable import OperationsDashboard
import Testing

@Suite("Dashboard: the in-process timeline")
struct LocalQueueTimelineTests {
    @Test("an operation at the address of one that finished before it is a new entry, not the old one")
    func addressReused() {
        let queue = OperationQueue()
        // The same object stands for two operations that had the same address, one after
        // the other: the second is enqueued after the first finished.
        let operation = BlockOperation {}
        operation.name = "same address"
        var timeline = LocalQueues.Timeline(origin: 0, capacity: 10)
        func event(_ kind: OperationEvent.Kind, at time: UInt64) -> OperationEvent {
            OperationEvent(kind: kind, operation: operation, queue: queue, sequence: time, time: time, thread: 0, slot: 0)
        }
        timeline.apply(event(.enqueued, at: 1))
        timeline.apply(event(.started, at: 2))
        timeline.apply(event(.finished(wasCancelled: false), at: 3))
        timeline.apply(event(.enqueued, at: 4))
        timeline.apply(event(.started, at: 5))
        let entries = timeline.json
        #expect(entries.count == 2, "\(entries)")
        #expect(entries.first?.finished != nil)
        #expect(entries.last?.started != nil && entries.last?.finished == nil)
    }
}
#endif

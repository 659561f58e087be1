// The in-process timeline: one entry per operation enqueued, whatever addresses they had.
#if Dashboard && SQLite

@testable import Operations
@testable import OperationsDashboard
import Testing
import TestTraits

/// An operation whose `name` reads the timeline it is shown on (takes that timeline's lock).
final class NameReadingTimeline: Operation, @unchecked Sendable {
    // Unchecked: `local` is set once, before the operation is added to a queue; `reading`
    // guards against the getter's own reads (the queue's waitDescription names the
    // operation) on the one thread that reads it at a time in this test.
    nonisolated(unsafe) var local: LocalQueues?
    nonisolated(unsafe) var reading = false
    override var name: String? {
        get {
            if !reading {
                reading = true
                _ = local?.json
                reading = false
            }
            return "reads the timeline"
        }
        set {}
    }
    override func main() {}
}

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
        for (kind, time) in [(OperationEvent.Kind.enqueued, 1), (.started, 2), (.finished(wasCancelled: false), 3), (.enqueued, 4), (.started, 5)] {
            timeline.apply(event(kind, at: UInt64(time)), name: "same address")
        }
        let entries = timeline.json
        #expect(entries.count == 2, "\(entries)")
        #expect(entries.first?.finished != nil)
        #expect(entries.last?.started != nil && entries.last?.finished == nil)
    }

    /// Forced: the getter runs when the enqueue is recorded; were it read under the
    /// timeline's lock, it would lock that lock again ("Recursive call to lock Mutex").
    @Test("an operation's name is read outside the timeline's lock", .oneExitTestAtATime)
    func nameReadOutsideTheLock() async {
        await #expect(processExitsWith: .success) {
            let queue = OperationQueue()
            let local = LocalQueues(capacity: 10)
            local.watch(queue)
            let operation = NameReadingTimeline()
            operation.local = local
            queue.addOperation(operation)
            queue.waitUntilAllOperationsAreFinished()
            precondition(local.json.first?.timeline.first?.name == "reads the timeline")
            local.stopAll()
        }
    }
}
#endif

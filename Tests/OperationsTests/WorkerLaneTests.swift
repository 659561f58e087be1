import Operations
import Testing

/// Where a queue starts its operations: one whose `start()` hands its work elsewhere and
/// returns (it says `isAsynchronous`) on a thread of the pool that runs Swift's tasks; one
/// that may block on a thread Dispatch adds whenever one is wanted, so that blocking
/// operations overlap up to the queue's limit.
@Suite("Worker lanes")
struct WorkerLaneTests {
    #if os(Linux)
    /// The name Dispatch gave the current thread: on Linux, the end of its pool's label
    /// (the pool that adds threads whenever one is wanted ends in "overcommit").
    static var threadName: String {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// An operation that says `isAsynchronous` and finishes in its `start()`, recording the
    /// thread's name there.
    final class BriefStart: Operation, @unchecked Sendable {
        let names: Shared<[String]>
        private let state = Shared((executing: false, finished: false))

        init(names: Shared<[String]>) { self.names = names }

        override var isAsynchronous: Bool { true }
        override var isExecuting: Bool { state().executing }
        override var isFinished: Bool { state().finished }

        override func start() {
            names.append("brief \(WorkerLaneTests.threadName)")
            willChangeValue(forKey: "isFinished")
            state.update { $0.finished = true }
            didChangeValue(forKey: "isFinished")
        }
    }

    @Test(
        "an operation that says isAsynchronous starts on the shared pool; the next one, which may block, on a thread of the overcommit pool",
        arguments: [1, OperationQueue.defaultMaxConcurrentOperationCount])
    func blockingOperationMovesOffTheSharedPool(limit: Int) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = limit
        let names = Shared<[String]>([])
        let brief = BriefStart(names: names)
        let blocking = BlockOperation { names.append("blocking \(WorkerLaneTests.threadName)") }
        blocking.addDependency(brief)
        // Suspended, so that the workers start when both are in: the first ready one says
        // isAsynchronous, and the worker that starts it is on its shared lane.
        queue.isSuspended = true
        queue.addOperations([brief, blocking], waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        let seen = names()
        #expect(seen.count == 2)
        #expect(seen.first?.hasPrefix("brief ") == true)
        #expect(seen.first?.hasSuffix("overcommit") == false, "\(seen)")
        #expect(seen.last?.hasPrefix("blocking ") == true)
        #expect(seen.last?.hasSuffix("overcommit") == true, "\(seen)")
    }

    @Test("blocking operations that come after one that says isAsynchronous all run at once, up to the queue's limit")
    func blockingOperationsOverlapAfterABriefOne() {
        let queue = OperationQueue()
        let count = 6
        queue.maxConcurrentOperationCount = count
        let names = Shared<[String]>([])
        let brief = BriefStart(names: names)
        let everyone = Rendezvous(count: count)
        let met = Shared(0)
        let blocking = (0..<count).map { _ in
            BlockOperation {
                names.append("blocking \(WorkerLaneTests.threadName)")
                if everyone.arriveAndWait() { met.increment() }
            }
        }
        queue.isSuspended = true
        queue.addOperations([brief] + blocking, waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(met() == count, "all \(count) were running at once")
        #expect(names().filter { $0.hasPrefix("blocking ") }.allSatisfy { $0.hasSuffix("overcommit") }, "\(names())")
    }
    #endif
}

import Operations
import OperationsComposition
import Testing

@Suite("OperationQueue: adding, order, concurrency, suspension")
struct QueueTests {
    @Test("addOperation(_ block:) wraps the block in a BlockOperation with the queue's QoS")
    func addBlock() {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        queue.isSuspended = true
        queue.addOperation {}
        let operation = queue.operations.first
        #expect(operation is BlockOperation)
        #expect(operation?.qualityOfService == .utility)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("addOperations(_:waitUntilFinished: true) returns after all finished")
    func addOperationsWaits() {
        let count = Shared(0)
        let operations = (0..<20).map { _ in BlockOperation { usleep(500); count.increment() } }
        OperationQueue().addOperations(operations, waitUntilFinished: true)
        #expect(count() == 20)
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test("a serial queue runs operations one at a time in the order added")
    func serialFIFO() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let log = Shared<[Int]>([])
        let meter = ConcurrencyMeter()
        for index in 0..<200 {
            queue.addOperation {
                meter.enter()
                log.update { $0.append(index) }
                meter.leave()
            }
        }
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == Array(0..<200))
        #expect(meter.most == 1)
    }

    @Test("among ready operations the highest priority starts first; equal priorities FIFO")
    func priorityOrder() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let priorities: [(String, Operation.QueuePriority)] = [
            ("low1", .low), ("normal1", .normal), ("veryHigh", .veryHigh), ("high", .high),
            ("normal2", .normal), ("veryLow", .veryLow), ("low2", .low),
        ]
        for (name, priority) in priorities {
            let operation = BlockOperation { log.append(name) }
            operation.queuePriority = priority
            queue.addOperation(operation)
        }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["veryHigh", "high", "normal1", "normal2", "low1", "low2", "veryLow"])
    }

    @Test("priority never overrides dependencies")
    func priorityVersusDependencies() {
        let queue = suspendedSerialQueue()
        let log = Shared<[String]>([])
        let first = BlockOperation { log.append("first") }
        first.queuePriority = .veryLow
        let second = BlockOperation { log.append("second") }
        second.queuePriority = .veryHigh
        second.addDependency(first)
        queue.addOperations([second, first], waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["first", "second"])
    }

    @Test("the default limit lets blocking operations overlap beyond the processor count")
    func defaultConcurrencyOverlapsBlockingWork() {
        let count = max(7, ProcessInfo.processInfo.activeProcessorCount * 3)
        let rendezvous = Rendezvous(count: count)
        let met = Shared(0)
        let queue = OperationQueue()
        #expect(queue.maxConcurrentOperationCount == OperationQueue.defaultMaxConcurrentOperationCount)
        #expect(OperationQueue.defaultMaxConcurrentOperationCount == -1)
        for _ in 0..<count {
            queue.addOperation { if rendezvous.arriveAndWait() { met.increment() } }
        }
        queue.waitUntilAllOperationsAreFinished()
        #expect(met() == count, "all \(count) blocked operations ran at the same time")
    }

    @Test("an explicit limit is exact", arguments: [1, 2, 3])
    func exactLimit(limit: Int) {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = limit
        let meter = ConcurrencyMeter()
        let rendezvous = Rendezvous(count: limit)
        let release = BlockingSignal()
        let reachedLimit = BlockingSignal()
        let arrivals = Shared(0)
        for _ in 0..<(limit * 3) {
            queue.addOperation {
                meter.enter()
                if arrivals.increment() == limit { reachedLimit.open() }
                if arrivals() <= limit { rendezvous.arriveAndWait(); release.wait() }
                meter.leave()
            }
        }
        #expect(reachedLimit.wait())
        // Give a wrong scheduler the chance to start one more; it must not.
        usleep(50_000)
        #expect(meter.now == limit)
        release.open(limit)
        queue.waitUntilAllOperationsAreFinished()
        #expect(meter.most == limit)
    }

    @Test("changing the limit affects only operations not yet started")
    func changeLimit() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = BlockingSignal()
        let first = BlockOperation { release.wait() }
        queue.addOperation(first)
        let rendezvous = Rendezvous(count: 2)
        let met = Shared(0)
        for _ in 0..<2 {
            queue.addOperation { if rendezvous.arriveAndWait() { met.increment() } }
        }
        queue.maxConcurrentOperationCount = 3
        queue.waitUntilAllOperationsAreFinished(releasing: release)
        #expect(met() == 2, "the two waiting operations overlap once the limit is raised")
    }

    @Test("a limit of 0 runs nothing until raised")
    func zeroLimit() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 0
        let ran = BlockingSignal()
        queue.addOperation { ran.open() }
        #expect(!ran.wait(timeout: 0.1))
        queue.maxConcurrentOperationCount = 1
        #expect(ran.wait())
    }

    @Test("a suspended queue starts nothing; running operations continue")
    func suspension() {
        let queue = OperationQueue()
        #expect(!queue.isSuspended)
        let running = BlockingSignal(), release = BlockingSignal(), finished = BlockingSignal()
        queue.addOperation { running.open(); release.wait(); finished.open() }
        #expect(running.wait())
        queue.isSuspended = true
        let later = BlockingSignal()
        queue.addOperation { later.open() }
        release.open()
        #expect(finished.wait(), "the running operation continues while suspended")
        #expect(!later.wait(timeout: 0.1))
        #expect(queue.operationCount == 1)
        queue.isSuspended = false
        #expect(later.wait())
    }
}

extension OperationQueue {
    /// Opens `gate` (which releases a blocked operation), then waits for the queue.
    func waitUntilAllOperationsAreFinished(releasing gate: BlockingSignal) {
        gate.open()
        waitUntilAllOperationsAreFinished()
    }
}

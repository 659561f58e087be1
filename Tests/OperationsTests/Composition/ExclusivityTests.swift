import Operations
import OperationsComposition
import Testing

/// Records, per category, how many holders run at once and whether an exclusive one ever
/// ran beside another.
private final class CategoryMeter: Sendable {
    private let state = Shared<(running: [String: (exclusive: Int, shared: Int)], violations: Int)>(([:], 0))

    func enter(_ categories: [(String, ExclusivityMode)]) {
        state.update { state in
            for (category, mode) in categories {
                var now = state.running[category] ?? (0, 0)
                if mode == .exclusive { now.exclusive += 1 } else { now.shared += 1 }
                if now.exclusive > 1 || (now.exclusive == 1 && now.shared > 0) { state.violations += 1 }
                state.running[category] = now
            }
        }
    }

    func leave(_ categories: [(String, ExclusivityMode)]) {
        state.update { state in
            for (category, mode) in categories {
                if mode == .exclusive { state.running[category]!.exclusive -= 1 } else { state.running[category]!.shared -= 1 }
            }
        }
    }

    var violations: Int { state().violations }
}


@Suite("Mutual exclusivity", .timeLimit(.minutes(1)))
struct ExclusivityTests {
    @Test("an exclusive category runs one operation at a time, across queues")
    func exclusiveAcrossQueues() {
        let category = unique("alert")
        let gate = BlockingSignal()
        let first = BlockOperation { gate.wait() }
        first.addExclusivity(category)
        let second = BlockOperation {}
        second.addExclusivity(category)
        let one = OperationQueue(), two = OperationQueue()
        one.addOperation(first)
        #expect(eventually { first.isExecuting })
        two.addOperation(second)
        #expect(eventually { second.waitReasons == [.gate(.exclusivity([category]))] })
        #expect(!second.isExecuting && !second.isFinished)
        gate.open()
        second.waitUntilFinished()
        #expect(first.isFinished)
    }

    @Test("shared holders run together; an exclusive one waits for them, and later shared ones wait for it (FIFO)")
    func readersAndWriters() {
        let category = unique("database")
        let together = Rendezvous(count: 2)
        let release = BlockingSignal()
        let log = Shared<[String]>([])
        let readers = (0..<2).map { index in
            let reader = BlockOperation {
                together.arriveAndWait()
                release.wait()
                log.append("reader \(index)")
            }
            reader.addExclusivity(category, mode: .shared)
            return reader
        }
        let writer = BlockOperation { log.append("writer") }
        writer.addExclusivity(category)
        let lateReader = BlockOperation { log.append("late reader") }
        lateReader.addExclusivity(category, mode: .shared)
        let queue = OperationQueue()
        queue.addOperations(readers, waitUntilFinished: false)
        #expect(eventually { readers.allSatisfy(\.isExecuting) })
        queue.addOperation(writer)
        #expect(eventually { writer.waitReasons == [.gate(.exclusivity([category]))] })
        queue.addOperation(lateReader)
        #expect(eventually { lateReader.waitReasons == [.gate(.exclusivity([category]))] })
        release.open(2)
        queue.waitUntilAllOperationsAreFinished()
        #expect(Array(log().suffix(2)) == ["writer", "late reader"])
    }

    /// An operation without conditions asks for its categories on the thread that consults
    /// its gates, in the order they become due, not from a task on one of the composition
    /// layer's four lanes: lanes chosen round robin would let requests made in one order
    /// reach the manager in another (20 operations of one category on a default queue
    /// running scrambled — 0, 4, 8, …). Forced: every lane is kept busy by conditions that
    /// wait on a gate; an operation with only a category must still run.
    @Test("an operation with only categories asks for them at once, without waiting for the composition lanes")
    func categoriesWithoutLanes() {
        let category = unique("no-lanes")
        let lanesBusy = BlockingSignal(), release = BlockingSignal()
        let busy = Shared(0)
        let blockers = (0..<4).map { _ in
            let blocker = BlockOperation {}
            // `async`: evaluated on the lanes (a predicate without `await` runs inline).
            blocker.addCondition(BlockCondition { _ async in
                if busy.update({ $0 += 1; return $0 }) == 4 { lanesBusy.open() }
                // Longer than the check below: the lanes stay busy for all of it.
                _ = release.wait(timeout: 600)
                return true
            })
            return blocker
        }
        let queue = OperationQueue()
        queue.addOperations(blockers, waitUntilFinished: false)
        // When other tests' jobs share the lanes, two blockers may wait on one lane: then
        // fewer than four are busy and the check below is weaker, never wrong.
        _ = lanesBusy.wait(timeout: 2)
        let operation = BlockOperation {}
        operation.addExclusivity(category)
        queue.addOperation(operation)
        #expect(eventually { operation.isFinished }, "the operation waited for a lane: \(operation.waitDescription)")
        release.open(4)
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("categories are acquired all at once: overlapping sets never deadlock, exclusivity never violated")
    func manyCategories() {
        let names = (0..<4).map { unique("c\($0)") }
        let meter = CategoryMeter()
        let queues = (0..<4).map { _ in OperationQueue() }
        var seed = UInt64(42)
        func next() -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int(seed >> 33)
        }
        var operations: [Operation] = []
        for index in 0..<400 {
            let first = next() % 4, second = (first + 1 + next() % 3) % 4
            let categories: [(String, ExclusivityMode)] = [
                (names[first], next() % 3 == 0 ? .shared : .exclusive),
                (names[second], next() % 2 == 0 ? .shared : .exclusive),
            ]
            let operation = BlockOperation {
                meter.enter(categories)
                for _ in 0..<(index % 50) { _ = UUID() }
                meter.leave(categories)
            }
            for (category, mode) in categories { operation.addExclusivity(category, mode: mode) }
            if index % 7 == 3 { operation.addDependency(operations[index - 2]) }
            operations.append(operation)
        }
        for (index, operation) in operations.enumerated() { queues[index % 4].addOperation(operation) }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        #expect(operations.allSatisfy { $0.isFinished })
        #expect(meter.violations == 0)
    }

    @Test("an operation waiting for its dependency in the same category does not deadlock")
    func dependencyInSameCategory() {
        let category = unique("file")
        let later = BlockOperation {}
        later.addExclusivity(category)
        let earlier = BlockOperation {}
        earlier.addExclusivity(category)
        later.addDependency(earlier)
        let queue = OperationQueue()
        // The dependent is added first: it asks for the category only once the dependency ran.
        queue.addOperation(later)
        queue.addOperation(earlier)
        queue.waitUntilAllOperationsAreFinished()
        #expect(later.isFinished && earlier.isFinished)
    }

    @Test("a waiting operation that is cancelled leaves the line")
    func cancelWhileWaiting() {
        let category = unique("alert")
        let gate = BlockingSignal()
        let holder = BlockOperation { gate.wait() }
        holder.addExclusivity(category)
        let waiting = BlockOperation {}
        waiting.addExclusivity(category)
        let after = BlockOperation {}
        after.addExclusivity(category)
        let queue = OperationQueue()
        queue.addOperation(holder)
        #expect(eventually { holder.isExecuting })
        queue.addOperations([waiting, after], waitUntilFinished: false)
        #expect(eventually { waiting.waitReasons == [.gate(.exclusivity([category]))] })
        waiting.cancel()
        waiting.waitUntilFinished()
        #expect(!holder.isFinished)
        gate.open()
        after.waitUntilFinished()
        #expect(waiting.isCancelled)
    }

    @Test("a serial queue: a waiting operation holds no slot, the next one runs")
    func holdsNoSlot() {
        let category = unique("alert")
        let gate = BlockingSignal()
        let holder = BlockOperation { gate.wait() }
        holder.addExclusivity(category)
        OperationQueue().addOperation(holder)
        #expect(eventually { holder.isExecuting })
        let serial = OperationQueue()
        serial.maxConcurrentOperationCount = 1
        let waiting = BlockOperation {}
        waiting.addExclusivity(category)
        let unrelated = BlockOperation {}
        serial.addOperations([waiting, unrelated], waitUntilFinished: false)
        unrelated.waitUntilFinished()
        #expect(!waiting.isFinished)
        gate.open()
        waiting.waitUntilFinished()
    }

    /// An exclusive operation that records, with the meter, that it runs; it opens
    /// `started` once it runs and returns once `hold` opens (open when nil).
    private func metered(
        _ category: String, _ name: String, log: Shared<[String]>, meter: CategoryMeter,
        started: BlockingSignal? = nil, hold: BlockingSignal? = nil
    ) -> BlockOperation {
        let operation = BlockOperation {
            meter.enter([(category, .exclusive)])
            log.append(name)
            started?.open()
            if let hold { _ = hold.wait() }
            meter.leave([(category, .exclusive)])
        }
        operation.name = name
        operation.addExclusivity(category)
        return operation
    }

    @Test("an operation in line whose queue is suspended lets the next in line take the category, and runs once its queue resumes")
    func suspendedQueueInLine() {
        let category = unique("printer")
        let log = Shared<[String]>([])
        let meter = CategoryMeter()
        let holding = BlockingSignal(), release = BlockingSignal(), nextRan = BlockingSignal()
        let holder = metered(category, "holder", log: log, meter: meter, started: holding, hold: release)
        let suspended = metered(category, "suspended", log: log, meter: meter)
        let next = metered(category, "next", log: log, meter: meter)
        next.completionBlock = { nextRan.open() }
        let running = OperationQueue(), suspending = OperationQueue()
        running.addOperation(holder)
        #expect(holding.wait())
        // With nothing to wait for, it asks on this thread, in `addOperation`: it is in line.
        suspending.addOperation(suspended)
        #expect(suspended.waitReasons == [.gate(.exclusivity([category]))])
        suspending.isSuspended = true
        running.addOperation(next)
        #expect(next.waitReasons == [.gate(.exclusivity([category]))])
        release.open()
        #expect(nextRan.wait(), "the category went to the operation of the suspended queue: \(next.waitDescription)")
        #expect(!suspended.isExecuting && !suspended.isFinished, "it ran while its queue was suspended")
        suspending.isSuspended = false
        suspended.waitUntilFinished()
        #expect(log() == ["holder", "next", "suspended"])
        #expect(meter.violations == 0)
    }

    @Test("an operation passed over while its queue was suspended keeps its place in line: it goes before later arrivals once its queue resumes")
    func suspendedQueueKeepsPlace() {
        let category = unique("printer")
        let log = Shared<[String]>([])
        let meter = CategoryMeter()
        let holding = BlockingSignal(), release = BlockingSignal(), nextHolding = BlockingSignal(), nextRelease = BlockingSignal()
        let holder = metered(category, "holder", log: log, meter: meter, started: holding, hold: release)
        let suspended = metered(category, "suspended", log: log, meter: meter)
        let next = metered(category, "next", log: log, meter: meter, started: nextHolding, hold: nextRelease)
        let later = metered(category, "later", log: log, meter: meter)
        let running = OperationQueue(), suspending = OperationQueue()
        running.addOperation(holder)
        #expect(holding.wait())
        suspending.addOperation(suspended)
        suspending.isSuspended = true
        running.addOperation(next)
        release.open()
        #expect(nextHolding.wait(), "the category went to the operation of the suspended queue: \(next.waitDescription)")
        // Asks while the suspended queue's operation is passed over: behind it in line.
        running.addOperation(later)
        #expect(later.waitReasons == [.gate(.exclusivity([category]))])
        suspending.isSuspended = false
        #expect(suspended.waitReasons == [.gate(.exclusivity([category]))], "it must wait for the holder")
        nextRelease.open()
        later.waitUntilFinished()
        suspended.waitUntilFinished()
        #expect(log() == ["holder", "next", "suspended", "later"])
        #expect(meter.violations == 0)
    }
}

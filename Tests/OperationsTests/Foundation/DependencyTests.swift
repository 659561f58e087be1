import Operations
import OperationsComposition
import Testing

@Suite("Dependencies and readiness")
struct DependencyTests {
    @Test("an operation is ready only when every dependency has finished")
    func readyAfterDependencies() {
        let a = Operation(), b = Operation(), c = Operation()
        c.addDependency(a)
        c.addDependency(b)
        #expect(!c.isReady)
        a.start()
        #expect(!c.isReady)
        b.start()
        #expect(c.isReady)
    }

    @Test("a cancelled dependency counts as finished")
    func cancelledDependency() {
        let a = Operation(), b = Operation()
        b.addDependency(a)
        let queue = OperationQueue()
        a.cancel()
        queue.addOperations([b, a], waitUntilFinished: true)
        #expect(a.isFinished && b.isFinished)
    }

    @Test("a dependency that finished before addDependency does not hold the operation")
    func finishedBeforeAdd() {
        let a = Operation()
        a.start()
        let b = Operation()
        b.addDependency(a)
        #expect(b.isReady)
        #expect(b.dependencies == [a])
    }

    @Test("dependencies are listed in the order added, once each")
    func order() {
        let a = Operation(), b = Operation(), c = Operation(), d = Operation()
        d.addDependency(b)
        d.addDependency(a)
        d.addDependency(c)
        d.addDependency(a)
        #expect(d.dependencies == [b, a, c])
        d.removeDependency(a)
        #expect(d.dependencies == [b, c])
    }

    @Test("a long dependency list still ignores duplicates and removes in order")
    func longDependencyList() {
        let sink = Operation()
        let sources = (0..<40).map { _ in Operation() }
        for source in sources + sources.reversed() { sink.addDependency(source) }
        #expect(sink.dependencies.count == 40)
        #expect(zip(sink.dependencies, sources).allSatisfy { $0 === $1 })
        sink.removeDependency(sources[3])
        sink.addDependency(sources[3])
        #expect(sink.dependencies.last === sources[3])
        #expect(sink.dependencies.count == 40)
        for source in sources { source.start() }
        #expect(sink.isReady)
    }

    @Test("removing an unfinished dependency makes the operation ready at once")
    func removeUnfinished() {
        let blocker = Operation(), operation = Operation()
        operation.addDependency(blocker)
        let queue = OperationQueue()
        queue.addOperation(operation)
        #expect(!operation.isReady)
        operation.removeDependency(blocker)
        #expect(operation.isReady)
        operation.waitUntilFinished()
        #expect(operation.isFinished)
        #expect(!blocker.isFinished)
    }

    @Test("removing one of two unfinished dependencies keeps the operation waiting")
    func removeOneOfTwo() {
        let first = Operation(), second = Operation(), operation = Operation()
        operation.addDependency(first)
        operation.addDependency(second)
        operation.removeDependency(first)
        #expect(!operation.isReady)
        second.start()
        #expect(operation.isReady)
    }

    @Test("dependencies order operations absolutely, across queues")
    func acrossQueues() {
        let log = Shared<[String]>([])
        let q1 = OperationQueue(), q2 = OperationQueue()
        let load = ClosureOperation { _ in log.append("load") }
        let filter = ClosureOperation { _ in log.append("filter") }
        let output = ClosureOperation { _ in log.append("output") }
        filter.addDependency(load)
        output.addDependency(filter)
        output.queuePriority = .veryHigh
        load.queuePriority = .veryLow
        q2.addOperation(output)
        q1.addOperation(filter)
        q2.addOperation(load)
        output.waitUntilFinished()
        #expect(log() == ["load", "filter", "output"])
    }

    @Test("a dependency that is never started holds its dependent forever")
    func neverStarted() {
        let blocker = Operation(), operation = Operation()
        operation.addDependency(blocker)
        let queue = OperationQueue()
        queue.addOperation(operation)
        let finished = BlockingSignal()
        operation.completionBlock = { finished.open() }
        #expect(!finished.wait(timeout: 0.2))
        #expect(queue.operationCount == 1)
        blocker.start()
        #expect(finished.wait())
    }

    @Test("a cancelled pending operation ignores its unfinished dependencies")
    func cancelledIgnoresDependencies() {
        let blocker = Operation()
        let ran = Shared(false)
        let operation = ClosureOperation { _ in ran.update { $0 = true } }
        operation.addDependency(blocker)
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.cancel()
        #expect(operation.isReady)
        operation.waitUntilFinished()
        #expect(operation.isFinished)
        #expect(!ran())
        #expect(!blocker.isFinished)
    }

    @Test("an overridden isReady holds the operation until it announces a change")
    func overriddenIsReady() {
        final class Conditional: Operation, @unchecked Sendable {
            let allowed = Shared(false)
            let ran = Shared(false)
            override var isReady: Bool { super.isReady && allowed() }
            func allow() {
                willChangeValue(forKey: "isReady")
                allowed.update { $0 = true }
                didChangeValue(forKey: "isReady")
            }
            override func main() { ran.update { $0 = true } }
        }
        let operation = Conditional()
        let queue = OperationQueue()
        queue.addOperation(operation)
        let done = BlockingSignal()
        operation.completionBlock = { done.open() }
        #expect(!done.wait(timeout: 0.1))
        #expect(!operation.ran())
        operation.allow()
        #expect(done.wait())
        #expect(operation.ran())
    }

    @Test("an operation whose isReady closes again after it was announced ready does not start")
    func readinessClosesAgain() {
        final class Gated: Operation, @unchecked Sendable {
            let open = Shared(false)
            let ran = Shared(false)
            override var isReady: Bool { super.isReady && open() }
            func set(_ value: Bool) {
                willChangeValue(forKey: "isReady")
                open.update { $0 = value }
                didChangeValue(forKey: "isReady")
            }
            override func main() { ran.update { $0 = true } }
        }
        let operation = Gated()
        let queue = suspendedQueue(holding: operation)
        operation.set(true)  // announced ready: into the ready list
        operation.set(false)  // closed again before the queue got to it
        let finished = BlockingSignal()
        operation.completionBlock = { finished.open() }
        queue.isSuspended = false
        #expect(!finished.wait(timeout: 0.2))
        #expect(!operation.ran())
        #expect(operation.waitReasons == [.isReadyReturnsFalse])
        operation.set(true)
        #expect(finished.wait())
        #expect(operation.ran())
    }

    @Test("the \"ready\" spelling announces readiness too")
    func readySpelling() {
        final class Conditional: Operation, @unchecked Sendable {
            let allowed = Shared(false)
            override var isReady: Bool { super.isReady && allowed() }
        }
        let operation = Conditional()
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.allowed.update { $0 = true }
        operation.didChangeValue(forKey: "ready")
        operation.waitUntilFinished()
        #expect(operation.isFinished)
    }

    /// `removeDependency` on the same thread, inside `addDependency`. Forced: `target` has a
    /// `.prior` observer of `isReady`; `addDependency` announces `willChange("isReady")`
    /// while it adds the edge, and the observer's first prior callback calls
    /// `removeDependency` for that same dependency. The hazard: the edge counted, the
    /// removal finding no registered edge (nothing decremented), and the edge registered
    /// afterwards, so that `target` lists no dependency but is not ready, and never runs.
    ///
    /// Whichever order the two take effect in (the removal before or after the addition),
    /// the state must agree with `dependencies`: listed → not ready and runs once the
    /// dependency finishes; not listed → ready and runs at once.
    @Test("removeDependency inside addDependency's isReady announcement leaves no phantom count")
    func addRemoveRaceSameThread() {
        checkAddRemoveRace(removeOnAnotherThread: false)
    }

    /// `removeDependency` on another thread: as the test above, but the prior callback runs
    /// `removeDependency` on another thread and waits for it to return.
    @Test("removeDependency on another thread during addDependency leaves no phantom count")
    func addRemoveRaceTwoThreads() {
        checkAddRemoveRace(removeOnAnotherThread: true)
    }

    private func checkAddRemoveRace(removeOnAnotherThread: Bool) {
        let ran = BlockingSignal()
        let target = BlockOperation { ran.open() }
        target.name = "target"
        let dependency = BlockOperation {}
        dependency.name = "dependency"
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard change.isPrior, takeOnce(armed) else { return }
            if removeOnAnotherThread {
                let removed = BlockingSignal()
                onNewThread {
                    target.removeDependency(dependency)
                    removed.open()
                }
                removed.wait()
            } else {
                target.removeDependency(dependency)
            }
        }
        target.addObserver(observer, forKeyPath: "isReady", options: [.prior], context: nil)
        target.addDependency(dependency)
        #expect(!armed(), "the hook did not fire: addDependency announced no isReady change")
        let listed = target.dependencies.contains { $0 === dependency }
        #expect(target.isReady == !listed, "isReady is \(target.isReady) while dependencies lists \(target.dependencies.map { $0.name ?? "?" })")
        #expect(!target.waitDescription.contains("overridden isReady"), "\(target.waitDescription)")
        let queue = OperationQueue()
        queue.addOperation(target)
        if listed { queue.addOperation(dependency) }
        if target.isReady || listed {
            #expect(ran.wait(), "target never ran: \(target.waitDescription)")
        } else {
            Issue.record("target is stuck: \(target.waitDescription)")
            target.cancel()
        }
        target.removeObserver(observer, forKeyPath: "isReady")
    }
}

/// Duplicate edges are ignored whichever of the two lists (the dependent's dependencies, the
/// dependency's dependents) is the long one, and after either operation finished.
@Suite("Dependencies: duplicates in long lists")
struct LongDependencyListTests {
    @Test("a complete bipartite graph of 20 by 20 ignores every edge added a second time")
    func bothListsLong() {
        let sources = (0..<20).map { _ in Operation() }, sinks = (0..<20).map { _ in Operation() }
        for _ in 0..<2 { for sink in sinks { for source in sources { sink.addDependency(source) } } }
        #expect(sinks.allSatisfy { $0.dependencies.count == 20 })
        #expect(sinks.allSatisfy { zip($0.dependencies, sources).allSatisfy { $0 === $1 } })
        for source in sources { source.start() }
        #expect(sinks.allSatisfy { $0.isReady })
    }

    @Test("a fan-in ignores a duplicate of a dependency that finished, and of one listed by a barrier too")
    func finishedAndBarrierDependencies() {
        let sink = Operation()
        let sources = (0..<30).map { _ in Operation() }
        for source in sources { sink.addDependency(source) }
        for source in sources[..<10] { source.start() }
        for source in sources { sink.addDependency(source) }
        #expect(sink.dependencies.count == 30)
        #expect(!sink.isReady)
        for source in sources[10...] { source.start() }
        #expect(sink.isReady)
    }

    @Test("a finished operation with a long list ignores duplicates added after its finish")
    func finishedDependent() {
        let sink = Operation()
        let sources = (0..<30).map { _ in Operation() }
        for source in sources { sink.addDependency(source) }
        sink.cancel()
        sink.start()
        #expect(sink.isFinished)
        for source in sources { sink.addDependency(source) }
        #expect(sink.dependencies.count == 30)
    }

    @Test("an operation waiting for a barrier that is also a visible dependency lists it once")
    func barrierAndVisibleEdge() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let earlier = (0..<20).map { _ in BlockOperation {} }
        queue.addOperations(earlier, waitUntilFinished: false)
        queue.addBarrierBlock {}
        let sink = BlockOperation {}
        // Twenty visible dependencies, the barrier (hidden), and the barrier made visible.
        for operation in earlier { sink.addDependency(operation) }
        queue.addOperation(sink)
        let barrier = queue.operations.first { member in !earlier.contains { $0 === member } && member !== sink }
        #expect(barrier != nil)
        if let barrier {
            sink.addDependency(barrier)
            sink.addDependency(barrier)
            #expect(sink.dependencies.count == 21)
        }
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(sink.isFinished)
    }
}

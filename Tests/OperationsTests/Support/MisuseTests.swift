import Operations
import OperationsComposition
import Testing
import TestTraits

/// Every misuse stops the process with a message naming the operation and the rule.
/// Exit tests run each body in a child process.
@Suite("Misuse")
struct MisuseTests {
    @Test("adding an operation twice to one queue", .oneExitTestAtATime)
    func addTwice() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("twice")
            let queue = suspendedQueue(holding: operation)
            queue.addOperation(operation)
        }.map { $0.standardErrorContent.containsText("\"twice\"", "already in queue") }.check()
    }

    @Test("adding an operation to two queues", .oneExitTestAtATime)
    func addToTwoQueues() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("shared")
            let first = OperationQueue(), second = OperationQueue()
            first.isSuspended = true
            first.addOperation(operation)
            second.addOperation(operation)
        }.map { $0.standardErrorContent.containsText("\"shared\"", "another queue") }.check()
    }

    @Test("adding a finished operation", .oneExitTestAtATime)
    func addFinished() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("done")
            operation.start()
            OperationQueue().addOperation(operation)
        }.map { $0.standardErrorContent.containsText("\"done\"", "has finished") }.check()
    }

    @Test("adding an executing operation", .oneExitTestAtATime)
    func addExecuting() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ClosureOperation(name: "busy") { op in OperationQueue().addOperation(op) }
            operation.start()
        }.map { $0.standardErrorContent.containsText("\"busy\"", "is executing") }.check()
    }

    @Test("addOperations with one invalid operation adds none", .oneExitTestAtATime)
    func addOperationsAllOrNothing() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let finished = Operation().named("finished-one")
            finished.start()
            let queue = OperationQueue()
            queue.isSuspended = true
            // Checked in the child before it stops: nothing was added.
            let fresh = Operation()
            queue.addOperations([fresh, finished], waitUntilFinished: false)
        }.map { $0.standardErrorContent.containsText("\"finished-one\"") }.check()
    }

    @Test("a batch listing one operation twice", .oneExitTestAtATime)
    func duplicateInBatch() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("dup")
            OperationQueue().addOperations([operation, operation], waitUntilFinished: false)
        }.map { $0.standardErrorContent.containsText("\"dup\"", "only once") }.check()
    }

    @Test("addExecutionBlock after start", .oneExitTestAtATime)
    func blockAfterStart() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = BlockOperation {}.named("started")
            operation.start()
            operation.addExecutionBlock {}
        }.map { $0.standardErrorContent.containsText("\"started\"", "already started") }.check()
    }

    @Test("start() while executing", .oneExitTestAtATime)
    func startWhileExecuting() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = ClosureOperation(name: "reentrant") { op in op.start() }
            operation.start()
        }.map { $0.standardErrorContent.containsText("\"reentrant\"", "already executing") }.check()
    }

    @Test("start() by hand on an operation that is not ready", .oneExitTestAtATime)
    func startNotReady() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("waiting")
            operation.addDependency(Operation())
            operation.start()
        }.map { $0.standardErrorContent.containsText("\"waiting\"", "not ready") }.check()
    }

    @Test("a negative concurrency limit other than -1", .oneExitTestAtATime)
    func negativeLimit() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "limited"
            queue.maxConcurrentOperationCount = -2
        }.map { $0.standardErrorContent.containsText("\"limited\"", "-2", "at least 0, or -1") }.check()
    }

    @Test("setting underlyingQueue on a non-empty queue", .oneExitTestAtATime)
    func underlyingOnNonEmpty() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "busy-queue"
            queue.isSuspended = true
            queue.addOperation {}
            queue.underlyingQueue = DispatchQueue(label: "late")
        }.map { $0.standardErrorContent.containsText("\"busy-queue\"", "only while the queue is empty") }.check()
    }

    @Test("setting underlyingQueue to the main dispatch queue", .oneExitTestAtATime)
    func underlyingMain() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            OperationQueue().underlyingQueue = DispatchQueue.main
        }.map { $0.standardErrorContent.containsText("main dispatch queue") }.check()
    }

    @Test("an operation depending on itself (always, whatever trapsOnDependencyCycles says)", .oneExitTestAtATime)
    func selfDependency() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let operation = Operation().named("narcissus")
            operation.addDependency(operation)
        }.map { $0.standardErrorContent.containsText("\"narcissus\"", "cannot depend on itself") }.check()
    }

    @Test("removing an observer that is not registered", .oneExitTestAtATime)
    func removeUnknownObserver() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Operation().removeObserver(StateObserver(), forKeyPath: "isFinished")
        }.map { $0.standardErrorContent.containsText("not registered as an observer") }.check()
    }

    /// An asynchronous operation that executes is refused by a queue, as on Darwin: the
    /// queue must not admit it and call its `start()` a second time. Forced: no race;
    /// `start()` is called by hand on an asynchronous operation (overridden `isExecuting`,
    /// base phase untouched) that never finishes, then it is added to a queue. Should it
    /// be admitted, the child reports whether `start()` ran twice and exits normally.
    @Test("an asynchronous operation started by hand cannot be added to a queue", .oneExitTestAtATime)
    func startedByHandAsyncIsRefused() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let starts = Shared(0)
            let operation = DocumentedAsyncOperation { _ in starts.increment() }
            operation.name = "by-hand"
            operation.start()
            guard operation.isExecuting else { fatalError("setup: not executing") }
            let queue = OperationQueue()
            queue.addOperation(operation)
            // Not refused: report whether start() ran twice, then exit normally.
            let twice = eventually(timeout: 5) { starts() == 2 }
            FileHandle.standardError.write(Data("admitted; start() ran \(twice ? "twice" : "once")\n".utf8))
        }.map { $0.standardErrorContent.containsText("\"by-hand\"", "is executing") }.check()
    }
}

import Operations
import OperationsComposition
import Testing
import TestTraits

/// The tutorial's asynchronous operation (`isReady` = `super.isReady && state ==
/// .ready`) that, the first time a worker of `queue` reads `isReady`, is finished from
/// another thread; the getter waits for that finish before it answers (false).
private final class FinishedWhileClaimedOperation: TutorialAsyncOperation, @unchecked Sendable {
    let queue: OperationQueue
    private let armed = Shared(true)

    init(queue: OperationQueue) {
        self.queue = queue
    }

    override var isReady: Bool {
        if OperationQueue.current === queue, armed.update({ armed in defer { armed = false }; return armed }) {
            let finished = BlockingSignal()
            onNewThread {
                self.finish()
                finished.open()
            }
            if !finished.wait() { fatalError("the finish from another thread did not return") }
        }
        return super.isReady
    }

    /// If the engine never reads `isReady` on the worker, the operation still finishes.
    override func main() { finish() }
}

/// An operation shaped as the frameworks built on Operation shape theirs (the "Advanced
/// NSOperations" sample and PSOperations): its own `state`, announced only through the
/// `"state"` key on which `isExecuting`/`isFinished` depend; `start()` calls `super.start()`,
/// and `main()` hands the work to `execute`, which may start something asynchronous and
/// return. The operation is finished when its own state says so.
final class SuperStartingOperation: OwnStateOperation<SuperStartingOperation.State>, @unchecked Sendable {
    enum State: Int { case initialized, executing, finished }

    private let execute: @Sendable (SuperStartingOperation) -> Void
    /// Called inside `start()` after `super.start()` returned, before a cancelled
    /// operation finishes itself.
    var afterSuperStart: (@Sendable (SuperStartingOperation) -> Void)?

    init(execute: @escaping @Sendable (SuperStartingOperation) -> Void) {
        self.execute = execute
        super.init(state: .initialized)
    }

    override class var keysDependingOnState: Set<String> { ["isExecuting", "isFinished"] }

    override var isExecuting: Bool { state == .executing }
    override var isFinished: Bool { state == .finished }

    override func start() {
        super.start()
        afterSuperStart?(self)
        if isCancelled { finishOwnState() }
    }

    override func main() {
        state = .executing
        execute(self)
    }

    func finishOwnState() {
        guard state != .finished else { return }
        state = .finished
    }
}

@Suite("Finishing: whoever overrides isFinished decides")
struct FinishingRuleTests {
    @Test("super.start() with asynchronous work in main(): the queue keeps the operation until its own isFinished reads true")
    func superStartWithAsynchronousWorkIsKeptUntilItFinishes() {
        let queue = OperationQueue()
        let startReturned = BlockingSignal()
        let release = BlockingSignal()
        let operation = SuperStartingOperation { operation in
            // Asynchronous work, finished later on another thread.
            Thread.detachNewThread {
                release.wait()
                operation.finishOwnState()
            }
        }
        operation.afterSuperStart = { _ in startReturned.open() }
        let dependentRan = Shared(false)
        let dependent = BlockOperation { dependentRan.update { $0 = true } }
        dependent.addDependency(operation)
        let completionRan = Shared(false)
        operation.completionBlock = { completionRan.update { $0 = true } }
        queue.addOperations([operation, dependent], waitUntilFinished: false)
        #expect(startReturned.wait())

        #expect(!operation.isFinished)
        #expect(operation.isExecuting)
        #expect(queue.operationCount == 2)
        #expect(!dependentRan())
        #expect(!completionRan())

        release.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
        #expect(dependentRan())
        #expect(completionRan())
        #expect(queue.operationCount == 0)
    }

    @Test("An operation whose only strong reference is its queue stays alive until its own isFinished reads true")
    func queueKeepsAnOperationThatFinishesLater() {
        let queue = OperationQueue()
        let startReturned = BlockingSignal()
        let release = BlockingSignal()
        let finishedByWork = Shared(false)
        weak var weakOperation: SuperStartingOperation?
        do {
            let operation = SuperStartingOperation { operation in
                // As a timer that holds its operation weakly.
                Thread.detachNewThread { [weak operation] in
                    release.wait()
                    guard let operation else { return }
                    finishedByWork.update { $0 = true }
                    operation.finishOwnState()
                }
            }
            operation.afterSuperStart = { _ in startReturned.open() }
            weakOperation = operation
            queue.addOperation(operation)
        }
        #expect(startReturned.wait())
        #expect(weakOperation != nil)
        #expect(queue.operationCount == 1)
        release.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(finishedByWork())
    }

    /// Forced: a finish hook (a waiter) holds the finishing worker until the count was read.
    @Test("An operation that someone waits for has left its queue when the waits wake")
    func waitsWakeWithTheOperationOutOfItsQueue() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        let inHook = BlockingSignal(), read = BlockingSignal()
        operation._onFinish(for: .caller) { _ in
            inHook.open()
            _ = read.wait(timeout: 600)
        }
        queue.addOperation(operation)
        #expect(inHook.wait())
        let count = queue.operationCount
        read.open()
        #expect(count == 0, "the waits woke while the operation was still counted by its queue")
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("Finishing inside main(), before start() returns, finishes the operation once")
    func finishingInsideMainFinishesOnce() {
        let queue = OperationQueue()
        let operation = SuperStartingOperation { $0.finishOwnState() }
        let completions = Shared(0)
        operation.completionBlock = { completions.increment() }
        let dependentRuns = Shared(0)
        let dependent = BlockOperation { dependentRuns.increment() }
        dependent.addDependency(operation)
        queue.addOperations([operation, dependent], waitUntilFinished: true)
        #expect(operation.isFinished)
        #expect(completions() == 1)
        #expect(dependentRuns() == 1)
        #expect(queue.operationCount == 0)
    }

    @Test("Started by hand: super.start() returns with the operation still unfinished, and waits end when it finishes")
    func startedByHandFinishesWhenItSays() {
        let release = BlockingSignal()
        let operation = SuperStartingOperation { operation in
            Thread.detachNewThread {
                release.wait()
                operation.finishOwnState()
            }
        }
        operation.start()
        #expect(!operation.isFinished)
        #expect(operation.isExecuting)
        release.open()
        operation.waitUntilFinished()
        #expect(operation.isFinished)
    }

    @Test("A cancelled operation that finishes itself after super.start() is finished then, not by super.start()")
    func cancelledOperationFinishesItselfAfterSuperStart() {
        let queue = OperationQueue()
        let completionRan = Shared(false)
        let dependentRan = Shared(false)
        let seenAfterSuperStart = Shared<(count: Int, completion: Bool, dependent: Bool)?>(nil)
        let operation = SuperStartingOperation { _ in Issue.record("main() ran for a cancelled operation") }
        operation.completionBlock = { completionRan.update { $0 = true } }
        let dependent = BlockOperation { dependentRan.update { $0 = true } }
        dependent.addDependency(operation)
        operation.afterSuperStart = { _ in
            seenAfterSuperStart.update { $0 = (queue.operationCount, completionRan(), dependentRan()) }
        }
        operation.cancel()
        queue.addOperations([operation, dependent], waitUntilFinished: true)
        let seen = seenAfterSuperStart()
        #expect(seen?.count == 2)
        #expect(seen?.completion == false)
        #expect(seen?.dependent == false)
        #expect(operation.isFinished)
        #expect(completionRan())
        #expect(dependentRan())
    }

    @Test("Finishing from a key-value observer of its own isReady")
    func finishingFromAnObserverOfItsOwnIsReady() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let operation = SuperStartingOperation { _ in Issue.record("main() ran for an operation that finished before it started") }
        let dependency = BlockOperation {}
        operation.addDependency(dependency)
        let completions = Shared(0)
        operation.completionBlock = { completions.increment() }
        // When its dependency is done, it decides it has nothing to do and finishes itself.
        let observation = operation.observe(\.isReady, options: [.new]) { operation, change in
            if change.newValue == true { operation.finishOwnState() }
        }
        queue.addOperations([dependency, operation], waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
        #expect(completions() == 1)
        observation.invalidate()
    }

    @Test("isAsynchronous is advice: a subclass that returns true but overrides neither start() nor isFinished finishes when main() returns", arguments: [true, false])
    func asynchronousAdviceFinishesWhenMainReturns(byQueue: Bool) {
        final class Advised: Operation, @unchecked Sendable {
            let ran = Shared(false)
            override var isAsynchronous: Bool { true }
            override func main() { ran.update { $0 = true } }
        }
        let operation = Advised()
        if byQueue {
            let queue = OperationQueue()
            queue.addOperation(operation)
            let done = BlockingSignal()
            let follower = BlockOperation { done.open() }
            follower.addDependency(operation)
            queue.addOperation(follower)
            #expect(done.wait())
        } else {
            operation.start()
        }
        #expect(operation.ran())
        #expect(operation.isFinished)
        #expect(!operation.isExecuting)
    }

    /// A worker that confirms an operation's readiness and finds it finished meanwhile
    /// must give it up and go on: it must not keep trying to un-claim an operation that is
    /// no longer dispatched, so the serial queue runs the next operation. Forced: the queue
    /// is suspended when the operation is added (so the admission reads `isReady` on the
    /// test thread and puts it in the ready list); after resuming, the worker claims it and
    /// reads `isReady`, and the override finishes the operation from another thread and
    /// waits for that finish before answering false. The child detects a hang with a
    /// bounded wait and exits with a failure.
    @Test("an operation finished while a worker confirms its readiness does not stall the worker", .oneExitTestAtATime)
    func finishedWhileClaimedDoesNotSpin() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.name = "serial"
            queue.maxConcurrentOperationCount = 1
            queue.isSuspended = true
            let operation = FinishedWhileClaimedOperation(queue: queue)
            let next = BlockingSignal()
            queue.addOperation(operation)
            queue.addOperation { next.open() }
            queue.isSuspended = false
            guard next.wait() else { fatalError("HANG: the serial queue never ran the operation after the finished one (worker spinning)") }
            guard operation.isFinished else { fatalError("the operation is not finished") }
            queue.waitUntilAllOperationsAreFinished()
        }.expectQuietChild()
    }
}

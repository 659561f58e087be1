import Operations
import OperationsComposition
import Testing

@Suite("Operation state: ready, executing, finished, cancelled, start() and the completion block")
struct OperationStateTests {
    @Test("a new operation is ready, not executing, not finished, not cancelled")
    func initialState() {
        let operation = Operation()
        #expect(operation.isReady)
        #expect(!operation.isExecuting)
        #expect(!operation.isFinished)
        #expect(!operation.isCancelled)
        #expect(!operation.isAsynchronous)
        #expect(!operation.isConcurrent)
        #expect(operation.queuePriority == .normal)
        #expect(operation.qualityOfService == .default)
        #expect(operation.threadPriority == 0.5)
        #expect(operation.name == nil)
        #expect(operation.dependencies.isEmpty)
    }

    @Test("start() runs main() synchronously on the calling thread and finishes")
    func startRunsMain() {
        let seen = Shared<(executing: Bool, thread: Thread?)>((false, nil))
        let operation = ClosureOperation { op in seen.update { $0 = (op.isExecuting, Thread.current) } }
        operation.start()
        #expect(seen().executing)
        #expect(seen().thread === Thread.current)
        #expect(operation.isFinished)
        #expect(!operation.isExecuting)
    }

    @Test("state moves forward only: pending → executing → finished")
    func forwardOnly() {
        let phases = Shared<[String]>([])
        let operation = ClosureOperation { op in
            phases.append("main executing=\(op.isExecuting) finished=\(op.isFinished)")
        }
        phases.append("before executing=\(operation.isExecuting) finished=\(operation.isFinished)")
        operation.start()
        phases.append("after executing=\(operation.isExecuting) finished=\(operation.isFinished)")
        operation.cancel()
        #expect(!operation.isCancelled, "cancelling a finished operation does nothing")
        #expect(phases() == [
            "before executing=false finished=false",
            "main executing=true finished=false",
            "after executing=false finished=true",
        ])
    }

    @Test("a cancelled operation's start() finishes it without calling main()")
    func cancelledStartSkipsMain() {
        let ran = Shared(false)
        let operation = ClosureOperation { _ in ran.update { $0 = true } }
        operation.cancel()
        #expect(operation.isCancelled)
        operation.start()
        #expect(!ran())
        #expect(operation.isFinished)
    }

    @Test("start() on a finished operation does nothing")
    func startTwice() {
        let runs = Shared(0)
        let operation = ClosureOperation { _ in runs.increment() }
        operation.start()
        operation.start()
        #expect(runs() == 1)
    }

    @Test("cancel() only sets the flag; running code stops only if it checks")
    func cancelWhileRunning() {
        let started = BlockingSignal(), cancelled = BlockingSignal()
        let sawCancel = Shared(false)
        let operation = ClosureOperation { op in
            started.open()
            cancelled.wait()
            sawCancel.update { $0 = op.isCancelled }
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        #expect(started.wait())
        operation.cancel()
        #expect(operation.isCancelled)
        #expect(operation.isExecuting)
        cancelled.open()
        operation.waitUntilFinished()
        #expect(sawCancel())
        #expect(operation.isFinished)
    }

    @Test("cancelling an operation cancels neither its dependencies nor its dependents")
    func cancelDoesNotSpread() {
        let a = Operation(), b = Operation(), c = Operation()
        b.addDependency(a)
        c.addDependency(b)
        b.cancel()
        #expect(!a.isCancelled)
        #expect(!c.isCancelled)
    }

    @Test("the completion block runs once after finishing, also when cancelled, then is released")
    func completionBlock() {
        for cancelFirst in [false, true] {
            let runs = Shared(0)
            let finishedWhenRun = Shared(false)
            let operation = Operation()
            operation.completionBlock = { [unowned operation] in
                runs.increment()
                finishedWhenRun.update { $0 = operation.isFinished }
            }
            if cancelFirst { operation.cancel() }
            let queue = OperationQueue()
            queue.addOperation(operation)
            queue.waitUntilAllOperationsAreFinished()
            #expect(runs() == 1)
            #expect(finishedWhenRun())
            #expect(operation.completionBlock == nil)
        }
    }

    @Test("the completion block never runs inside the start() that finished the operation", arguments: StartMarking.Kind.allCases)
    func completionBlockOutsideStart(kind: StartMarking.Kind) {
        let marking = StartMarking()
        let ranInside = Shared<Bool?>(nil)
        let ran = BlockingSignal()
        let operation = marking.operation(kind)
        operation.completionBlock = {
            ranInside.update { $0 = marking.isInsideStart }
            ran.open()
        }
        if kind == .onQueue {
            OperationQueue().addOperation(operation)
        } else {
            operation.start()
        }
        #expect(ran.wait(), "the completion block did not run")
        #expect(ranInside() == false, "the completion block ran inside start()")
    }

    @Test("waitUntilFinished() blocks until the operation finished")
    func waitUntilFinished() {
        let release = BlockingSignal()
        let operation = ClosureOperation { _ in release.wait() }
        OperationQueue().addOperation(operation)
        let waiterDone = BlockingSignal()
        onNewThread {
            operation.waitUntilFinished()
            waiterDone.open()
        }
        #expect(!operation.isFinished)
        release.open()
        #expect(waiterDone.wait())
        #expect(operation.isFinished)
    }

    @Test("properties keep what is set", arguments: [
        Operation.QueuePriority.veryLow, .low, .normal, .high, .veryHigh,
    ])
    func properties(priority: Operation.QueuePriority) {
        let operation = Operation()
        operation.queuePriority = priority
        operation.qualityOfService = .utility
        operation.threadPriority = 0.25
        operation.name = "named"
        #expect(operation.queuePriority == priority)
        #expect(operation.qualityOfService == .utility)
        #expect(operation.threadPriority == 0.25)
        #expect(operation.name == "named")
        #expect(Operation.QueuePriority.veryLow.rawValue == -8)
        #expect(Operation.QueuePriority.veryHigh.rawValue == 8)
    }

    @Test("isConcurrent and isAsynchronous follow each other")
    func concurrentAlias() {
        final class Concurrent: Operation, @unchecked Sendable { override var isConcurrent: Bool { true } }
        #expect(Concurrent().isAsynchronous)
    }

    /// Two cancels: only one may pass the "not cancelled yet" check, so `isCancelled` is
    /// announced once and one `.cancelled` event is emitted, not two of each. Forced: a
    /// `.prior` observer of `isCancelled`; the first `cancel()` announces
    /// `willChange("isCancelled")`, and in that callback a second `cancel()` runs on
    /// another thread while the callback waits for it (bounded: the second cancel may wait
    /// for the first, or return at once).
    @Test("two concurrent cancels announce the cancellation once")
    func concurrentCancelsAnnounceOnce() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let (recorder, subscription) = EventTests.Recorder.recording(queue)
        let operation = BlockOperation {}
        queue.addOperation(operation)
        let armed = Shared(true)
        let secondReturned = BlockingSignal()
        let secondWaited = Shared(false)
        let notifications = Shared(0)
        let observer = CallbackObserver { _, change in
            guard change.isPrior else {
                notifications.increment()
                return
            }
            guard takeOnce(armed) else { return }
            onNewThread {
                operation.cancel()
                secondReturned.open()
            }
            let returned = secondReturned.wait(timeout: 5)
            secondWaited.update { $0 = returned }
        }
        operation.addObserver(observer, forKeyPath: "isCancelled", options: [.prior], context: nil)
        operation.cancel()
        if !secondWaited() { #expect(secondReturned.wait(), "the second cancel never returned") }
        #expect(!armed(), "the hook did not fire")
        #expect(operation.isCancelled)
        #expect(notifications() == 1, "isCancelled announced \(notifications()) times")
        #expect(recorder.kinds(of: operation).filter { $0 == .cancelled }.count == 1, "\(recorder.kinds(of: operation))")
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        operation.removeObserver(observer, forKeyPath: "isCancelled")
        subscription.cancel()
    }

    /// A cancel racing the finish must not leave a finished operation cancelled: the flag
    /// the completion block saw is the flag for good, whichever of the two takes effect
    /// first (a completion block that saw false must not be followed by reads of true).
    /// Forced: a `.prior` observer of `isCancelled`; in the first prior callback (after
    /// `cancel()` decided to cancel, before it set the flag) the operation is started by
    /// hand and finishes, running its completion block, which records `isCancelled`.
    @Test("a cancel racing the finish never cancels a finished operation")
    func cancelRacingFinish() {
        let operation = BlockOperation {}
        let sawCancelled = Shared<Bool?>(nil)
        operation.completionBlock = { sawCancelled.update { $0 = operation.isCancelled } }
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard change.isPrior, takeOnce(armed) else { return }
            operation.start()
        }
        operation.addObserver(observer, forKeyPath: "isCancelled", options: [.prior], context: nil)
        operation.cancel()
        #expect(!armed(), "the hook did not fire")
        #expect(operation.isFinished)
        // The completion block runs after the start() that finished the operation returned.
        operation.waitUntilFinished()
        #expect(sawCancelled() != nil, "the completion block did not run")
        #expect(operation.isCancelled == sawCancelled(), "the completion block saw isCancelled \(String(describing: sawCancelled())); now it is \(operation.isCancelled)")
        operation.removeObserver(observer, forKeyPath: "isCancelled")
    }
}

/// Marks the thread running `start()` of its operations while that `start()` runs: a
/// completion block reads whether it runs inside it.
final class StartMarking: Sendable {
    enum Kind: CaseIterable, Sendable {
        /// `main()` returns; started by hand.
        case byHand
        /// Cancelled first, started by hand: `start()` finishes it without `main()`.
        case cancelled
        /// An asynchronous subclass that finishes inside its own `start()`.
        case asynchronous
        /// Started by a queue's worker.
        case onQueue
    }

    private let insideStart = Shared<[pthread_t]>([])

    var isInsideStart: Bool {
        let me = pthread_self()
        return insideStart().contains { pthread_equal($0, me) != 0 }
    }

    func around(_ start: () -> Void) {
        let me = pthread_self()
        insideStart.update { $0.append(me) }
        start()
        insideStart.update { threads in threads.removeAll { pthread_equal($0, me) != 0 } }
    }

    func operation(_ kind: Kind) -> Operation {
        switch kind {
        case .byHand, .onQueue:
            return Marked(marking: self)
        case .cancelled:
            let operation = Marked(marking: self)
            operation.cancel()
            return operation
        case .asynchronous:
            return MarkedAsynchronous(marking: self)
        }
    }

    private final class Marked: Operation, @unchecked Sendable {
        let marking: StartMarking
        init(marking: StartMarking) { self.marking = marking }
        override func start() { marking.around { super.start() } }
    }

    private final class MarkedAsynchronous: TutorialAsyncOperation, @unchecked Sendable {
        let marking: StartMarking
        init(marking: StartMarking) { self.marking = marking }
        override func start() { marking.around { super.start() } }
        override func main() { finish() }
    }
}

import Operations
import OperationsComposition
import Testing

/// An observer of `isFinished` that takes a snapshot, inside its callback, of what the
/// code it stands for would read there (PSOperations' observers, a group waiting for its
/// last child).
final class FinishWitness: NSObject, @unchecked Sendable {
    struct Snapshot: Equatable {
        var operationCount: Int
        var listed: Bool
        var dependentReady: Bool
    }

    // `@unchecked Sendable`: `snapshot` is a `Shared` (locked); the rest is constant.
    let snapshot = Shared<Snapshot?>(nil)
    let queue: OperationQueue
    let dependent: Operation

    init(queue: OperationQueue, dependent: Operation) {
        self.queue = queue
        self.dependent = dependent
    }

    override func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {
        // For isFinished, the value the announcement carries, not the getter read again here:
        // a subclass that sets its own state on another thread before announcing it makes the
        // getter read true before any announcement of the finish (on Darwin as here), and an
        // earlier announcement of the base state (which read false) may be told in that
        // moment. An observer of the state itself is told of that state's announcement.
        guard let operation = object as? Operation, (change?[.newKey] as? Bool) ?? operation.isFinished else { return }
        let taken = Snapshot(
            operationCount: queue.operationCount,
            listed: queue.operations.contains { $0 === operation },
            dependentReady: dependent.isReady)
        snapshot.update { if $0 == nil { $0 = taken } }
    }
}

/// An operation whose `isFinished` depends on its own `"state"`, announced in two steps a
/// test can hold apart: the change (`willChangeValue`, then the state set) and its
/// announcement (`didChangeValue`), both on the calling thread.
final class StepwiseStateOperation: Operation, @unchecked Sendable {
    // `@unchecked Sendable`: `finished` is under `lock`; the closures are set before the
    // operation is added to a queue and never changed after.
    private let lock = NSLock()
    private var finished = false
    private let onMain: @Sendable (StepwiseStateOperation) -> Void
    var afterSuperStart: (@Sendable () -> Void)?

    init(onMain: @escaping @Sendable (StepwiseStateOperation) -> Void) {
        self.onMain = onMain
    }

    override class func keyPathsForValuesAffectingValue(forKey key: String) -> Set<String> {
        key == "isFinished" ? ["state"] : super.keyPathsForValuesAffectingValue(forKey: key)
    }

    override var isFinished: Bool { lock.withLock { finished } }

    override func start() {
        super.start()
        afterSuperStart?()
    }

    override func main() { onMain(self) }

    func changeStateToFinished() {
        willChangeValue(forKey: "state")
        lock.withLock { finished = true }
    }

    func announceState() { didChangeValue(forKey: "state") }

    /// Sets its state to finished on a thread of its own before `main()` returns, and
    /// announces the change on that thread once `go` opens; opens `announced` when the
    /// announcement has returned.
    static func finishingOnAnotherThread(announcingAfter go: BlockingSignal, then announced: BlockingSignal) -> StepwiseStateOperation {
        let stateSet = BlockingSignal()
        return StepwiseStateOperation { operation in
            Thread.detachNewThread {
                operation.changeStateToFinished()
                stateSet.open()
                go.wait()
                operation.announceState()
                announced.open()
            }
            stateSet.wait()
        }
    }
}

@Suite("Finish announcement: isFinished observers see the queue done with the operation")
struct FinishAnnouncementTests {
    static let done = FinishWitness.Snapshot(operationCount: 0, listed: false, dependentReady: true)

    /// Adds `operation` to a queue with a dependent that is in no queue (so it stays ready,
    /// unstarted), observes `isFinished`, runs it, and returns what the observer saw.
    func witness(_ operation: Operation, keyPath: String = "isFinished") -> FinishWitness.Snapshot? {
        let queue = OperationQueue()
        let dependent = Operation()
        dependent.addDependency(operation)
        let witness = FinishWitness(queue: queue, dependent: dependent)
        operation.addObserver(witness, forKeyPath: keyPath, options: [.new], context: nil)
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        // Waits return only after the observers were told.
        let seen = witness.snapshot()
        #expect(seen != nil, "the wait returned before the observer of \(keyPath) was told")
        operation.removeObserver(witness, forKeyPath: keyPath)
        return seen
    }

    @Test("BlockOperation: the observer reads operationCount 0 and its dependent ready")
    func blockOperation() {
        #expect(witness(BlockOperation {}) == Self.done)
        #expect(witness(BlockOperation {}, keyPath: "finished") == Self.done)
    }

    @Test("BlockOperation with a completion block: the block has run when the observer is told")
    func blockOperationWithCompletionBlock() {
        let operation = BlockOperation {}
        let completed = Shared(false)
        operation.completionBlock = { completed.update { $0 = true } }
        let queue = OperationQueue()
        let sawCompletion = Shared<Bool?>(nil)
        let token = operation.observe(\.isFinished, options: [.new]) { _, change in
            guard change.newValue == true else { return }
            sawCompletion.update { $0 = completed() && queue.operationCount == 0 }
        }
        queue.addOperation(operation)
        operation.waitUntilFinished()
        #expect(sawCompletion() == true)
        token.invalidate()
    }

    @Test("a wait that begins while the observers of isFinished are told returns after them")
    func waitBegunDuringTheAnnouncement() {
        // Forced: the observer itself begins a wait (a finish hook, as `await` does) while it
        // is being told; nothing waited before, so the operation must not count as finished
        // for waits until every observer was told.
        let operation = BlockOperation {}
        let events = Shared<[String]>([])
        let token = operation.observe(\.isFinished, options: [.new]) { operation, change in
            guard change.newValue == true else { return }
            events.update { $0.append("told") }
            operation._onFinish(for: .caller) { _ in events.update { $0.append("wait returned") } }
            events.update { $0.append("observer returned") }
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        operation.waitUntilFinished()
        #expect(events() == ["told", "observer returned", "wait returned"])
        token.invalidate()
    }

    @Test("An asynchronous subclass that overrides isFinished and announces it")
    func overriddenIsFinished() {
        let operation = DocumentedAsyncOperation { finish in
            onNewThread { finish() }
        }
        #expect(witness(operation) == Self.done)
    }

    @Test("An asynchronous subclass that finishes inside start()")
    func overriddenIsFinishedInsideStart() {
        let operation = DocumentedAsyncOperation { finish in finish() }
        #expect(witness(operation) == Self.done)
    }

    @Test("observe(\\.isFinished) on a final subclass's override (followed through every state key)")
    func keyPathToOverrideInFinalSubclass() {
        // `DocumentedAsyncOperation` is final and announces isExecuting before isFinished:
        // the change must still be reported once the finish was processed.
        let operation = DocumentedAsyncOperation { finish in
            onNewThread { finish() }
        }
        let queue = OperationQueue()
        let seen = Shared<[Int]>([])
        let token = operation.observe(\.isFinished, options: [.new]) { _, change in
            guard change.newValue == true else { return }
            seen.update { $0.append(queue.operationCount) }
        }
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen() == [0])
        token.invalidate()
    }

    @Test("A subclass whose state is announced only through the dependent key \"state\"")
    func announcedThroughDependentKey() {
        let operation = SuperStartingOperation { operation in
            Thread.detachNewThread { operation.finishOwnState() }
        }
        #expect(witness(operation) == Self.done)
    }

    @Test("An observer of the dependent key itself sees the same")
    func observerOfDependentKey() {
        let operation = SuperStartingOperation { operation in
            Thread.detachNewThread { operation.finishOwnState() }
        }
        #expect(witness(operation, keyPath: "state") == Self.done)
    }

    @Test("a subclass announcing its finish while its queue processes that finish: its observers are told after the queue is done with it")
    func subclassAnnouncesWhileTheQueueProcessesTheFinish() {
        // Forced: the subclass sets its state (so that its getter reads finished) before
        // `main()` returns, and the base finish takes the finish; the subclass announces the
        // change while the completion block, inside the processing, waits for that
        // announcement to return.
        let (seen, announcementReturned) = witnessAnnouncedWhileTheQueueProcesses(keyPath: "isFinished")
        #expect(seen == Self.done)
        #expect(announcementReturned == true, "the subclass's announcement waited for the processing it is part of")
    }

    @Test("an observer of the dependent key, told while the queue processes the finish, is told after the queue is done with it")
    func observerOfDependentKeyWhileTheQueueProcessesTheFinish() {
        #expect(witnessAnnouncedWhileTheQueueProcesses(keyPath: "state").seen == Self.done)
    }

    /// The subclass announces its finish on another thread while the completion block, inside
    /// the processing its queue's worker took, waits for that announcement to return. Returns
    /// what the observer of `keyPath` saw, and whether the announcement returned.
    func witnessAnnouncedWhileTheQueueProcesses(keyPath: String) -> (seen: FinishWitness.Snapshot?, announcementReturned: Bool?) {
        let processing = BlockingSignal(), announced = BlockingSignal()
        let announcementReturned = Shared<Bool?>(nil)
        let operation = StepwiseStateOperation.finishingOnAnotherThread(announcingAfter: processing, then: announced)
        operation.completionBlock = {
            processing.open()
            announcementReturned.update { $0 = announced.wait() }
        }
        let seen = witness(operation, keyPath: keyPath)
        return (seen, announcementReturned())
    }

    @Test("the base finish announced while the subclass's own announcement processes the finish: observers are told after the queue is done with it")
    func baseFinishAnnouncedWhileTheSubclassProcessesTheFinish() {
        // Forced: the subclass announces its finish from another thread, which takes the
        // finish; `main()` returns only once the completion block (inside that processing)
        // runs, and the completion block waits until `start()` has returned.
        let processing = BlockingSignal(), startReturned = BlockingSignal()
        let startReturnedFirst = Shared<Bool?>(nil)
        let operation = StepwiseStateOperation { operation in
            Thread.detachNewThread {
                operation.changeStateToFinished()
                operation.announceState()
            }
            processing.wait()
        }
        operation.afterSuperStart = { startReturned.open() }
        operation.completionBlock = {
            processing.open()
            startReturnedFirst.update { $0 = startReturned.wait() }
        }
        #expect(witness(operation) == Self.done)
        #expect(startReturnedFirst() == true, "the base finish's announcement waited for the processing it is part of")
    }

    /// An operation whose body finishes it and announces its state, with an observer of
    /// `"state"` that counts the notifications in `told` (to be removed by the test).
    private func finishingOperationCountingStateNotifications() -> (StepwiseStateOperation, Shared<Int>, CallbackObserver) {
        let operation = StepwiseStateOperation { operation in
            operation.changeStateToFinished()
            operation.announceState()
        }
        let told = Shared(0)
        let observer = CallbackObserver { _, _ in told.update { $0 += 1 } }
        operation.addObserver(observer, forKeyPath: "state", options: [.new], context: nil)
        return (operation, told, observer)
    }

    /// Announces `operation`'s state again; returns `told` before the announcement and after
    /// its `didChangeValue` returned.
    private static func announceStateAgain(_ operation: StepwiseStateOperation, told: Shared<Int>) -> [Int] {
        let before = told()
        operation.willChangeValue(forKey: "state")
        operation.didChangeValue(forKey: "state")
        return [before, told()]
    }

    @Test("a completion block announcing its operation's state again tells the observers before its didChangeValue returns")
    func completionBlockAnnouncesItsOwnState() {
        let (operation, told, observer) = finishingOperationCountingStateNotifications()
        let toldAroundDidChange = Shared<[Int]>([])
        operation.completionBlock = { [unowned operation] in
            let counts = Self.announceStateAgain(operation, told: told)
            toldAroundDidChange.update { $0 = counts }
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(toldAroundDidChange() == [0, 1])
        operation.removeObserver(observer, forKeyPath: "state")
    }

    @Test("a subclass announcing its finish while the observers of isFinished are told: a wait returns after its observers were told too")
    func subclassAnnouncesWhileTheFinishIsAnnounced() {
        // Forced: the base finish takes the finish; its isFinished observer, told on the
        // worker, lets the subclass announce "state" on another thread and waits until that
        // announcement returned or reached its observer there; an observer of "state" told
        // on that other thread holds until the wait returned.
        let stateSet = BlockingSignal(), go = BlockingSignal(), announcedOrTold = BlockingSignal(), waitReturned = BlockingSignal()
        let announcingThread = Shared<ObjectIdentifier?>(nil)
        let operation = StepwiseStateOperation { operation in
            Thread.detachNewThread {
                announcingThread.update { $0 = ObjectIdentifier(Thread.current) }
                operation.changeStateToFinished()
                stateSet.open()
                go.wait()
                operation.announceState()
                announcedOrTold.open()
            }
            stateSet.wait()
        }
        let told = Shared(false)
        let stateObserver = CallbackObserver { _, _ in
            if ObjectIdentifier(Thread.current) == announcingThread() {
                announcedOrTold.open()
                waitReturned.wait()
            }
            told.update { $0 = true }
        }
        let first = Shared(true)
        let finishedObserver = CallbackObserver { _, _ in
            guard first.update({ first in defer { first = false }; return first }) else { return }
            go.open()
            announcedOrTold.wait()
        }
        operation.addObserver(finishedObserver, forKeyPath: "isFinished", options: [.new], context: nil)
        operation.addObserver(stateObserver, forKeyPath: "state", options: [.new], context: nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.waitUntilFinished()
        let toldWhenWaitReturned = told()
        waitReturned.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(toldWhenWaitReturned, "the wait returned before the observer of \"state\" was told")
        operation.removeObserver(finishedObserver, forKeyPath: "isFinished")
        operation.removeObserver(stateObserver, forKeyPath: "state")
    }

    @Test("a subclass announcing its finish while the finish's waiters are woken: the next waiter finds its observers told")
    func subclassAnnouncesWhileWaitersAreWoken() {
        // Forced: the first hook woken lets the subclass announce on another thread and
        // waits until that announcement returned; the second hook reads what was told.
        let go = BlockingSignal(), announced = BlockingSignal()
        let operation = StepwiseStateOperation.finishingOnAnotherThread(announcingAfter: go, then: announced)
        let told = Shared(false)
        let stateObserver = CallbackObserver { _, _ in told.update { $0 = true } }
        operation.addObserver(stateObserver, forKeyPath: "state", options: [.new], context: nil)
        operation._onFinish(for: .caller) { _ in
            go.open()
            announced.wait()
        }
        let toldWhenSecondWoken = Shared<Bool?>(nil)
        operation._onFinish(for: .caller) { _ in toldWhenSecondWoken.update { $0 = told() } }
        let queue = OperationQueue()
        queue.addOperation(operation)
        operation.waitUntilFinished()
        queue.waitUntilAllOperationsAreFinished()
        #expect(toldWhenSecondWoken() == true)
        operation.removeObserver(stateObserver, forKeyPath: "state")
    }

    @Test("an observer of a dependent's readiness announcing the finishing operation's state tells its observers before its didChangeValue returns")
    func dependentsObserverAnnouncesTheState() {
        let (operation, told, observer) = finishingOperationCountingStateNotifications()
        let dependent = BlockOperation {}
        dependent.addDependency(operation)
        let toldAround = Shared<[Int]>([])
        let readyObserver = CallbackObserver { [unowned operation] _, _ in
            guard toldAround().isEmpty else { return }
            let counts = Self.announceStateAgain(operation, told: told)
            toldAround.update { $0 = counts }
        }
        dependent.addObserver(readyObserver, forKeyPath: "isReady", options: [.new], context: nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(toldAround() == [0, 1])
        dependent.removeObserver(readyObserver, forKeyPath: "isReady")
        operation.removeObserver(observer, forKeyPath: "state")
    }

    @Test("An operation in no queue: its dependent is ready when the observer is told")
    func inNoQueue() {
        let operation = BlockOperation {}
        let dependent = Operation()
        dependent.addDependency(operation)
        let witness = FinishWitness(queue: OperationQueue(), dependent: dependent)
        operation.addObserver(witness, forKeyPath: "isFinished", options: [.new], context: nil)
        operation.start()
        #expect(witness.snapshot() == Self.done)
        operation.removeObserver(witness, forKeyPath: "isFinished")
    }

    @Test("isReady observers keep their order: told before the queue hears the readiness")
    func readinessOrderUnchanged() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let dependency = BlockOperation {}
        let operation = BlockOperation {}
        operation.addDependency(dependency)
        let startedWhenTold = Shared<Bool?>(nil)
        let token = operation.observe(\.isReady, options: [.new]) { operation, change in
            guard change.newValue == true else { return }
            startedWhenTold.update { $0 = operation.isExecuting || operation.isFinished }
        }
        queue.addOperations([dependency, operation], waitUntilFinished: false)
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        #expect(startedWhenTold() == false)
        token.invalidate()
    }

    @Test("an observer of isFinished that registers while a BlockOperation finishes unwatched is told it finished")
    func observerRegisteredDuringQuietFinishIsTold() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        let seen = Shared<[Bool]>([])
        let countWhenTold = Shared<Int?>(nil)
        // Forced: the observer registers after the worker found nobody watching the
        // operation, before it finishes it; its initial value reads false.
        let endObserving = Self.observeAtQuietFinish(of: operation, in: queue, options: [.initial, .new]) { change in
            seen.update { $0.append(change.newValue ?? false) }
            if change.newValue == true { countWhenTold.update { $0 = queue.operationCount } }
        }
        defer { endObserving() }
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen().first == false, "the observer registered before the finish: \(seen())")
        #expect(seen().last == true, "the observer was never told the operation finished: \(seen())")
        #expect(countWhenTold() == 0, "told while the queue still counted the operation")
    }

    /// The queue counts an operation whose quiet finish found a late observer until that
    /// observer was told, as after a full finish: a wait that begins meanwhile returns after
    /// it. Forced: the late observer registers at the quiet-finish pause point; its `.prior`
    /// notification (the announcement has begun, the operation has left the queue's list)
    /// starts a wait on another thread and holds the announcement until that wait has
    /// either returned or is waiting.
    @Test("a queue wait that begins while a late observer of a quiet finish is told returns after it was told")
    func waitBegunWhileLateObserverIsTold() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        let told = Shared(false)
        let returnedBeforeTold = Shared<Bool?>(nil)
        let endObserving = Self.observeAtQuietFinish(of: operation, in: queue, options: [.new, .prior]) { change in
            if change.isPrior {
                let waiter = Thread {
                    queue.waitUntilAllOperationsAreFinished()
                    returnedBeforeTold.update { $0 = !told() }
                }
                waiter.start()
                _ = eventually { returnedBeforeTold() != nil || queue._emptinessWaitCount > 0 }
            } else if change.newValue == true {
                told.update { $0 = true }
            }
        }
        defer { endObserving() }
        queue.addOperation(operation)
        #expect(eventually { returnedBeforeTold() != nil }, "the wait begun during the announcement never returned")
        #expect(returnedBeforeTold() == false, "the wait returned before the late observer was told")
    }

    /// An observer of `operation`'s `isFinished` that registers when its worker, in
    /// `queue`, has found nobody watching it and is about to finish it quietly. The closure returned
    /// removes the pause action and invalidates the observation.
    static func observeAtQuietFinish(
        of operation: Operation, in queue: OperationQueue, options: NSKeyValueObservingOptions,
        _ handler: @escaping @Sendable (NSKeyValueObservedChange<Bool>) -> Void
    ) -> () -> Void {
        let token = Shared<NSKeyValueObservation?>(nil)
        let id = WorkerPausePoints.quietFinishChosen.add { pausedQueue, finishing in
            guard pausedQueue === queue, finishing === operation else { return }
            token.update { $0 = operation.observe(\.isFinished, options: options) { _, change in handler(change) } }
        }
        return {
            WorkerPausePoints.quietFinishChosen.remove(id)
            token.update { $0?.invalidate() }
        }
    }
}

import Operations
import OperationsComposition
import Testing
import TestTraits

// Workers, locks and dependencies where user code runs in the middle of the engine's work.
// Each interleaving is forced through user code the engine calls (getters, KVO callbacks,
// deinits, a suspended queue), never by timing. Bounded waits only detect a hang.
// Anything that traps or hangs a thread runs as an exit test (in a child process).

/// The tutorial's asynchronous operation (`isReady` = `super.isReady && state ==
/// .ready`) that, the first time a worker of `queue` reads `isReady`, is finished from
/// another thread; the getter waits for that finish before it answers (false).
final class FinishedWhileClaimedOperation: TutorialAsyncOperation, @unchecked Sendable {
    let queue: OperationQueue
    private let armed = Shared(true)

    init(queue: OperationQueue) {
        self.queue = queue
    }

    override var isReady: Bool {
        if OperationQueue.current === queue, armed.update({ armed in defer { armed = false }; return armed }) {
            let finished = Gate()
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

/// A tutorial asynchronous operation whose `deinit` runs `body` (user code
/// that touches a queue or another operation) and then opens `died`.
final class DeinitProbeOperation: TutorialAsyncOperation, @unchecked Sendable {
    let died: Gate
    let body: @Sendable () -> Void

    init(died: Gate, _ body: @escaping @Sendable () -> Void) {
        self.died = died
        self.body = body
    }

    override func main() { finish() }

    deinit {
        body()
        died.open()
    }
}

/// A weak reference that can be filled in later and read from any thread.
final class WeakOperationBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var _operation: Operation?
    var operation: Operation? {
        get { lock.withLock { _operation } }
        set { lock.withLock { _operation = newValue } }
    }
}


extension Optional where Wrapped == ExitTest.Result {
    /// Records an issue, showing the child's standard error, unless it printed nothing.
    func expectQuietChild(sourceLocation: SourceLocation = #_sourceLocation) {
        guard let result = self else { return }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(text.isEmpty, "child's standard error: \(text)", sourceLocation: sourceLocation)
    }
}

/// Takes a one-shot flag: true the first time only.
func takeOnce(_ flag: Shared<Bool>) -> Bool {
    flag.update { flag in
        defer { flag = false }
        return flag
    }
}

@Suite("Workers, locks and dependencies in their corners")
struct WorkerAndDependencyCornerTests {
    // MARK: An operation finished while a worker confirms its readiness

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
            let next = Gate()
            queue.addOperation(operation)
            queue.addOperation { next.open() }
            queue.isSuspended = false
            guard next.wait() else { fatalError("HANG: the serial queue never ran the operation after the finished one (worker spinning)") }
            guard operation.isFinished else { fatalError("the operation is not finished") }
            queue.waitUntilAllOperationsAreFinished()
        }.expectQuietChild()
    }

    // MARK: A user deinit and the queue's lock

    /// An operation the queue drops runs its `deinit` outside the queue's lock: a `deinit`
    /// that reads `queue.operationCount` must not trap ("Recursive call to lock Mutex").
    /// Forced: the queue is suspended, so the ready operation waits in the ready list; it
    /// is then finished by hand (the tutorial's `finish()`), which takes it out of the
    /// queue's members, and the test drops its reference: the ready list holds the last
    /// one. Resuming makes a worker pop it, refuse it (finished), and drop it, and its
    /// `deinit` reads `queue.operationCount`.
    @Test("an operation released by the queue runs its deinit outside the queue's lock", .oneExitTestAtATime)
    func deinitOutsideQueueLock() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            queue.isSuspended = true
            let died = Gate()
            do {
                let operation = DeinitProbeOperation(died: died) { _ = queue.operationCount }
                queue.addOperation(operation)
                operation.finish()
            }
            let next = Gate()
            queue.addOperation { next.open() }
            queue.isSuspended = false
            guard next.wait(), died.wait() else { fatalError("the queue did not go on, or the operation was not released") }
            queue.waitUntilAllOperationsAreFinished()
        }.expectQuietChild()
    }

    // MARK: A user deinit and an operation's lock

    /// A barrier drops the operations it waited for outside its own lock: a `deinit` of
    /// such an operation that reads the barrier's properties must not trap. Forced: on a
    /// suspended serial queue, `member` is added, then a barrier; the barrier is found as
    /// the last of `queue.operations` and handed to the member, and the test drops its
    /// reference to the member. After resuming, the member finishes and leaves the queue,
    /// so the barrier's hidden dependency is its last reference; the barrier completes and
    /// drops it. The member's `deinit` reads the barrier's `name` and `dependencies`.
    @Test("a barrier releases the operations it waited for outside its own lock", .oneExitTestAtATime)
    func barrierReleasesMembersOutsideItsLock() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            queue.isSuspended = true
            let died = Gate()
            let barrierBox = WeakOperationBox()
            do {
                let member = DeinitProbeOperation(died: died) {
                    guard let barrier = barrierBox.operation else { return }
                    _ = barrier.name
                    _ = barrier.dependencies
                }
                queue.addOperation(member)
            }
            queue.addBarrierBlock {}
            guard let barrier = queue.operations.last else { fatalError("no barrier in the queue") }
            barrierBox.operation = barrier
            queue.isSuspended = false
            guard died.wait() else { fatalError("the member was never released") }
            queue.waitUntilAllOperationsAreFinished()
            _ = barrier
        }.expectQuietChild()
    }

    // MARK: addDependency racing removeDependency

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
        let ran = Gate()
        let target = BlockOperation { ran.open() }
        target.name = "target"
        let dependency = BlockOperation {}
        dependency.name = "dependency"
        let armed = Shared(true)
        let observer = CallbackObserver { _, change in
            guard change.isPrior, takeOnce(armed) else { return }
            if removeOnAnotherThread {
                let removed = Gate()
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

    // MARK: An asynchronous operation started by hand

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

    // MARK: A cancelled BlockOperation releases its blocks

    /// Started by hand: a cancelled `BlockOperation` releases its blocks when it finishes,
    /// not only in `main()`, which it never runs; otherwise `executionBlocks` stays full
    /// and the operation leaks. Forced: no race; a block captures its own operation (a
    /// retain cycle that only releasing the blocks breaks), the operation is cancelled and
    /// started by hand.
    @Test("a cancelled BlockOperation releases its blocks when it finishes (start by hand)")
    func cancelledBlockOperationReleasesBlocksByHand() {
        weak var weakOperation: BlockOperation?
        do {
            let operation = BlockOperation()
            operation.addExecutionBlock { _ = operation }
            weakOperation = operation
            operation.cancel()
            operation.start()
            #expect(operation.isFinished)
            #expect(operation.executionBlocks.isEmpty, "\(operation.executionBlocks.count) blocks kept after finishing")
        }
        #expect(weakOperation == nil, "the cancelled operation leaked through its own block")
    }

    /// Through a queue: as the test above, but the cancelled operation is added to a queue
    /// and finishes there. The release of the last reference by the worker is waited for with
    /// a bounded poll (it happens just after `waitUntilAllOperationsAreFinished` returns).
    @Test("a cancelled BlockOperation releases its blocks when it finishes (through a queue)")
    func cancelledBlockOperationReleasesBlocksInQueue() {
        weak var weakOperation: BlockOperation?
        let queue = OperationQueue()
        do {
            let operation = BlockOperation()
            operation.addExecutionBlock { _ = operation }
            weakOperation = operation
            operation.cancel()
            queue.addOperation(operation)
            queue.waitUntilAllOperationsAreFinished()
            #expect(operation.isFinished)
            #expect(operation.executionBlocks.isEmpty, "\(operation.executionBlocks.count) blocks kept after finishing")
        }
        #expect(eventually { weakOperation == nil }, "the cancelled operation leaked through its own block")
    }

    // MARK: No false dependency cycle

    /// With `trapsOnDependencyCycles`: an edge out of a finished operation closes no cycle,
    /// so the graph must not keep `d → x` after `x` finished and report one (and trap).
    /// Forced: no race; `x` depends on `d`, is cancelled and started by hand (so it
    /// finished without waiting for `d`); then `d` is made to depend on `x`.
    @Test("a finished operation closes no dependency cycle (trapsOnDependencyCycles)", .oneExitTestAtATime)
    func noFalseCycleWithTrap() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            Operation.trapsOnDependencyCycles = true
            let x = ClosureOperation(name: "x"), d = ClosureOperation(name: "d")
            x.addDependency(d)
            x.cancel()
            x.start()
            guard x.isFinished else { fatalError("setup: x did not finish") }
            d.addDependency(x)
            guard d.isReady else { fatalError("d waits for the finished x") }
            // Each holds the other as a dependency (a retain cycle, as on Darwin): break it
            // so that the leak checker of the sanitizer runs sees nothing.
            d.removeDependency(x)
        }.map { !$0.standardErrorContent.containsText("cycle") }.check()
    }

    /// Default setting: as the test above without the trap; no "cycle" warning may be
    /// printed.
    @Test("a finished operation closes no dependency cycle (no warning)", .oneExitTestAtATime)
    func noFalseCycleWarning() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let x = ClosureOperation(name: "x"), d = ClosureOperation(name: "d")
            x.addDependency(d)
            x.cancel()
            x.start()
            d.addDependency(x)
            guard d.isReady else { fatalError("d waits for the finished x") }
            d.removeDependency(x)  // breaks the retain cycle (see the test above)
        }.map { !$0.standardErrorContent.containsText("cycle") }.check()
    }
}

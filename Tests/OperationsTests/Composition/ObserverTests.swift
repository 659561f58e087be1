@testable import Operations
import OperationsComposition
import OperationsTestSupport
import Testing

/// Records every event as a string.
private final class Recorder: OperationObserver {
    let events = Shared<[String]>([])
    let threads = Shared<[String: Thread]>([:])

    func operationDidStart(_ operation: Operation) {
        events.append("start")
        threads.update { $0["start"] = Thread.current }
    }
    func operation(_ operation: Operation, didCancelWith reason: (any Error)?) {
        events.append("cancel \((reason as? TestError)?.code ?? -1)")
    }
    func operation(_ operation: Operation, didProduce produced: Operation) {
        events.append("produce \(produced.name ?? "?")")
    }
    func operation(_ operation: Operation, didFinishWith outcome: Operation.Outcome) {
        switch outcome {
        case .succeeded: events.append("finish")
        case .cancelled: events.append("finish cancelled")
        case .failed(let error): events.append("finish failed \((error as? TestError)?.code ?? -1)")
        }
        finished.open()
    }

    /// Opens when the finish has been told (possibly by another thread that was delivering
    /// this operation's earlier events: see ``OperationObserver``).
    let finished = BlockingSignal()
}

@Suite("Lifecycle observers", .timeLimit(.minutes(1)))
struct ObserverTests {
    @Test("started on the starting thread before main, finished after the completion block")
    func startAndFinish() {
        let recorder = Recorder()
        let mainThread = Shared<Thread?>(nil)
        let operation = BlockOperation { mainThread.update { $0 = Thread.current } }
        operation.completionBlock = { recorder.events.append("completion") }
        operation.addObserver(recorder)
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(recorder.events() == ["start", "completion", "finish"])
        #expect(recorder.threads()["start"] === mainThread())
    }

    @Test("cancelled before starting: cancel with the reason, then finish; no start")
    func cancelledBeforeStart() {
        let recorder = Recorder()
        let operation = BlockOperation {}
        operation.addObserver(recorder)
        operation.cancel(with: TestError(code: 3))
        operation.cancel(with: TestError(code: 4))
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(recorder.events() == ["cancel 3", "finish cancelled"])
    }

    @Test("cancelled while running: start, cancel, finish")
    func cancelledWhileRunning() {
        let recorder = Recorder()
        let started = BlockingSignal()
        let operation = BlockOperation {}
        operation.addExecutionBlock { [unowned operation] in
            started.open()
            while !operation.isCancelled { usleep(100) }
        }
        operation.addObserver(recorder)
        OperationQueue().addOperation(operation)
        #expect(started.wait())
        operation.cancel(with: TestError(code: 1))
        operation.waitUntilFinished()
        #expect(recorder.events() == ["start", "cancel 1", "finish cancelled"])
    }

    @Test("a failure is delivered with its error")
    func failure() {
        let recorder = Recorder()
        let operation = ValueBlockOperation<Int> { throw TestError(code: 6) }
        operation.addObserver(recorder)
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(recorder.events() == ["start", "finish failed 6"])
    }

    @Test("an operation produces another on its queue")
    func produce() {
        let recorder = Recorder()
        let produced = BlockOperation {}
        produced.name = "more"
        let operation = BlockOperation {}
        operation.addExecutionBlock { [unowned operation] in operation.produceOperation(produced) }
        operation.addObserver(recorder)
        OperationQueue().addOperation(operation)
        produced.waitUntilFinished()
        operation.waitUntilFinished()
        #expect(recorder.events() == ["start", "produce more", "finish"])
    }

    @Test("a child that produces inside a group: the group waits for the produced operation")
    func produceInGroup() {
        let groupRecorder = Recorder()
        let release = BlockingSignal()
        let produced = BlockOperation { release.wait() }
        produced.name = "late"
        let child = BlockOperation {}
        child.addExecutionBlock { [unowned child] in child.produceOperation(produced) }
        let group = GroupOperation(operations: [child])
        group.addObserver(groupRecorder)
        OperationQueue().addOperation(group)
        #expect(eventually { child.isFinished })
        #expect(!group.isFinished)
        release.open()
        group.waitUntilFinished()
        #expect(produced.isFinished)
        #expect(groupRecorder.events() == ["start", "produce late", "finish"])
    }

    @Test("each event once and finish last, with cancellations racing the finish")
    func racing() {
        let queue = OperationQueue()
        let all = (0..<300).map { _ in
            let recorder = Recorder()
            let operation = BlockOperation { for _ in 0..<50 { _ = UUID() } }
            operation.addObserver(recorder)
            return (operation, recorder)
        }
        queue.addOperations(all.map(\.0), waitUntilFinished: false)
        DispatchQueue.concurrentPerform(iterations: all.count) { index in all[index].0.cancel(with: TestError(code: index)) }
        queue.waitUntilAllOperationsAreFinished()
        for (index, (_, recorder)) in all.enumerated() {
            // A cancel being told on another thread may tell the finish after the queue's
            // wait returned (the documented delivery): wait for it, then check the order.
            #expect(recorder.finished.wait())
            let events = recorder.events()
            #expect(events.last?.hasPrefix("finish") == true)
            #expect(events.filter { $0.hasPrefix("finish") }.count == 1)
            #expect(events.filter { $0 == "start" }.count <= 1)
            let cancels = events.filter { $0.hasPrefix("cancel") }
            #expect(cancels.count <= 1)
            if let cancel = cancels.first { #expect(cancel == "cancel \(index)") }
            if events.last == "finish cancelled" { #expect(cancels.count == 1) }
        }
    }

    @Test("a closure-based observer; observers are released once the operation finished")
    func blockObserverReleased() {
        weak var weakBox: AnyObject?
        let finished = Shared(0)
        let operation = BlockOperation {}
        do {
            let box = Shared(0)
            weakBox = box
            operation.addObserver(BlockObserver(didFinish: { _, _ in
                _ = box
                finished.increment()
            }))
        }
        #expect(weakBox != nil)
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(eventually { finished() == 1 })
        #expect(eventually { weakBox == nil })
    }
}

/// Start hooks and lifecycle events follow the operation's state, not what happened to be
/// attached when it started.
@Suite("Start hooks and observer events")
struct StartEventOrderTests {
    /// Records events by name.
    private func recorder(_ log: Shared<[String]>) -> BlockObserver {
        BlockObserver(
            didStart: { _ in log.update { $0.append("started") } },
            didCancel: { _, _ in log.update { $0.append("cancelled") } },
            didFinish: { _, _ in log.update { $0.append("finished") } })
    }

    @Test("a timeout given to a running operation that had nothing attached when it started fires")
    func timeoutAfterStart() async {
        let cancelled = BlockingSignal()
        let operation = BlockOperation {}
        // Key-value observation attaches nothing the start hooks would see.
        let observation = operation.observe(\.isCancelled, options: [.new]) { _, change in
            if change.newValue == true { cancelled.open() }
        }
        operation.addExecutionBlock { [unowned operation] in
            // Already expired: fires as soon as it is armed.
            operation.timeout(after: .zero)
            _ = cancelled.wait(timeout: 600)
        }
        OperationQueue().addOperation(operation)
        let outcome = await operation.outcome(within: .seconds(60))
        #expect(outcome?.error is TimeoutError, "\(String(describing: outcome))")
        observation.invalidate()
    }

    @Test("a cancel that lands right after the start is told after started")
    func cancelRightAfterStart() {
        let log = Shared<[String]>([])
        let operation = BlockOperation {}
        // Runs when the work starts, before the observer's hook would have: it cancels.
        operation._onStart { [unowned operation] in operation.cancel() }
        operation.addObserver(recorder(log))
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(log() == ["started", "cancelled", "finished"])
    }

    @Test("an observer added after the start is not told started, whatever else is attached")
    func observerAfterStart() {
        let log = Shared<[String]>([])
        let operation = BlockOperation {}
        operation.timeout(after: .seconds(600))
        operation.addExecutionBlock { [unowned operation] in operation.addObserver(self.recorder(log)) }
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(log() == ["finished"])
    }

    @Test("a wait begun before an observer was added returns after that observer was told the finish")
    func waitBeforeObserverReturnsAfterItsFinish() {
        // Forced: the wait (a finish hook, as `await` uses) is registered before the
        // operation has any observer; the first observer comes from inside the work.
        let log = Shared<[String]>([])
        let operation = BlockOperation {}
        operation._onFinish(for: .caller) { _ in log.update { $0.append("wait returned") } }
        operation.addExecutionBlock { [unowned operation] in operation.addObserver(self.recorder(log)) }
        OperationQueue().addOperation(operation)
        operation.waitUntilFinished()
        #expect(log() == ["finished", "wait returned"])
    }

    @Test("a wait that begins while an observer is told the finish returns after it")
    func waitWhileObserverTold() {
        // Forced: the observer's didFinish holds its thread until the other wait began (or,
        // wrongly, returned).
        let entered = BlockingSignal(), release = BlockingSignal(), waitReturned = BlockingSignal()
        let observerReturned = Shared(false)
        let operation = BlockOperation {}
        operation.addObserver(BlockObserver(didFinish: { _, _ in
            entered.open()
            release.wait()
            observerReturned.update { $0 = true }
        }))
        onNewThread { operation.start() }
        #expect(entered.wait())
        let sawObserverReturned = Shared<Bool?>(nil)
        onNewThread {
            operation.waitUntilFinished()
            sawObserverReturned.update { $0 = observerReturned() }
            waitReturned.open()
        }
        // Released only once the waiting thread is registered among the waiters.
        #expect(eventually { operation._finishWaiterCount > 0 || sawObserverReturned() != nil })
        release.open()
        #expect(waitReturned.wait())
        #expect(sawObserverReturned() == true, "waitUntilFinished returned while didFinish was still running")
    }

    /// Forced: a hook that runs first among the operation's waiters starts a wait on another
    /// thread and lets the waking go on only once that wait is registered (or has returned).
    @Test("a wait that begins while an operation's waiters are woken returns after them, an observer's finish included")
    func lateWaitReturnsAfterHooks() {
        let operation = BlockOperation {}
        let log = Shared<[String]>([])
        let returned = Shared(false)
        let sawFinish = Shared<Bool?>(nil)
        let done = BlockingSignal()
        operation._onFinish(for: .caller) { [unowned operation] _ in
            onNewThread {
                operation.waitUntilFinished()
                sawFinish.update { $0 = log().contains("finished") }
                returned.update { $0 = true }
                done.open()
            }
            _ = eventually { returned() || operation._update { !$0.finishWaiters.isEmpty } }
        }
        operation.addObserver(BlockObserver(didFinish: { _, _ in log.append("finished") }))
        OperationQueue().addOperation(operation)
        #expect(done.wait())
        #expect(sawFinish() == true, "the wait returned before the observer was told the finish")
    }
}

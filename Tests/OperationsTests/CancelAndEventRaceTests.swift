import Operations
import OperationsComposition
import Testing
import TestTraits

/// A `BlockOperation` that, the first time `isReady` is read after `armed` is
/// set, adds a block (user code called by `start()` before it starts).
final class AddsBlockWhenReadOperation: BlockOperation, @unchecked Sendable {
    let armed = Shared(false)
    let late: @Sendable () -> Void

    init(late: @escaping @Sendable () -> Void) {
        self.late = late
        super.init()
    }

    override var isReady: Bool {
        if takeOnce(armed) { addExecutionBlock(late) }
        return super.isReady
    }
}

@Suite("Cancel, events, KVO values and blocks when threads race")
struct CancelAndEventRaceTests {
    typealias Recorder = EventTests.Recorder

    // MARK: cancel() decides and sets the flag once

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
        let (recorder, subscription) = Recorder.recording(queue)
        let operation = BlockOperation {}
        queue.addOperation(operation)
        let armed = Shared(true)
        let secondReturned = Gate()
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

    // MARK: .enqueued before .started and .finished

    /// An operation that runs and finishes before `addOperation` returns still has its
    /// `.enqueued` event first, never [started, finished, enqueued]. Forced: a serial queue
    /// runs `first`, which waits on a gate, so its worker is busy. An observer of the
    /// queue's `operationCount` fires on the adding thread once `second` is in the queue
    /// (after the queue's lock, before `addOperation` returns): it releases `first` and
    /// waits for `second` to run on the same worker (bounded: the queue may hold `second`
    /// back until its `.enqueued` event is out).
    @Test("per operation, .enqueued comes before .started and .finished")
    func enqueuedComesFirst() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let (recorder, subscription) = Recorder.recording(queue)
        let firstStarted = Gate(), releaseFirst = Gate()
        queue.addOperation {
            firstStarted.open()
            releaseFirst.wait()
        }
        #expect(firstStarted.wait())
        let secondRan = Gate()
        let second = BlockOperation { secondRan.open() }
        let armed = Shared(false)
        let observer = CallbackObserver { _, change in
            guard !change.isPrior, takeOnce(armed) else { return }
            releaseFirst.open()
            _ = secondRan.wait(timeout: 5)
        }
        queue.addObserver(observer, forKeyPath: "operationCount", options: [.new], context: nil)
        armed.update { $0 = true }
        queue.addOperation(second)
        queue.waitUntilAllOperationsAreFinished()
        queue.removeObserver(observer, forKeyPath: "operationCount")
        #expect(!armed(), "the hook did not fire")
        #expect(recorder.kinds(of: second) == [.enqueued, .started, .finished(wasCancelled: false)])
        subscription.cancel()
    }

    // MARK: KVO old values

    /// `start()`: the phase changes after `willChange("isExecuting")`, so the first change
    /// reads old = false, new = true (not old = true). Forced: no race; an observer with
    /// `.old`/`.new` of `isExecuting`.
    @Test("start() reports isExecuting false → true, then true → false")
    func startOldValues() {
        let operation = BlockOperation {}
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isExecuting", options: [.old, .new, .prior], context: nil)
        operation.start()
        let events = observer.events().filter { $0.keyPath == "isExecuting" }
        #expect(events.filter { !$0.prior }.map { "\($0.old ?? "nil") → \($0.new ?? "nil")" } == ["false → true", "true → false"])
        #expect(events.filter(\.prior).map { $0.old ?? "nil" } == ["false", "true"], "prior notifications carry the old value")
        operation.removeObserver(observer, forKeyPath: "isExecuting")
    }

    /// `addDependency`: the count rises after `willChange("isReady")`, so adding an
    /// unfinished dependency reads old = true, new = false (not old = false). Forced: no
    /// race; an observer with `.old`/`.new` of `isReady`.
    @Test("addDependency reports isReady true → false; the dependency's finish false → true")
    func addDependencyOldValues() {
        let operation = BlockOperation {}
        let dependency = BlockOperation {}
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isReady", options: [.old, .new], context: nil)
        operation.addDependency(dependency)
        dependency.start()
        let changes = observer.events().filter { $0.keyPath == "isReady" && !$0.prior }.map { "\($0.old ?? "nil") → \($0.new ?? "nil")" }
        #expect(changes == ["true → false", "false → true"])
        operation.removeObserver(observer, forKeyPath: "isReady")
    }

    // MARK: addExecutionBlock racing the start

    /// Before the start decides. A pause between `addExecutionBlock`'s "started?" check and
    /// its append, while `start()` takes the blocks, has no user-code hook: nothing in
    /// between calls user code, and the check and the append happen under the lock that
    /// `start()` takes to begin, so a block either runs or is refused, never dropped.
    ///
    /// What public hooks can force: `start()` by hand reads the (overridden) `isReady`
    /// before it starts; a block added there must run.
    @Test("a block added while start() reads isReady runs")
    func blockAddedFromIsReadyRuns() {
        let ran = Shared<[String]>([])
        let operation = AddsBlockWhenReadOperation { ran.append("late") }
        operation.addExecutionBlock { ran.append("first") }
        operation.armed.update { $0 = true }
        operation.start()
        #expect(!operation.armed(), "the hook did not fire")
        #expect(ran().sorted() == ["first", "late"])
    }

    /// At the start. Forced: the `.prior` notification of `isExecuting` during
    /// `start()` adds a block. Either it is accepted and runs, or the call stops the process
    /// with the misuse message; never silently dropped. The child exits with code 3 when
    /// the block was accepted and ran, 4 when it was dropped.
    @Test("a block added in isExecuting's prior notification at start runs or traps", .oneExitTestAtATime)
    func blockAddedInPriorNotificationRunsOrTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            startAddingABlockInIsExecutingNotificationAndExit(prior: true)
        }
        checkRanOrTrapped(result)
    }

    /// Just started. Forced: as the test above, in the plain notification of `isExecuting`
    /// (the operation is executing; its blocks may not have been taken yet).
    @Test("a block added in isExecuting's notification at start runs or traps", .oneExitTestAtATime)
    func blockAddedInNotificationRunsOrTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            startAddingABlockInIsExecutingNotificationAndExit(prior: false)
        }
        checkRanOrTrapped(result)
    }

    private func checkRanOrTrapped(_ result: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let result else { return }
        let trappedWithMessage = result.standardErrorContent.containsText("\"starting\"", "already started")
        #expect(
            result.exitStatus == .exitCode(3) || trappedWithMessage,
            "\(result.exitStatus): \(String(decoding: result.standardErrorContent, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }
}

/// For the exit tests of a block added at start: an operation named "starting" whose
/// observer of `isExecuting` adds a block in the first notification of the kind asked for
/// (the `.prior` one, or the plain one); started here, then the process exits with code 3
/// when the block was accepted and ran, 4 when it was dropped.
private func startAddingABlockInIsExecutingNotificationAndExit(prior: Bool) -> Never {
    let ran = Shared<[String]>([])
    let operation = BlockOperation { ran.append("first") }
    operation.name = "starting"
    let armed = Shared(true)
    let observer = CallbackObserver { _, change in
        guard change.isPrior == prior, takeOnce(armed) else { return }
        operation.addExecutionBlock { ran.append("late") }
    }
    operation.addObserver(observer, forKeyPath: "isExecuting", options: prior ? [.prior] : [], context: nil)
    operation.start()
    exit(ran().contains("late") ? 3 : 4)
}

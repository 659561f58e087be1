import Operations
import OperationsComposition
import Testing
import TestTraits

/// A `BlockOperation` that, the first time `isReady` is read after `armed` is
/// set, adds a block (user code called by `start()` before it starts).
private final class AddsBlockWhenReadOperation: BlockOperation, @unchecked Sendable {
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

@Suite("BlockOperation: concurrent blocks, completion block, release of blocks")
struct BlockOperationTests {
    @Test("execution blocks run concurrently and start() returns after all of them")
    func concurrentBlocks() {
        let rendezvous = Rendezvous(count: 6)
        let arrivals = Shared(0)
        let operation = BlockOperation {
            #expect(rendezvous.arriveAndWait())
            arrivals.increment()
        }
        for _ in 1..<6 {
            operation.addExecutionBlock {
                #expect(rendezvous.arriveAndWait())
                arrivals.increment()
            }
        }
        #expect(operation.executionBlocks.count == 6)
        operation.start()
        #expect(arrivals() == 6)
        #expect(operation.isFinished)
    }

    @Test("the completion block runs after the last execution block")
    func completionAfterBlocks() {
        let done = Shared(0)
        let completionSaw = Shared(-1)
        let completed = BlockingSignal()
        let operation = BlockOperation()
        for _ in 0..<4 {
            operation.addExecutionBlock { usleep(2_000); done.increment() }
        }
        operation.completionBlock = {
            completionSaw.update { $0 = done() }
            completed.open()
        }
        OperationQueue().addOperation(operation)
        #expect(completed.wait())
        #expect(completionSaw() == 4)
    }

    @Test("init() with no block finishes; init(block:) holds one block")
    func initializers() {
        let empty = BlockOperation()
        #expect(empty.executionBlocks.isEmpty)
        empty.start()
        #expect(empty.isFinished)
        let one = BlockOperation {}
        #expect(one.executionBlocks.count == 1)
    }

    @Test("blocks are released once they have run")
    func blocksReleased() {
        final class Token: Sendable {}
        weak var weakToken: Token?
        let operation: BlockOperation
        do {
            let token = Token()
            weakToken = token
            operation = BlockOperation { _ = token }
        }
        #expect(weakToken != nil)
        operation.start()
        #expect(weakToken == nil)
    }

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

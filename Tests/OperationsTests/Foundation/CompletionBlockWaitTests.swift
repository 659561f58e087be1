import Operations
import OperationsComposition
import Testing

@Suite("Waits made from inside a completion block")
struct CompletionBlockWaitTests {
    @Test("waitUntilFinished() of its own operation, from its completion block, returns")
    func waitForItselfFromItsCompletionBlock() {
        let queue = OperationQueue()
        let returned = BlockingSignal()
        let operation = BlockOperation {}
        operation.completionBlock = { [unowned operation] in
            operation.waitUntilFinished()
            returned.open()
        }
        queue.addOperation(operation)
        #expect(returned.wait())
        queue.waitUntilAllOperationsAreFinished()
    }

    /// Finishes in its own `start()` (the base one), then waits for itself there: the
    /// completion block runs only after this `start()` returns.
    private final class WaitsForItselfAfterFinishing: BlockOperation, @unchecked Sendable {
        // `@unchecked Sendable`: no state of its own.
        override func start() {
            super.start()
            waitUntilFinished()
        }
    }

    @Test("waitUntilFinished() of its own operation, inside the start() that finished it, returns")
    func waitForItselfInsideStart() {
        let queue = OperationQueue()
        let blockRan = BlockingSignal()
        let operation = WaitsForItselfAfterFinishing {}
        operation.completionBlock = { blockRan.open() }
        queue.addOperation(operation)
        #expect(blockRan.wait(), "the wait inside start() never returned, so the completion block never ran")
    }

    @Test("waitUntilFinished() from the completion block of an operation started by hand returns")
    func waitForItselfStartedByHand() {
        let returned = Shared(false)
        let operation = BlockOperation {}
        operation.completionBlock = { [unowned operation] in
            operation.waitUntilFinished()
            returned.update { $0 = true }
        }
        operation.start()
        // The completion block runs after start() returned; a wait returns after it.
        operation.waitUntilFinished()
        #expect(returned())
    }

    @Test("waitUntilAllOperationsAreFinished() of its queue, from a completion block, waits for the others only")
    func waitForTheQueueFromACompletionBlock() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let returned = BlockingSignal()
        let otherFinished = Shared(false)
        let release = BlockingSignal()
        let other = BlockOperation {
            release.wait()
            otherFinished.update { $0 = true }
        }
        let seenOtherFinished = Shared<Bool?>(nil)
        let operation = BlockOperation {}
        operation.completionBlock = {
            // The other operation is still held: the wait must not return before it ends.
            release.open()
            queue.waitUntilAllOperationsAreFinished()
            seenOtherFinished.update { $0 = otherFinished() }
            returned.open()
        }
        queue.addOperations([other, operation], waitUntilFinished: false)
        queue.isSuspended = false
        #expect(returned.wait())
        #expect(seenOtherFinished() == true)
        queue.waitUntilAllOperationsAreFinished()
        #expect(queue.operationCount == 0)
    }

    @Test("Waits from other threads still return only after the completion block has run")
    func otherWaitersWaitForTheCompletionBlock() {
        let queue = OperationQueue()
        let inCompletion = BlockingSignal()
        let release = BlockingSignal()
        let completionDone = Shared(false)
        let operation = BlockOperation {}
        operation.completionBlock = {
            inCompletion.open()
            release.wait()
            completionDone.update { $0 = true }
        }
        queue.addOperation(operation)
        #expect(inCompletion.wait())
        let waited = BlockingSignal()
        let sawDone = Shared<Bool?>(nil)
        Thread.detachNewThread {
            operation.waitUntilFinished()
            sawDone.update { $0 = completionDone() }
            waited.open()
        }
        release.open()
        #expect(waited.wait())
        #expect(sawDone() == true)
    }

    @Test("waitUntilAllOperationsAreFinished() from an isFinished observer of one of the queue's operations waits for the others, not for it")
    func queueWaitFromFinishObserver() {
        let queue = OperationQueue()
        let release = BlockingSignal()
        let other = BlockOperation { release.wait() }
        let operation = BlockOperation {}
        let returned = BlockingSignal()
        let sawOtherFinished = Shared<Bool?>(nil)
        let token = operation.observe(\.isFinished, options: [.new]) { _, change in
            guard change.newValue == true else { return }
            onNewThread { release.open() }
            queue.waitUntilAllOperationsAreFinished()
            sawOtherFinished.update { $0 = other.isFinished }
            returned.open()
        }
        queue.addOperations([other, operation], waitUntilFinished: false)
        #expect(returned.wait(), "the observer's wait waited for its own operation")
        #expect(sawOtherFinished() == true)
        token.invalidate()
    }
}

import Operations
import OperationsComposition
import Testing

/// Behaviours that Foundation's own OperationQueue tests rely on.
@Suite("Behaviours Foundation's own tests rely on")
struct FoundationBehaviourTests {
    /// An asynchronous operation whose state properties are overridden read-write, with
    /// the setters announcing changes: it must compile and run.
    final class SettableStateOperation: Operation, @unchecked Sendable {
        private let lock = NSLock()
        private var executing = false, finished = false

        override var isExecuting: Bool {
            get { lock.withLock { executing } }
            set { announcing("isExecuting") { executing = newValue } }
        }

        override var isFinished: Bool {
            get { lock.withLock { finished } }
            set { announcing("isFinished") { finished = newValue } }
        }

        /// Makes `change` under the lock, announced under `key`.
        private func announcing(_ key: String, _ change: () -> Void) {
            willChangeValue(forKey: key)
            lock.withLock(change)
            didChangeValue(forKey: key)
        }

        override var isAsynchronous: Bool { true }

        override func start() {
            if isCancelled { isFinished = true; return }
            isExecuting = true
            onNewThread {
                self.isExecuting = false
                self.isFinished = true
            }
        }
    }

    @Test("read-write overrides of isExecuting/isFinished, started by hand and by a queue")
    func settableState() {
        let manual = SettableStateOperation()
        manual.start()
        #expect(eventually { manual.isFinished })
        #expect(!manual.isExecuting)
        let queued = SettableStateOperation()
        runOnANewQueue(queued)
        #expect(queued.isFinished)
    }

    @Test("OperationQueue.current.underlyingQueue is the underlying queue, after a suspended start")
    func underlyingQueueCurrent() {
        let dispatchQueue = DispatchQueue(label: "underlying")
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = dispatchQueue
        queue.isSuspended = true
        let sawIt = Shared(false)
        queue.addOperation { sawIt.update { $0 = OperationQueue.current?.underlyingQueue === dispatchQueue } }
        dispatchQueue.async { queue.isSuspended = false }
        queue.waitUntilAllOperationsAreFinished()
        #expect(sawIt())
    }

    @Test("cancelling all operations from inside one of them")
    func cancelAllFromInside() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let ran = Shared<[Int]>([])
        queue.addOperation {
            ran.update { $0.append(0) }
            #expect(OperationQueue.current === queue)
            queue.cancelAllOperations()
        }
        queue.addOperation { ran.update { $0.append(1) } }
        queue.waitUntilAllOperationsAreFinished()
        #expect(ran().first == 0)
    }

    @Test("with a limit of 2, the first operation can wait for the second")
    func firstWaitsForSecond() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        for _ in 0..<3 {
            let second = BlockingSignal()
            let firstSawSecond = Shared(false)
            queue.addOperation { firstSawSecond.update { $0 = second.wait() } }
            queue.addOperation { second.open() }
            queue.waitUntilAllOperationsAreFinished()
            #expect(firstSawSecond())
        }
    }

    @Test("a queue nobody holds is released once its operations finished")
    func queueReleased() {
        weak var weakQueue: OperationQueue?
        let done = BlockingSignal()
        do {
            let queue = OperationQueue()
            weakQueue = queue
            let first = BlockOperation {}
            let second = BlockOperation { done.open() }
            first.addDependency(second)
            queue.addOperations([first, second], waitUntilFinished: false)
        }
        #expect(done.wait())
        #expect(eventually { weakQueue == nil })
    }

    @Test("operations cancelled before their queue runs them finish without running")
    func cancelWhileSuspended() {
        let queue = OperationQueue()
        queue.isSuspended = true
        let first = BlockOperation { Issue.record("ran although cancelled") }
        let second = BlockOperation { Issue.record("ran although cancelled") }
        queue.addOperations([first, second], waitUntilFinished: false)
        first.cancel()
        second.cancel()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        for operation in [first, second] {
            #expect(operation.isCancelled && operation.isFinished && !operation.isExecuting)
        }
    }
}

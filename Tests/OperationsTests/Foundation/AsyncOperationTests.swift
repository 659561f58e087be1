import Operations
import OperationsComposition
import Testing

@Suite("The classic asynchronous subclass")
struct AsyncOperationTests {
    @Test("the queue learns it finished from didChangeValue(forKey: \"isFinished\") on another thread")
    func finishesFromAnotherThread() {
        let release = BlockingSignal()
        let operation = DeferredOperation { op in
            onNewThread {
                release.wait()
                op.finish()
            }
        }
        let queue = OperationQueue()
        queue.addOperation(operation)
        #expect(operation.started.wait())
        #expect(operation.isExecuting)
        #expect(queue.operationCount == 1)
        release.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished)
        #expect(queue.operationCount == 0)
    }

    @Test("finishing before start() returns works")
    func finishesInsideStart() {
        let operation = DeferredOperation { op in op.finish() }
        let completed = BlockingSignal()
        operation.completionBlock = { completed.open() }
        let queue = OperationQueue()
        queue.addOperation(operation)
        queue.waitUntilAllOperationsAreFinished()
        #expect(completed.wait())
        #expect(operation.isFinished)
    }

    @Test("an asynchronous operation keeps its slot until it finishes")
    func occupiesSlot() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let release = BlockingSignal()
        let first = DeferredOperation { op in
            onNewThread { release.wait(); op.finish() }
        }
        let secondRan = Shared(false)
        let second = BlockOperation { secondRan.update { $0 = true } }
        queue.addOperations([first, second], waitUntilFinished: false)
        #expect(first.started.wait())
        #expect(!second.isFinished)
        #expect(!secondRan())
        release.open()
        second.waitUntilFinished()
        #expect(secondRan())
        #expect(first.isFinished)
    }

    @Test("Apple's documented style, with key-path and short key spellings")
    func documentedStyle() {
        let operation = DocumentedAsyncOperation { finish in
            onNewThread { finish() }
        }
        let dependent = BlockOperation {}
        dependent.addDependency(operation)
        let queue = OperationQueue()
        queue.addOperations([dependent, operation], waitUntilFinished: true)
        #expect(operation.isFinished && dependent.isFinished)
    }

    @Test("a cancelled asynchronous operation finishes through its own start()")
    func cancelledBeforeStart() {
        let operation = DocumentedAsyncOperation { _ in Issue.record("work ran although cancelled") }
        operation.cancel()
        runOnANewQueue(operation)
        #expect(operation.isFinished)
    }

    @Test("cancelling a running tutorial operation finishes it")
    func cancelWhileRunning() {
        let operation = DeferredOperation()
        let queue = OperationQueue()
        queue.addOperation(operation)
        #expect(operation.started.wait())
        operation.cancel()
        queue.waitUntilAllOperationsAreFinished()
        #expect(operation.isFinished && operation.isCancelled)
    }

    @Test("an asynchronous operation that overrides only main() finishes when it announces it")
    func asyncViaMain() {
        final class MainStyle: Operation, @unchecked Sendable {
            let done = Shared(false)
            override var isAsynchronous: Bool { true }
            override var isFinished: Bool { done() }
            override func main() {
                onNewThread { [self] in
                    willChangeValue(forKey: "isFinished")
                    done.update { $0 = true }
                    didChangeValue(forKey: "isFinished")
                }
            }
        }
        let operation = MainStyle()
        runOnANewQueue(operation)
        #expect(operation.isFinished)
    }

    @Test("dependents of an asynchronous operation wait for its announced finish")
    func dependentsWait() {
        let log = Shared<[String]>([])
        let release = BlockingSignal()
        let download = DeferredOperation { op in
            onNewThread { release.wait(); log.append("downloaded"); op.finish() }
        }
        let use = BlockOperation { log.append("used") }
        use.addDependency(download)
        let queue = OperationQueue()
        queue.addOperations([use, download], waitUntilFinished: false)
        #expect(download.started.wait())
        release.open()
        queue.waitUntilAllOperationsAreFinished()
        #expect(log() == ["downloaded", "used"])
    }
}

import OperationsXCTest

// This file imports only OperationsXCTest: XCTest, Foundation and Operations all resolve,
// and every class name that both Foundation and Operations declare means Operations'.

private final class FinishObserver: NSObject, @unchecked Sendable {
    // Written by the finishing thread, read after waitUntilAllOperationsAreFinished().
    private(set) var keys: [String] = []

    override func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {
        keys.append(keyPath ?? "")
    }
}

final class SingleImportTests: XCTestCase {
    func testClassNamesMeanTheLibrarysClasses() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        XCTAssertTrue(type(of: queue) == Operations.OperationQueue.self)
        XCTAssertTrue(type(of: operation) == Operations.BlockOperation.self)
        XCTAssertTrue(Operation.self == Operations.Operation.self)
    }

    func testObservingAndEventsWorkThroughTheSingleImport() {
        let queue = OperationQueue()
        let operation = BlockOperation {}
        let observer = FinishObserver()
        operation.addObserver(observer, forKeyPath: "isFinished", options: [.new], context: nil)
        let enqueued = NSLock()
        nonisolated(unsafe) var enqueuedCount = 0
        let subscription = queue.addEventHandler { event in
            if event.kind == .enqueued { enqueued.withLock { enqueuedCount += 1 } }
        }
        queue.addOperations([operation], waitUntilFinished: true)
        queue.waitUntilAllOperationsAreFinished()
        operation.removeObserver(observer, forKeyPath: "isFinished")
        subscription.cancel()
        XCTAssertEqual(observer.keys, ["isFinished"])
        XCTAssertEqual(enqueued.withLock { enqueuedCount }, 1)
    }
}

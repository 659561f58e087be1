// Sources/Operations/Operations.docc/TestingWithXCTest.md: the scoped imports.

import XCTest
import Operations
import class Operations.Operation
import class Operations.BlockOperation
import class Operations.OperationQueue
#if !canImport(ObjectiveC)
import class Operations.NSObject        // Linux: the NSObject with key-value observing
#endif

/// With the scoped imports, the names mean this library's classes.
func testingWithXCTestScopedImports() -> Operations.OperationQueue {
    let queue: OperationQueue = Operations.OperationQueue()
    queue.addOperation(BlockOperation {})
    return queue
}
